// RMS_NORM, SWIGLU, GEGLU, SCALE and ADD (elementwise.h).
//
// Highway re-includes this file once per enabled SIMD target (see
// foreach_target.h); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target, the HWY_ONCE part once.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel_iface/softnpu/compute/elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cmath>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernel_iface/softnpu/compute/elementwise.h"
#include "kernel_iface/softnpu/compute/kernel_scheduling.h"
#include "kernel_iface/softnpu/compute/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lnpu::softnpu::compute {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f32 dot product of a and b over len elements.
HWY_INLINE float Dot(const float* a, const float* b, size_t len) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  auto s0 = hn::Zero(df), s1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * lanes <= len; i += 2 * lanes) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, a + i + lanes), hn::LoadU(df, b + i + lanes),
                    s1);
  }
  for (; i + lanes <= len; i += lanes) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
  }
  float sum = ReduceSum(df, hn::Add(s0, s1));
  for (; i < len; ++i) sum += a[i] * b[i];
  return sum;
}

void RmsNormRows(const float* src, const float* weight, float* dst,
                 size_t row_begin, size_t row_end, size_t dim, float eps) {
  for (size_t r = row_begin; r < row_end; ++r) {
    const float* x = src + r * dim;
    float* y = dst + r * dim;
    const float mean_square = Dot(x, x, dim) / static_cast<float>(dim);
    const float inv_rms = 1.0f / std::sqrt(mean_square + eps);
    ForEachVector(dim, [&](auto d, size_t i) {
      const auto v = hn::Mul(hn::LoadU(d, x + i), hn::Set(d, inv_rms));
      hn::StoreU(hn::Mul(v, hn::LoadU(d, weight + i)), d, y + i);
    });
  }
}

void SwigluRange(const float* gate, const float* up, float* dst, size_t begin,
                 size_t end) {
  ForEachVector(end - begin, [&](auto d, size_t j) {
    const size_t i = begin + j;
    const auto g = hn::LoadU(d, gate + i);
    // exp(-g) is clamped below FLT_MAX's exponent, where silu(g) is g / inf
    // = -0 to float precision anyway; Exp is only specified up to +104.
    const auto e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, 88.0f)));
    const auto silu = hn::Div(g, hn::Add(hn::Set(d, 1.0f), e));
    hn::StoreU(hn::Mul(silu, hn::LoadU(d, up + i)), d, dst + i);
  });
}

void GegluRange(const float* gate, const float* up, float* dst, size_t begin,
                size_t end) {
  ForEachVector(end - begin, [&](auto d, size_t j) {
    const size_t i = begin + j;
    const auto g = hn::LoadU(d, gate + i);
    // sqrt(2 / pi) * (g + 0.044715 * g^3)
    const auto inner =
        hn::Mul(hn::Set(d, 0.7978845608028654f),
                hn::MulAdd(hn::Mul(hn::Set(d, 0.044715f), hn::Mul(g, g)), g, g));
    const auto gelu = hn::Mul(hn::Mul(hn::Set(d, 0.5f), g),
                              hn::Add(hn::Set(d, 1.0f), BoundedTanh(d, inner)));
    hn::StoreU(hn::Mul(gelu, hn::LoadU(d, up + i)), d, dst + i);
  });
}

void ScaleRange(const float* src, float* dst, float scale, float softcap,
                size_t begin, size_t end) {
  if (softcap > 0.0f) {
    const float inverse = 1.0f / softcap;
    ForEachVector(end - begin, [&](auto d, size_t j) {
      const size_t i = begin + j;
      const auto y = hn::Mul(hn::LoadU(d, src + i), hn::Set(d, scale));
      hn::StoreU(Softcap(d, y, softcap, inverse), d, dst + i);
    });
    return;
  }
  ForEachVector(end - begin, [&](auto d, size_t j) {
    const size_t i = begin + j;
    hn::StoreU(hn::Mul(hn::LoadU(d, src + i), hn::Set(d, scale)), d, dst + i);
  });
}

void AddRange(const float* a, const float* b, float* dst, size_t begin,
              size_t end) {
  ForEachVector(end - begin, [&](auto d, size_t j) {
    const size_t i = begin + j;
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, dst + i);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::softnpu::compute
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lnpu::softnpu::compute {

HWY_EXPORT(RmsNormRows);
HWY_EXPORT(SwigluRange);
HWY_EXPORT(GegluRange);
HWY_EXPORT(ScaleRange);
HWY_EXPORT(AddRange);

void RmsNorm(const float* src, const float* weight, float* dst, size_t rows,
             size_t dim, float eps, WorkerPool& pool) {
  ParallelRanges(pool, rows, uint64_t{rows} * dim, 1, 1,
                 [&](size_t begin, size_t end) {
                   HWY_DYNAMIC_DISPATCH(RmsNormRows)
                   (src, weight, dst, begin, end, dim, eps);
                 });
}

void Swiglu(const float* gate, const float* up, float* dst, size_t count,
            WorkerPool& pool) {
  // Chunks are whole cache lines so that workers never share one in dst.
  ParallelRanges(pool, count, count, 4096, 16, [&](size_t begin, size_t end) {
    HWY_DYNAMIC_DISPATCH(SwigluRange)(gate, up, dst, begin, end);
  });
}

void Geglu(const float* gate, const float* up, float* dst, size_t count,
           WorkerPool& pool) {
  ParallelRanges(pool, count, count, 4096, 16, [&](size_t begin, size_t end) {
    HWY_DYNAMIC_DISPATCH(GegluRange)(gate, up, dst, begin, end);
  });
}

void Scale(const float* src, float* dst, size_t count, float scale,
           float softcap, WorkerPool& pool) {
  ParallelRanges(pool, count, count, 4096, 16, [&](size_t begin, size_t end) {
    HWY_DYNAMIC_DISPATCH(ScaleRange)(src, dst, scale, softcap, begin, end);
  });
}

void Add(const float* a, const float* b, float* dst, size_t count,
         WorkerPool& pool) {
  ParallelRanges(pool, count, count, 4096, 16, [&](size_t begin, size_t end) {
    HWY_DYNAMIC_DISPATCH(AddRange)(a, b, dst, begin, end);
  });
}

}  // namespace lnpu::softnpu::compute
#endif  // HWY_ONCE
