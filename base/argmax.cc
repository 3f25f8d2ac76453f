#include "base/argmax.h"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

namespace lnpu {
namespace {

// 128-bit vectors of the compiler's generic vector extension: SSE2 on
// x86-64 and NEON on Arm, the baseline of both (a scan of a few hundred
// kilobytes is bound by reading them, not by the width of the vectors).
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

constexpr float kLowest = -std::numeric_limits<float>::infinity();
constexpr float kLargest = std::numeric_limits<float>::max();

inline F4 Load(const float* p) {
  F4 x;
  std::memcpy(&x, p, sizeof(x));
  return x;
}

// x where finite, else -infinity (NaN compares false with everything).
inline F4 FiniteOrLowest(F4 x) {
  const F4 magnitude = x < 0 ? -x : x;
  return magnitude <= kLargest ? x : F4{} + kLowest;
}

inline F4 Max(F4 a, F4 b) { return a > b ? a : b; }

}  // namespace

float MaxFinite(absl::Span<const float> values) {
  const size_t n = values.size();
  const float* v = values.data();
  // Four independent running maxima of four lanes each.
  const F4 lowest = F4{} + kLowest;
  F4 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = Max(m0, FiniteOrLowest(Load(v + i)));
    m1 = Max(m1, FiniteOrLowest(Load(v + i + 4)));
    m2 = Max(m2, FiniteOrLowest(Load(v + i + 8)));
    m3 = Max(m3, FiniteOrLowest(Load(v + i + 12)));
  }
  const F4 m = Max(Max(m0, m1), Max(m2, m3));
  float best = kLowest;
  for (int lane = 0; lane < 4; ++lane) best = m[lane] > best ? m[lane] : best;
  for (; i < n; ++i) {
    const float x = std::fabs(v[i]) <= kLargest ? v[i] : kLowest;
    best = x > best ? x : best;
  }
  return best;
}

int32_t Argmax(absl::Span<const float> values) {
  const float best = MaxFinite(values);
  if (best == kLowest) return 0;
  // The first value equal to the finite maximum (a NaN or infinity never
  // equals it; -0 equals +0), sixteen values per test.
  const size_t n = values.size();
  const float* v = values.data();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const I4 equal = (Load(v + i) == best) | (Load(v + i + 4) == best) |
                     (Load(v + i + 8) == best) | (Load(v + i + 12) == best);
    if ((equal[0] | equal[1] | equal[2] | equal[3]) != 0) break;
  }
  while (v[i] != best) ++i;
  return static_cast<int32_t>(i);
}

}  // namespace lnpu
