// Every compute/DMA command executed through ExecuteCommand against a plain
// scalar reference (double accumulation), on every Highway target this
// machine supports and the library was compiled for.
//
// Tolerance: |got - ref| <= kRelTol * magnitude + kAbsTol, where magnitude
// is the sum of absolute values of the terms feeding the output (so the
// bound is that of f32 accumulation, independent of cancellation), with
// kRelTol = 2e-5 and kAbsTol = 1e-6; copies, gathers and scatters are
// exact. Matmuls with Q8_0 / Q4_0 weights quantize their activations to int8
// per block of 32 and add that documented error bound (matmul.h):
// sum over blocks of (max|x_b| / 127 / 2) * sum |w_b|.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <numbers>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/half.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/quantize.h"
#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/softnpu/compute/kernel_scheduling.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"
#include "tests/compute/host_device_memory.h"

namespace lnpu::softnpu {
namespace {

using testing::HostDeviceMemory;
using testing::MakeCommand;
using testing::RunCommand;

constexpr double kRelTol = 2e-5;
constexpr double kAbsTol = 1e-6;

// Threads of the context under test: more than the CI's two cores, so that
// tasks interleave and the pool's hand-off is exercised.
constexpr int kThreads = 3;

// With LNPU_COMPUTE_TEST_SMALL_SHAPES=1 the matmul and attention tests skip
// their cases of more than 2^18 multiply-adds (the attention thread-count
// test attends fewer cache slots instead). tools/scripts/test.sh sets it
// for its qemu-aarch64 run, where emulated SVE is ~30x slower than NEON;
// the NEON target runs every case in the run without SVE.
bool SmallShapes() {
  static const bool small = [] {
    const char* value = std::getenv("LNPU_COMPUTE_TEST_SMALL_SHAPES");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return small;
}
bool SkipAsTooLarge(uint64_t multiply_adds) {
  return SmallShapes() && multiply_adds > (uint64_t{1} << 18);
}

// Portable binary16 conversions (g++ 12 has no _Float16 in C++ on aarch64).
uint16_t ToHalf(float f) { return FloatToFloat16(f); }
float FromHalf(uint16_t bits) { return Float16ToFloat(bits); }

// LNPU_DTYPE_I8 groups of `group_len` (the header's rule, written out
// independently of the kernel): per group an f32 scale d = max|x| / 127 and
// int8 q = round_to_nearest_even(x / d). Returns the bytes and replaces
// `values` with d * q, what a reader of the cache sees.
std::vector<uint8_t> QuantizeI8(std::vector<float>& values, size_t group_len) {
  std::vector<uint8_t> bytes;
  for (size_t g = 0; g < values.size() / group_len; ++g) {
    float* x = &values[g * group_len];
    float amax = 0;
    for (size_t i = 0; i < group_len; ++i) amax = std::max(amax, std::abs(x[i]));
    const float d = amax / 127.0f;
    uint8_t scale[4];
    std::memcpy(scale, &d, 4);
    bytes.insert(bytes.end(), scale, scale + 4);
    for (size_t i = 0; i < group_len; ++i) {
      const int q = d == 0 ? 0 : static_cast<int>(std::nearbyint(x[i] / d));
      bytes.push_back(static_cast<uint8_t>(static_cast<int8_t>(q)));
      x[i] = d * static_cast<float>(q);
    }
  }
  return bytes;
}

struct Expected {
  double value = 0;
  double magnitude = 0;  // sum of |terms|
  double extra = 0;      // further allowed error (quantized activations)
};

void ExpectClose(const std::vector<float>& got,
                 const std::vector<Expected>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = kRelTol * want[i].magnitude + kAbsTol + want[i].extra;
    if (!(std::abs(got[i] - want[i].value) <= tol) && reported++ < 5) {
      ADD_FAILURE() << what << " element " << i << ": got " << got[i]
                    << ", want " << want[i].value << " (tolerance " << tol
                    << ")";
    }
  }
}

class ComputeKernelsTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }

  std::vector<float> RandomFloats(size_t n, float lo = -1.0f,
                                  float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }
  // The destination of an element-wise command with two inputs, by
  // `alias`: 0 a new buffer of `bytes`, 1 the first input, 2 the second.
  uint64_t AliasedDestination(int alias, uint64_t first, uint64_t second, size_t bytes) {
    return alias == 1 ? first : alias == 2 ? second : memory_.Allocate(bytes);
  }
  size_t RandomIn(size_t lo, size_t hi) {
    return std::uniform_int_distribution<size_t>(lo, hi)(rng_);
  }

  // SWIGLU or GEGLU (command type Cmd) against activation(gate) * up, on
  // gates in [-range, range] with the extremes `gates` first, separate and in
  // place.
  template <typename Cmd>
  void CheckGatedActivation(uint16_t opcode, float range,
                            std::initializer_list<float> gates,
                            const std::function<double(double)>& activation,
                            const std::string& name) {
    for (uint32_t count : {1u, 3u, 16u, 17u, 1000u, 70001u}) {
      for (int alias = 0; alias < 3; ++alias) {  // none, dst=gate, dst=up
        auto gate = RandomFloats(count, -range, range);
        std::copy_n(gates.begin(), std::min<size_t>(gates.size(), count), gate.begin());
        const auto up = RandomFloats(count, -2, 2);
        auto cmd = MakeCommand<Cmd>(opcode);
        cmd.count = count;
        cmd.gate = memory_.Upload(gate);
        cmd.up = memory_.Upload(up);
        cmd.dst = AliasedDestination(alias, cmd.gate, cmd.up, size_t{count} * 4);
        ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
        std::vector<Expected> want(count);
        for (size_t i = 0; i < count; ++i) {
          const double v = activation(gate[i]) * up[i];
          want[i] = {v, std::abs(v) * 4};
        }
        ExpectClose(memory_.Download<float>(cmd.dst, count), want,
                    name + " count=" + std::to_string(count) + " alias=" + std::to_string(alias));
      }
    }
  }

  std::mt19937 rng_{1234};
  ComputeContext context_{kThreads};
  HostDeviceMemory memory_;
};

// ---------------------------------------------------------------- MATMUL

void CheckMatmul(HostDeviceMemory& memory,
                 ComputeContext& context, std::vector<float> src_v,
                 std::vector<float> weight_v, uint32_t rows, uint32_t k,
                 uint32_t n, uint32_t dtype, uint16_t flags,
                 const std::vector<float>& bias_v,
                 const std::vector<float>& old_dst) {
  auto cmd = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL, flags);
  cmd.rows = rows;
  cmd.k = k;
  cmd.n = n;
  cmd.weight_dtype = dtype;
  cmd.src = memory.Upload(src_v);
  const bool quantized = dtype == LNPU_DTYPE_Q8_0 || dtype == LNPU_DTYPE_Q4_0;
  if (quantized) {
    const bool q8 = dtype == LNPU_DTYPE_Q8_0;
    const gguf::GgmlType type = q8 ? gguf::GgmlType::kQ8_0 : gguf::GgmlType::kQ4_0;
    std::vector<uint8_t> blocks(weight_v.size() / 32 * (q8 ? 34 : 18));
    ASSERT_TRUE((q8 ? gguf::QuantizeRowQ8_0 : gguf::QuantizeRowQ4_0)(
                    weight_v, absl::MakeSpan(blocks))
                    .ok());
    // The reference sees the dequantized weights.
    ASSERT_TRUE(gguf::DequantizeRow(type, blocks, absl::MakeSpan(weight_v)).ok());
    cmd.weight = memory.Upload(blocks);
  } else if (dtype == LNPU_DTYPE_F16) {
    std::vector<uint16_t> half(weight_v.size());
    for (size_t i = 0; i < half.size(); ++i) {
      half[i] = ToHalf(weight_v[i]);
      weight_v[i] = FromHalf(half[i]);  // the reference sees rounded weights
    }
    cmd.weight = memory.Upload(half);
  } else {
    cmd.weight = memory.Upload(weight_v);
  }
  if (flags & LNPU_MATMUL_BIAS) cmd.bias = memory.Upload(bias_v);
  cmd.dst = memory.Upload(old_dst);
  ASSERT_TRUE(RunCommand(cmd, memory, context).ok());

  std::vector<Expected> want(size_t{rows} * n);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < n; ++c) {
      Expected e;
      for (size_t i = 0; i < k; ++i) {
        const double term = double(src_v[r * k + i]) * weight_v[c * k + i];
        e.value += term;
        e.magnitude += std::abs(term);
      }
      for (size_t b = 0; quantized && b < k / 32; ++b) {
        double amax = 0, wsum = 0;
        for (size_t i = b * 32; i < b * 32 + 32; ++i) {
          amax = std::max(amax, double(std::abs(src_v[r * k + i])));
          wsum += std::abs(weight_v[c * k + i]);
        }
        // Half a step of the activation block's int8 grid per weight, with
        // slack for the f32 rounding of x / d.
        e.extra += amax / 127 / 2 * wsum * (1 + 1e-4);
      }
      if (flags & LNPU_MATMUL_BIAS) {
        e.value += bias_v[c];
        e.magnitude += std::abs(bias_v[c]);
      }
      if (flags & LNPU_MATMUL_ACCUMULATE) {
        e.value += old_dst[r * n + c];
        e.magnitude += std::abs(old_dst[r * n + c]);
      }
      want[r * n + c] = e;
    }
  }
  ExpectClose(memory.Download<float>(cmd.dst, size_t{rows} * n), want,
              "matmul rows=" + std::to_string(rows) + " k=" +
                  std::to_string(k) + " n=" + std::to_string(n) +
                  " dtype=" + std::to_string(dtype) +
                  " flags=" + std::to_string(flags));
}

TEST_P(ComputeKernelsTest, MatmulMatchesReferenceOnRaggedShapes) {
  struct Shape {
    uint32_t rows, k, n;
  };
  std::vector<Shape> shapes = {
      {1, 1, 1},    {1, 3, 5},    {1, 16, 4},   {1, 17, 7},   {1, 64, 64},
      {1, 100, 33}, {1, 1030, 67}, {2, 5, 3},   {3, 31, 9},   {4, 16, 4},
      {5, 33, 130}, {17, 63, 19}, {64, 64, 64}, {70, 1100, 150}};
  for (int i = 0; i < 6; ++i) {
    shapes.push_back({static_cast<uint32_t>(RandomIn(1, 40)),
                      static_cast<uint32_t>(RandomIn(1, 600)),
                      static_cast<uint32_t>(RandomIn(1, 90))});
  }
  const uint16_t flag_sets[] = {0, LNPU_MATMUL_BIAS, LNPU_MATMUL_ACCUMULATE,
                                LNPU_MATMUL_BIAS | LNPU_MATMUL_ACCUMULATE};
  int variant = 0;
  for (const Shape& s : shapes) {
    if (SkipAsTooLarge(uint64_t{s.rows} * s.k * s.n)) continue;
    for (uint32_t dtype : {LNPU_DTYPE_F32, LNPU_DTYPE_F16}) {
      const uint16_t flags = flag_sets[variant++ % 4];
      CheckMatmul(memory_, context_, RandomFloats(size_t{s.rows} * s.k),
                  RandomFloats(size_t{s.n} * s.k), s.rows, s.k, s.n, dtype,
                  flags, RandomFloats(s.n), RandomFloats(size_t{s.rows} * s.n));
    }
  }
}

TEST_P(ComputeKernelsTest, QuantizedMatmulWithinActivationQuantizationBound) {
  struct Shape {
    uint32_t rows, k, n;
  };
  std::vector<Shape> shapes = {{1, 32, 1},   {1, 64, 5},    {1, 96, 67},
                               {1, 896, 33}, {2, 32, 3},    {3, 64, 9},
                               {4, 128, 4},  {5, 544, 130}, {17, 96, 19},
                               {70, 1024, 70}};
  for (int i = 0; i < 4; ++i) {
    shapes.push_back({static_cast<uint32_t>(RandomIn(1, 40)),
                      static_cast<uint32_t>(32 * RandomIn(1, 40)),
                      static_cast<uint32_t>(RandomIn(1, 90))});
  }
  const uint16_t flag_sets[] = {0, LNPU_MATMUL_BIAS, LNPU_MATMUL_ACCUMULATE,
                                LNPU_MATMUL_BIAS | LNPU_MATMUL_ACCUMULATE};
  int variant = 0;
  for (const Shape& s : shapes) {
    if (SkipAsTooLarge(uint64_t{s.rows} * s.k * s.n)) continue;
    for (uint32_t dtype : {LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0}) {
      const uint16_t flags = flag_sets[variant++ % 4];
      // Activations with outliers, as after RMSNorm in real models.
      auto src = RandomFloats(size_t{s.rows} * s.k, -2, 2);
      for (size_t i = 0; i < src.size(); i += 37) src[i] *= 20;
      CheckMatmul(memory_, context_, std::move(src),
                  RandomFloats(size_t{s.n} * s.k), s.rows, s.k, s.n, dtype,
                  flags, RandomFloats(s.n), RandomFloats(size_t{s.rows} * s.n));
    }
  }
}

// An all-zero activation block has scale 0 and contributes nothing.
TEST_P(ComputeKernelsTest, QuantizedMatmulZeroActivationsGiveBias) {
  const auto weight = RandomFloats(64 * 8);
  std::vector<uint8_t> blocks(weight.size() / 32 * 34);
  ASSERT_TRUE(gguf::QuantizeRowQ8_0(weight, absl::MakeSpan(blocks)).ok());
  for (uint32_t rows : {1u, 6u}) {
    auto cmd = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL, LNPU_MATMUL_BIAS);
    cmd.rows = rows;
    cmd.k = 64;
    cmd.n = 8;
    cmd.weight_dtype = LNPU_DTYPE_Q8_0;
    cmd.src = memory_.Upload(std::vector<float>(rows * 64, 0.0f));
    cmd.weight = memory_.Upload(blocks);
    const auto bias = RandomFloats(8);
    cmd.bias = memory_.Upload(bias);
    cmd.dst = memory_.Allocate(rows * 8 * 4);
    ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
    const auto got = memory_.Download<float>(cmd.dst, rows * 8);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], bias[i % 8]);
  }
}

// ---------------------------------------------------------------- RMS_NORM

TEST_P(ComputeKernelsTest, RmsNormMatchesReferenceIncludingInPlace) {
  const std::pair<uint32_t, uint32_t> shapes[] = {
      {1, 1}, {1, 7}, {3, 16}, {2, 33}, {5, 64}, {4, 1000}, {70, 17}};
  for (bool in_place : {false, true}) {
    for (auto [rows, dim] : shapes) {
      const auto src = RandomFloats(size_t{rows} * dim, -3, 3);
      const auto weight = RandomFloats(dim);
      auto cmd = MakeCommand<lnpu_cmd_rms_norm>(LNPU_OP_RMS_NORM);
      cmd.rows = rows;
      cmd.dim = dim;
      cmd.eps = 1e-5f;
      cmd.src = memory_.Upload(src);
      cmd.weight = memory_.Upload(weight);
      cmd.dst = in_place ? cmd.src : memory_.Allocate(src.size() * 4);
      ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
      std::vector<Expected> want(src.size());
      for (size_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (size_t i = 0; i < dim; ++i) ss += double(src[r * dim + i]) * src[r * dim + i];
        const double inv = 1.0 / std::sqrt(ss / dim + 1e-5);
        for (size_t i = 0; i < dim; ++i) {
          const double v = src[r * dim + i] * inv * weight[i];
          want[r * dim + i] = {v, std::abs(v) * 4};
        }
      }
      ExpectClose(memory_.Download<float>(cmd.dst, src.size()), want,
                  "rms_norm rows=" + std::to_string(rows) +
                      " dim=" + std::to_string(dim));
    }
  }
}

// ---------------------------------------------------------------- ROPE

TEST_P(ComputeKernelsTest, RopeMatchesReferenceBothModes) {
  struct Shape {
    uint32_t rows, heads, head_dim, rope_dim;
  };
  const Shape shapes[] = {{1, 1, 2, 2},  {2, 3, 6, 6},    {3, 2, 10, 4},
                          {4, 8, 34, 34}, {5, 4, 64, 64}, {2, 2, 128, 96},
                          {33, 3, 66, 66}};
  for (uint32_t mode : {LNPU_ROPE_MODE_NORM, LNPU_ROPE_MODE_NEOX}) {
    for (bool in_place : {false, true}) {
      for (const Shape& s : shapes) {
        const size_t count = size_t{s.rows} * s.heads * s.head_dim;
        const auto src = RandomFloats(count);
        std::vector<int32_t> positions(s.rows);
        for (auto& p : positions) p = static_cast<int32_t>(RandomIn(0, 5000));
        positions[0] = 0;
        auto cmd = MakeCommand<lnpu_cmd_rope>(LNPU_OP_ROPE);
        cmd.rows = s.rows;
        cmd.heads = s.heads;
        cmd.head_dim = s.head_dim;
        cmd.rope_dim = s.rope_dim;
        cmd.theta_base = 10000.0f;
        cmd.freq_scale = 0.5f;
        cmd.mode = mode;
        cmd.src = memory_.Upload(src);
        cmd.positions = memory_.Upload(positions);
        cmd.dst = in_place ? cmd.src : memory_.Allocate(count * 4);
        ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());

        std::vector<Expected> want(count);
        const size_t half = s.rope_dim / 2;
        for (size_t r = 0; r < s.rows; ++r) {
          for (size_t h = 0; h < s.heads; ++h) {
            const float* x = &src[(r * s.heads + h) * s.head_dim];
            Expected* y = &want[(r * s.heads + h) * s.head_dim];
            for (size_t i = 0; i < s.head_dim; ++i) y[i] = {x[i], 1.0};
            for (size_t i = 0; i < half; ++i) {
              const double theta = positions[r] * 0.5 *
                                   std::pow(10000.0, -2.0 * i / s.rope_dim);
              const size_t i0 = mode == LNPU_ROPE_MODE_NORM ? 2 * i : i;
              const size_t i1 = mode == LNPU_ROPE_MODE_NORM ? 2 * i + 1 : i + half;
              y[i0] = {x[i0] * std::cos(theta) - x[i1] * std::sin(theta), 2.0};
              y[i1] = {x[i0] * std::sin(theta) + x[i1] * std::cos(theta), 2.0};
            }
          }
        }
        ExpectClose(memory_.Download<float>(cmd.dst, count), want,
                    "rope mode=" + std::to_string(mode) +
                        " head_dim=" + std::to_string(s.head_dim) +
                        " rope_dim=" + std::to_string(s.rope_dim));
      }
    }
  }
}

// theta_i = pos * freq_scale * base^(-2i/rope_dim) / freq_factors[i].
TEST_P(ComputeKernelsTest, RopeFrequencyFactorsDivideTheta) {
  for (uint32_t mode : {LNPU_ROPE_MODE_NORM, LNPU_ROPE_MODE_NEOX}) {
    const uint32_t rows = 3, heads = 2, head_dim = 20, rope_dim = 16;
    const size_t count = size_t{rows} * heads * head_dim;
    const auto src = RandomFloats(count);
    const std::vector<int32_t> positions = {0, 7, 3000};
    const auto factors = RandomFloats(rope_dim / 2, 0.5f, 8.0f);
    auto cmd = MakeCommand<lnpu_cmd_rope>(LNPU_OP_ROPE, LNPU_ROPE_FREQ_FACTORS);
    cmd.rows = rows;
    cmd.heads = heads;
    cmd.head_dim = head_dim;
    cmd.rope_dim = rope_dim;
    cmd.theta_base = 500000.0f;
    cmd.freq_scale = 1.0f;
    cmd.mode = mode;
    cmd.src = memory_.Upload(src);
    cmd.positions = memory_.Upload(positions);
    cmd.freq_factors = memory_.Upload(factors);
    cmd.dst = memory_.Allocate(count * 4);
    ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
    std::vector<Expected> want(count);
    const size_t half = rope_dim / 2;
    for (size_t r = 0; r < rows; ++r) {
      for (size_t h = 0; h < heads; ++h) {
        const float* x = &src[(r * heads + h) * head_dim];
        Expected* y = &want[(r * heads + h) * head_dim];
        for (size_t i = 0; i < head_dim; ++i) y[i] = {x[i], 1.0};
        for (size_t i = 0; i < half; ++i) {
          const double theta = positions[r] *
                               std::pow(500000.0, -2.0 * i / rope_dim) /
                               factors[i];
          const size_t i0 = mode == LNPU_ROPE_MODE_NORM ? 2 * i : i;
          const size_t i1 = mode == LNPU_ROPE_MODE_NORM ? 2 * i + 1 : i + half;
          y[i0] = {x[i0] * std::cos(theta) - x[i1] * std::sin(theta), 2.0};
          y[i1] = {x[i0] * std::sin(theta) + x[i1] * std::cos(theta), 2.0};
        }
      }
    }
    ExpectClose(memory_.Download<float>(cmd.dst, count), want,
                "rope freq_factors mode=" + std::to_string(mode));
  }
}

// A one-row command reuses the table of the last position it rotated while
// the parameters stay the same (rope.cc): each command of a sequence that
// changes one of them at a time (the position, theta_base, freq_scale,
// the mode, the frequency factors, or only their values in the same
// buffer) gives the bits of the same command on a fresh context.
TEST_P(ComputeKernelsTest, RopeOneRowSequenceEqualsEachCommandAlone) {
  constexpr uint32_t kHeads = 2, kHeadDim = 16, kRopeDim = 12;
  const auto src = RandomFloats(kHeads * kHeadDim);
  const uint64_t factors = memory_.Upload(RandomFloats(kRopeDim / 2, 0.5f, 8.0f));
  struct Step {
    int32_t position;
    float theta_base, freq_scale;
    uint32_t mode;
    bool factors;
    float factor0;  // written to factors[0] first when > 0
  };
  const Step steps[] = {
      {5, 10000.0f, 1.0f, LNPU_ROPE_MODE_NORM, false, 0.0f},
      {5, 10000.0f, 1.0f, LNPU_ROPE_MODE_NORM, false, 0.0f},  // all the same
      {6, 10000.0f, 1.0f, LNPU_ROPE_MODE_NORM, false, 0.0f},
      {6, 500000.0f, 1.0f, LNPU_ROPE_MODE_NORM, false, 0.0f},
      {6, 500000.0f, 0.25f, LNPU_ROPE_MODE_NORM, false, 0.0f},
      {6, 500000.0f, 0.25f, LNPU_ROPE_MODE_NEOX, false, 0.0f},
      {6, 500000.0f, 0.25f, LNPU_ROPE_MODE_NEOX, true, 0.0f},
      {6, 500000.0f, 0.25f, LNPU_ROPE_MODE_NEOX, true, 3.0f},
      {6, 500000.0f, 0.25f, LNPU_ROPE_MODE_NORM, false, 0.0f},
      {5, 10000.0f, 1.0f, LNPU_ROPE_MODE_NORM, false, 0.0f},
  };
  for (size_t i = 0; i < std::size(steps); ++i) {
    const Step& step = steps[i];
    if (step.factor0 > 0.0f) {
      std::memcpy(memory_.Host(factors), &step.factor0, sizeof(float));
    }
    auto cmd = MakeCommand<lnpu_cmd_rope>(LNPU_OP_ROPE, step.factors ? LNPU_ROPE_FREQ_FACTORS : 0);
    cmd.rows = 1;
    cmd.heads = kHeads;
    cmd.head_dim = kHeadDim;
    cmd.rope_dim = kRopeDim;
    cmd.theta_base = step.theta_base;
    cmd.freq_scale = step.freq_scale;
    cmd.mode = step.mode;
    cmd.src = memory_.Upload(src);
    cmd.positions = memory_.Upload(std::vector<int32_t>{step.position});
    if (step.factors) cmd.freq_factors = factors;
    cmd.dst = memory_.Allocate(src.size() * 4);
    ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
    const auto in_sequence = memory_.Download<float>(cmd.dst, src.size());
    ComputeContext fresh(kThreads);
    ASSERT_TRUE(RunCommand(cmd, memory_, fresh).ok());
    EXPECT_EQ(in_sequence, memory_.Download<float>(cmd.dst, src.size())) << "step " << i;
  }
}

TEST_P(ComputeKernelsTest, RopeBadFrequencyFactorFaultsWithoutWriting) {
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    auto cmd = MakeCommand<lnpu_cmd_rope>(LNPU_OP_ROPE, LNPU_ROPE_FREQ_FACTORS);
    cmd.rows = 1;
    cmd.heads = 1;
    cmd.head_dim = 4;
    cmd.rope_dim = 4;
    cmd.theta_base = 10000.0f;
    cmd.freq_scale = 1.0f;
    cmd.src = memory_.Upload(RandomFloats(4));
    cmd.positions = memory_.Upload(std::vector<int32_t>{3});
    cmd.freq_factors = memory_.Upload(std::vector<float>{1.0f, bad});
    cmd.dst = memory_.Allocate(4 * 4);
    const absl::Status status = RunCommand(cmd, memory_, context_);
    EXPECT_FALSE(status.ok()) << bad;
    EXPECT_NE(status.message().find("freq_factors[1]"), std::string::npos)
        << status;
    for (float v : memory_.Download<float>(cmd.dst, 4)) EXPECT_EQ(v, 0.0f);
  }
}

TEST_P(ComputeKernelsTest, RopeNegativePositionFaultsWithoutWriting) {
  auto cmd = MakeCommand<lnpu_cmd_rope>(LNPU_OP_ROPE);
  cmd.rows = 3;
  cmd.heads = 1;
  cmd.head_dim = 4;
  cmd.rope_dim = 4;
  cmd.theta_base = 10000.0f;
  cmd.freq_scale = 1.0f;
  cmd.src = memory_.Upload(RandomFloats(12));
  cmd.positions = memory_.Upload(std::vector<int32_t>{0, 5, -1});
  cmd.dst = memory_.Allocate(12 * 4);
  const absl::Status status = RunCommand(cmd, memory_, context_);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("positions[2]"), std::string::npos)
      << status;
  for (float v : memory_.Download<float>(cmd.dst, 12)) EXPECT_EQ(v, 0.0f);
}

// ---------------------------------------------------------------- ATTENTION

struct AttentionCase {
  uint32_t rows, capacity, heads, kv_heads, head_dim;
  double mask_density;
  float softcap = 0.0f;  // UAPI 1.3; 0 = none
  uint32_t window = 0;   // UAPI 1.3 LNPU_ATTENTION_WINDOW; 0 = none
};

void CheckAttention(std::mt19937& rng,
                    HostDeviceMemory& memory, ComputeContext& context,
                    const AttentionCase& c, uint32_t kv_dtype) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  };
  const size_t hd = c.head_dim;
  const bool f16 = kv_dtype == LNPU_DTYPE_F16;
  const bool i8 = kv_dtype == LNPU_DTYPE_I8;
  const auto q = random(size_t{c.rows} * c.heads * hd);
  const auto k_new = random(size_t{c.rows} * c.kv_heads * hd);
  const auto v_new = random(size_t{c.rows} * c.kv_heads * hd);
  auto k_cache = random(size_t{c.capacity} * c.kv_heads * hd);
  auto v_cache = random(size_t{c.capacity} * c.kv_heads * hd);
  // An F16 cache holds rounded values; the reference reads the same ones.
  std::vector<uint16_t> k_half(k_cache.size()), v_half(v_cache.size());
  for (size_t i = 0; i < k_cache.size(); ++i) {
    k_half[i] = ToHalf(k_cache[i]);
    v_half[i] = ToHalf(v_cache[i]);
    if (f16) {
      k_cache[i] = FromHalf(k_half[i]);
      v_cache[i] = FromHalf(v_half[i]);
    }
  }
  // With an F16 cache the new rows are read rounded to f16 as well (the
  // difference, ~1e-3 relative, is far above the tolerance).
  std::vector<float> k_new_read = k_new, v_new_read = v_new;
  if (f16) {
    for (float& x : k_new_read) x = FromHalf(ToHalf(x));
    for (float& x : v_new_read) x = FromHalf(ToHalf(x));
  }
  // An I8 cache: int8 per head of each slot; the reference reads the
  // dequantized values, and the new rows quantized the same way.
  std::vector<uint8_t> k_i8, v_i8;
  if (i8) {
    k_i8 = QuantizeI8(k_cache, hd);
    v_i8 = QuantizeI8(v_cache, hd);
    QuantizeI8(k_new_read, hd);
    QuantizeI8(v_new_read, hd);
  }
  std::vector<uint8_t> mask(c.capacity);
  std::bernoulli_distribution visible(c.mask_density);
  for (auto& m : mask) m = visible(rng) ? static_cast<uint8_t>(1 + rng() % 255) : 0;

  auto cmd = MakeCommand<lnpu_cmd_attention>(LNPU_OP_ATTENTION);
  cmd.rows = c.rows;
  cmd.capacity = c.capacity;
  cmd.heads = c.heads;
  cmd.kv_heads = c.kv_heads;
  cmd.head_dim = c.head_dim;
  cmd.kv_dtype = kv_dtype;
  cmd.scale = 2.0f / std::sqrt(static_cast<float>(hd));  // peaky softmax
  cmd.q = memory.Upload(q);
  cmd.k_new = memory.Upload(k_new);
  cmd.v_new = memory.Upload(v_new);
  cmd.k_cache = f16  ? memory.Upload(k_half)
                : i8 ? memory.Upload(k_i8)
                     : memory.Upload(k_cache);
  cmd.v_cache = f16  ? memory.Upload(v_half)
                : i8 ? memory.Upload(v_i8)
                     : memory.Upload(v_cache);
  cmd.mask = memory.Upload(mask);
  cmd.dst = memory.Allocate(q.size() * 4);
  cmd.softcap = c.softcap;
  // With a window: the new rows at consecutive positions from `first`, the
  // slots at random earlier positions (a few later ones, which a window
  // does not hide).
  std::vector<int32_t> positions(c.rows), slot_positions(c.capacity);
  if (c.window > 0) {
    const int32_t first = static_cast<int32_t>(c.capacity + rng() % (2 * c.capacity));
    for (size_t r = 0; r < c.rows; ++r) positions[r] = first + static_cast<int32_t>(r);
    for (int32_t& p : slot_positions) {
      p = rng() % 16 == 0 ? first + static_cast<int32_t>(rng() % (c.rows + 8))
                          : static_cast<int32_t>(rng() % first);
    }
    cmd.hdr.flags = LNPU_ATTENTION_WINDOW;
    cmd.positions = memory.Upload(positions);
    cmd.slot_positions = memory.Upload(slot_positions);
    cmd.window = c.window;
  }
  const auto in_window = [&](size_t r, int32_t position) {
    return c.window == 0 || int64_t{positions[r]} - position < int64_t{c.window};
  };
  ASSERT_TRUE(RunCommand(cmd, memory, context).ok());

  std::vector<Expected> want(q.size());
  const size_t group = c.heads / c.kv_heads;
  for (size_t r = 0; r < c.rows; ++r) {
    for (size_t h = 0; h < c.heads; ++h) {
      const size_t g = h / group;
      const float* qv = &q[(r * c.heads + h) * hd];
      std::vector<double> scores;
      std::vector<const float*> values;
      auto add_key = [&](const float* key, const float* value) {
        double dot = 0;
        for (size_t i = 0; i < hd; ++i) dot += double(qv[i]) * key[i];
        const double score = cmd.scale * dot;
        scores.push_back(c.softcap > 0 ? c.softcap * std::tanh(score / c.softcap) : score);
        values.push_back(value);
      };
      for (size_t s = 0; s < c.capacity; ++s) {
        if (mask[s] && in_window(r, slot_positions[s])) {
          add_key(&k_cache[(s * c.kv_heads + g) * hd],
                  &v_cache[(s * c.kv_heads + g) * hd]);
        }
      }
      for (size_t j = 0; j <= r; ++j) {
        if (!in_window(r, positions[j])) continue;
        add_key(&k_new_read[(j * c.kv_heads + g) * hd],
                &v_new_read[(j * c.kv_heads + g) * hd]);
      }
      const double max = *std::max_element(scores.begin(), scores.end());
      double sum = 0;
      for (double& s : scores) sum += (s = std::exp(s - max));
      for (size_t i = 0; i < hd; ++i) {
        double out = 0;
        for (size_t j = 0; j < scores.size(); ++j) out += scores[j] * values[j][i];
        // Outputs are convex combinations of values in [-1, 1].
        want[(r * c.heads + h) * hd + i] = {out / sum, 4.0};
      }
    }
  }
  ExpectClose(memory.Download<float>(cmd.dst, q.size()), want,
              "attention rows=" + std::to_string(c.rows) +
                  " capacity=" + std::to_string(c.capacity) +
                  " heads=" + std::to_string(c.heads) + "/" +
                  std::to_string(c.kv_heads) +
                  " head_dim=" + std::to_string(c.head_dim) +
                  " density=" + std::to_string(c.mask_density) +
                  " softcap=" + std::to_string(c.softcap) +
                  " window=" + std::to_string(c.window) +
                  " kv_dtype=" + std::to_string(kv_dtype));
}

TEST_P(ComputeKernelsTest, AttentionMatchesReferenceWithRandomMasks) {
  const AttentionCase cases[] = {
      {1, 1, 1, 1, 1, 1.0},      {1, 7, 2, 1, 5, 0.5},
      {1, 300, 8, 4, 64, 0.3},   {1, 1152, 8, 2, 16, 1.0},
      {3, 100, 4, 1, 17, 0.0},   // every slot masked, new rows only
      {20, 129, 4, 4, 8, 0.1},   {5, 64, 8, 2, 67, 0.9},
      {17, 40, 4, 1, 32, 0.5},   {1, 200, 2, 2, 3, 0.02},
      {70, 80, 2, 1, 16, 0.7},   // more than one softmax block of new rows
      // stories260K's decode shape at 0%, ~50% and ~90% of its cache.
      {1, 1152, 8, 4, 8, 0.0},   {1, 1152, 8, 4, 8, 0.5},
      {1, 1152, 8, 4, 8, 0.9},   {37, 1152, 8, 4, 8, 0.9},
      {37, 300, 8, 4, 8, 1.0},   {37, 200, 4, 2, 8, 0.0},
      // head_dim 128; a GQA group of 7 (Qwen2.5-0.5B).
      {1, 700, 8, 2, 128, 1.0},  {37, 150, 4, 4, 128, 0.3},
      {1, 400, 14, 2, 64, 0.8},  {37, 70, 14, 2, 64, 0.0},
      {1, 3000, 2, 1, 128, 0.7},  // one task: split over key blocks
      // A prefill chunk: tiles of 16 rows (the last one shorter) whose
      // causal blocks of new rows end inside a tile.
      {120, 60, 14, 2, 64, 0.5},
  };
  for (const AttentionCase& c : cases) {
    // Scores and weighted values over the cache slots and the new rows.
    if (SkipAsTooLarge(uint64_t{2} * c.rows * (c.capacity + c.rows) * c.heads *
                       c.head_dim)) {
      continue;
    }
    for (uint32_t kv_dtype : {LNPU_DTYPE_F32, LNPU_DTYPE_F16, LNPU_DTYPE_I8}) {
      // I8 groups need head_dim % 4 == 0 (4-byte aligned scales).
      if (kv_dtype == LNPU_DTYPE_I8 && c.head_dim % 4 != 0) continue;
      CheckAttention(rng_, memory_, context_, c, kv_dtype);
    }
  }
}

// Since UAPI 1.3: Gemma's soft cap on the scores and the sliding window
// over slot and row positions, alone and together, on one row (split over
// key ranges when long) and on chunks longer than the window.
TEST_P(ComputeKernelsTest, AttentionSoftcapAndWindowMatchReference) {
  const AttentionCase cases[] = {
      {1, 64, 4, 2, 16, 1.0, 1.5f, 0},    {9, 33, 4, 1, 8, 0.6, 0.5f, 0},
      {1, 300, 8, 2, 32, 0.9, 0.0f, 40},  {40, 100, 4, 2, 16, 0.8, 0.0f, 8},
      {37, 200, 4, 4, 8, 1.0, 2.0f, 64},  {1, 3000, 2, 1, 128, 0.7, 50.0f, 500},
      {5, 50, 2, 1, 4, 0.0, 0.0f, 1},     // each row sees only itself
  };
  for (const AttentionCase& c : cases) {
    if (SkipAsTooLarge(uint64_t{2} * c.rows * (c.capacity + c.rows) * c.heads *
                       c.head_dim)) {
      continue;
    }
    for (uint32_t kv_dtype : {LNPU_DTYPE_F32, LNPU_DTYPE_F16, LNPU_DTYPE_I8}) {
      if (kv_dtype == LNPU_DTYPE_I8 && c.head_dim % 4 != 0) continue;
      CheckAttention(rng_, memory_, context_, c, kv_dtype);
    }
  }
}

// Which rows of a chunk share a task (tiles of up to 16 rows) follows the
// thread count, but a row's arithmetic does not: a chunk's output is the
// same bit for bit on 1, 3 and 8 threads (tiles of 16, 7 and 2 rows). (One
// decode row is not covered: its key-range split, flash-decoding, follows
// the thread count and merges partial softmax states.)
TEST_P(ComputeKernelsTest, AttentionChunkDoesNotDependOnTheThreadCount) {
  constexpr uint32_t kHeads = 14, kKvHeads = 2, kHeadDim = 64;
  constexpr uint32_t kRows = 45;
  // Small shapes: fewer slots, still several key blocks per tile (the
  // tiles, which follow the thread count, do not depend on the slots).
  const uint32_t capacity = SmallShapes() ? 150 : 600;
  const std::vector<float> q = RandomFloats(kRows * kHeads * kHeadDim, -2, 2);
  const std::vector<float> kv_new = RandomFloats(2 * kRows * kKvHeads * kHeadDim, -1, 1);
  std::vector<uint16_t> cache;  // K rows, then V rows
  for (float x : RandomFloats(2 * capacity * kKvHeads * kHeadDim, -1, 1)) {
    cache.push_back(ToHalf(x));
  }
  std::vector<uint8_t> mask(capacity);
  for (size_t s = 0; s < capacity; ++s) mask[s] = s % 3 != 0;
  auto cmd = MakeCommand<lnpu_cmd_attention>(LNPU_OP_ATTENTION);
  cmd.rows = kRows;
  cmd.capacity = capacity;
  cmd.heads = kHeads;
  cmd.kv_heads = kKvHeads;
  cmd.head_dim = kHeadDim;
  cmd.kv_dtype = LNPU_DTYPE_F16;
  cmd.scale = 1.0f / 8;
  cmd.q = memory_.Upload(q);
  cmd.k_new = memory_.Upload(kv_new);
  cmd.v_new = cmd.k_new + size_t{kRows} * kKvHeads * kHeadDim * 4;
  cmd.k_cache = memory_.Upload(cache);
  cmd.v_cache = cmd.k_cache + size_t{capacity} * kKvHeads * kHeadDim * 2;
  cmd.mask = memory_.Upload(mask);
  std::vector<std::vector<float>> outputs;
  for (int threads : {1, kThreads, 8}) {
    ComputeContext context(threads);
    cmd.dst = memory_.Allocate(q.size() * 4);
    ASSERT_TRUE(RunCommand(cmd, memory_, context).ok());
    outputs.push_back(memory_.Download<float>(cmd.dst, q.size()));
  }
  EXPECT_EQ(outputs[1], outputs[0]);
  EXPECT_EQ(outputs[2], outputs[0]);
}

// With an F16 cache, attending to new rows equals storing them first
// (SCATTER_ROWS with F32 -> F16) and attending to them as cache slots: the
// last row of a chunk gets the same output as the same token decoded alone
// after the chunk's other rows were stored.
TEST_P(ComputeKernelsTest, AttentionF16ChunkEqualsRowsStoredFirst) {
  constexpr uint32_t kRows = 11, kHeads = 4, kKvHeads = 2, kHeadDim = 8;
  constexpr uint32_t kCapacity = 20, kFirstSlot = 3;
  constexpr size_t kKvRow = size_t{kKvHeads} * kHeadDim;
  // Values of about 10 have an f16 rounding error of up to 4e-3.
  const std::vector<float> q = RandomFloats(kRows * kHeads * kHeadDim, -3, 3);
  const std::vector<float> kv_new = RandomFloats(2 * kRows * kKvRow, -10, 10);
  const uint64_t kv_new_addr = memory_.Upload(kv_new);
  const uint64_t v_new_addr = kv_new_addr + kRows * kKvRow * 4;
  // K cache then V cache, kCapacity F16 rows each.
  const uint64_t cache = memory_.Allocate(2 * kCapacity * kKvRow * 2);
  const uint64_t v_cache = cache + kCapacity * kKvRow * 2;

  auto attention = MakeCommand<lnpu_cmd_attention>(LNPU_OP_ATTENTION);
  attention.capacity = kCapacity;
  attention.heads = kHeads;
  attention.kv_heads = kKvHeads;
  attention.head_dim = kHeadDim;
  attention.kv_dtype = LNPU_DTYPE_F16;
  attention.scale = 1.0f / std::sqrt(float{kHeadDim});
  attention.k_cache = cache;
  attention.v_cache = v_cache;

  // The whole chunk over an empty cache.
  attention.rows = kRows;
  attention.q = memory_.Upload(q);
  attention.k_new = kv_new_addr;
  attention.v_new = v_new_addr;
  attention.mask = memory_.Upload(std::vector<uint8_t>(kCapacity, 0));
  attention.dst = memory_.Allocate(q.size() * 4);
  ASSERT_TRUE(RunCommand(attention, memory_, context_).ok());
  const std::vector<float> chunk = memory_.Download<float>(
      attention.dst + (kRows - 1) * kHeads * kHeadDim * 4, kHeads * kHeadDim);

  // The first kRows - 1 rows stored into slots kFirstSlot.., then the last
  // row alone.
  auto scatter = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS,
                                                    LNPU_SCATTER_F32_TO_F16);
  std::vector<int32_t> slots(kRows - 1);
  for (size_t i = 0; i < slots.size(); ++i) slots[i] = kFirstSlot + i;
  scatter.src = kv_new_addr;
  scatter.dst = cache;
  scatter.indices = memory_.Upload(slots);
  scatter.src_block_stride = kRows * kKvRow * 4;
  scatter.dst_block_stride = kCapacity * kKvRow * 2;
  scatter.row_bytes = kKvRow * 4;
  scatter.rows = kRows - 1;
  scatter.blocks = 2;
  scatter.dst_rows = kCapacity;
  ASSERT_TRUE(RunCommand(scatter, memory_, context_, DRM_LNPU_ENGINE_DMA).ok());
  std::vector<uint8_t> mask(kCapacity, 0);
  for (int32_t slot : slots) mask[slot] = 1;
  attention.rows = 1;
  attention.q = attention.q + (kRows - 1) * kHeads * kHeadDim * 4;
  attention.k_new = kv_new_addr + (kRows - 1) * kKvRow * 4;
  attention.v_new = v_new_addr + (kRows - 1) * kKvRow * 4;
  attention.mask = memory_.Upload(mask);
  attention.dst = memory_.Allocate(kHeads * kHeadDim * 4);
  ASSERT_TRUE(RunCommand(attention, memory_, context_).ok());
  const std::vector<float> decode =
      memory_.Download<float>(attention.dst, kHeads * kHeadDim);
  for (size_t i = 0; i < decode.size(); ++i) {
    EXPECT_NEAR(decode[i], chunk[i], 1e-5 * (1 + std::abs(chunk[i])))
        << "element " << i;
  }
}

// A NaN in an attended slot's key or value makes the output of the heads
// that attend it NaN, whatever the cache type, head_dim (transposed or dot
// product scores), soft cap or split over key ranges; the other kv head's
// heads, and a NaN in a masked slot, change nothing (stay finite). Highway's
// Exp returns 0 for NaN and Arm's max drops NaN: either alone would make a
// NaN key's weight 0.
TEST_P(ComputeKernelsTest, AttentionNaNInAnAttendedSlotMakesItsHeadsNaN) {
  struct NanCase {
    uint32_t rows, capacity, head_dim;
    float softcap;
  };
  const NanCase cases[] = {{1, 40, 8, 0.0f}, {3, 40, 32, 0.0f}, {1, 40, 8, 30.0f},
                           {1, 1500, 8, 0.0f}};  // 1500 keys: split over key ranges
  constexpr uint32_t kHeads = 4, kKvHeads = 2;
  constexpr uint32_t kAttendedSlot = 5, kMaskedSlot = 7, kPoisonedHead = 1;
  for (const NanCase& c : cases) {
    for (uint32_t kv_dtype : {LNPU_DTYPE_F32, LNPU_DTYPE_F16, LNPU_DTYPE_I8}) {
      for (bool poison_key : {true, false}) {
        const size_t hd = c.head_dim;
        // Bytes of one kv head's row of one slot; an I8 row is an f32
        // scale and hd int8 values. All bytes 0xFF is NaN in every type
        // (the I8 row's scale).
        const size_t head_bytes = kv_dtype == LNPU_DTYPE_F32   ? hd * 4
                                  : kv_dtype == LNPU_DTYPE_F16 ? hd * 2
                                                               : 4 + hd;
        auto cache_bytes = [&] {
          std::vector<float> values = RandomFloats(size_t{c.capacity} * kKvHeads * hd);
          if (kv_dtype == LNPU_DTYPE_I8) return QuantizeI8(values, hd);
          std::vector<uint8_t> bytes(values.size() * (kv_dtype == LNPU_DTYPE_F32 ? 4 : 2));
          for (size_t i = 0; i < values.size(); ++i) {
            if (kv_dtype == LNPU_DTYPE_F32) {
              std::memcpy(&bytes[i * 4], &values[i], 4);
            } else {
              const uint16_t half = ToHalf(values[i]);
              std::memcpy(&bytes[i * 2], &half, 2);
            }
          }
          return bytes;
        };
        std::vector<uint8_t> k_cache = cache_bytes(), v_cache = cache_bytes();
        auto poison = [&](std::vector<uint8_t>& cache, uint32_t slot, uint32_t kv_head) {
          std::memset(&cache[(size_t{slot} * kKvHeads + kv_head) * head_bytes], 0xFF,
                      head_bytes);
        };
        poison(poison_key ? k_cache : v_cache, kAttendedSlot, kPoisonedHead);
        poison(k_cache, kMaskedSlot, 0);
        poison(v_cache, kMaskedSlot, 0);
        std::vector<uint8_t> mask(c.capacity, 1);
        mask[kMaskedSlot] = 0;

        auto cmd = MakeCommand<lnpu_cmd_attention>(LNPU_OP_ATTENTION);
        cmd.rows = c.rows;
        cmd.capacity = c.capacity;
        cmd.heads = kHeads;
        cmd.kv_heads = kKvHeads;
        cmd.head_dim = c.head_dim;
        cmd.kv_dtype = kv_dtype;
        cmd.scale = 1.0f / std::sqrt(static_cast<float>(hd));
        cmd.softcap = c.softcap;
        cmd.q = memory_.Upload(RandomFloats(size_t{c.rows} * kHeads * hd));
        cmd.k_new = memory_.Upload(RandomFloats(size_t{c.rows} * kKvHeads * hd));
        cmd.v_new = memory_.Upload(RandomFloats(size_t{c.rows} * kKvHeads * hd));
        cmd.k_cache = memory_.Upload(k_cache);
        cmd.v_cache = memory_.Upload(v_cache);
        cmd.mask = memory_.Upload(mask);
        cmd.dst = memory_.Allocate(size_t{c.rows} * kHeads * hd * 4);
        ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
        const auto out = memory_.Download<float>(cmd.dst, size_t{c.rows} * kHeads * hd);
        for (size_t r = 0; r < c.rows; ++r) {
          for (size_t h = 0; h < kHeads; ++h) {
            const bool attends_nan = h / (kHeads / kKvHeads) == kPoisonedHead;
            for (size_t i = 0; i < hd; ++i) {
              const float v = out[(r * kHeads + h) * hd + i];
              ASSERT_EQ(std::isnan(v), attends_nan)
                  << "rows=" << c.rows << " capacity=" << c.capacity
                  << " head_dim=" << hd << " softcap=" << c.softcap
                  << " kv_dtype=" << kv_dtype << (poison_key ? " NaN key" : " NaN value")
                  << ": row " << r << " head " << h << " element " << i << " = " << v;
              if (!attends_nan) {
                ASSERT_TRUE(std::isfinite(v));
              }
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- SWIGLU/ADD

TEST_P(ComputeKernelsTest, SwigluMatchesReferenceIncludingExtremesInPlace) {
  CheckGatedActivation<lnpu_cmd_swiglu>(
      LNPU_OP_SWIGLU, 12, {-200.0f, 150.0f},
      [](double g) { return g / (1.0 + std::exp(-g)); }, "swiglu");
}

// GELU of the tanh approximation, as llama.cpp's GELU; 3e13^3 overflows f32.
TEST_P(ComputeKernelsTest, GegluMatchesReferenceIncludingExtremesInPlace) {
  CheckGatedActivation<lnpu_cmd_geglu>(
      LNPU_OP_GEGLU, 6, {-200.0f, 150.0f, 3e13f},
      [](double g) {
        const double inner = std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g);
        return 0.5 * g * (1.0 + std::tanh(inner));
      },
      "geglu");
}

TEST_P(ComputeKernelsTest, ScaleWithAndWithoutSoftcapMatchesReferenceInPlace) {
  for (uint32_t count : {1u, 5u, 16u, 33u, 100000u}) {
    for (float softcap : {0.0f, 30.0f, 0.25f}) {
      for (bool in_place : {false, true}) {
        auto src = RandomFloats(count, -100, 100);
        src[0] = 3e38f;  // y / softcap overflows to inf
        auto cmd = MakeCommand<lnpu_cmd_scale>(LNPU_OP_SCALE);
        cmd.count = count;
        cmd.scale = softcap > 0 ? 1.0f : 0.5f;
        cmd.softcap = softcap;
        cmd.src = memory_.Upload(src);
        cmd.dst = in_place ? cmd.src : memory_.Allocate(size_t{count} * 4);
        ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
        std::vector<Expected> want(count);
        for (size_t i = 0; i < count; ++i) {
          const double y = double{cmd.scale} * src[i];
          const double v = softcap > 0 ? softcap * std::tanh(y / softcap) : y;
          want[i] = {v, std::abs(v) * 4};
        }
        ExpectClose(memory_.Download<float>(cmd.dst, count), want,
                    "scale count=" + std::to_string(count) +
                        " softcap=" + std::to_string(softcap));
      }
    }
  }
}

TEST_P(ComputeKernelsTest, AddMatchesReferenceIncludingInPlace) {
  for (uint32_t count : {1u, 5u, 16u, 33u, 100000u}) {
    for (int alias = 0; alias < 3; ++alias) {  // none, dst=a, dst=b
      const auto a = RandomFloats(count);
      const auto b = RandomFloats(count);
      auto cmd = MakeCommand<lnpu_cmd_add>(LNPU_OP_ADD);
      cmd.count = count;
      cmd.a = memory_.Upload(a);
      cmd.b = memory_.Upload(b);
      cmd.dst = AliasedDestination(alias, cmd.a, cmd.b, size_t{count} * 4);
      ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
      std::vector<Expected> want(count);
      for (size_t i = 0; i < count; ++i) {
        want[i] = {double(a[i]) + b[i], std::abs(a[i]) + std::abs(b[i])};
      }
      ExpectClose(memory_.Download<float>(cmd.dst, count), want,
                  "add count=" + std::to_string(count));
    }
  }
}

// ---------------------------------------------------------------- GATHER

TEST_P(ComputeKernelsTest, GatherRowsConvertsBothTableTypes) {
  for (uint32_t dtype : {LNPU_DTYPE_F32, LNPU_DTYPE_F16}) {
    for (uint32_t row_len : {1u, 7u, 64u, 67u}) {
      const uint32_t table_rows = 13;
      const auto table = RandomFloats(size_t{table_rows} * row_len);
      std::vector<uint16_t> half(table.size());
      for (size_t i = 0; i < half.size(); ++i) half[i] = ToHalf(table[i]);
      const std::vector<int32_t> indices = {12, 0, 5, 5, 1};
      auto cmd = MakeCommand<lnpu_cmd_gather_rows>(LNPU_OP_GATHER_ROWS);
      cmd.table = dtype == LNPU_DTYPE_F16 ? memory_.Upload(half)
                                          : memory_.Upload(table);
      cmd.indices = memory_.Upload(indices);
      cmd.dst = memory_.Allocate(indices.size() * row_len * 4);
      cmd.table_dtype = dtype;
      cmd.row_len = row_len;
      cmd.table_rows = table_rows;
      cmd.count = static_cast<uint32_t>(indices.size());
      ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
      const auto got = memory_.Download<float>(cmd.dst, indices.size() * row_len);
      for (size_t i = 0; i < indices.size(); ++i) {
        for (size_t j = 0; j < row_len; ++j) {
          const size_t t = size_t(indices[i]) * row_len + j;
          const float want = dtype == LNPU_DTYPE_F16 ? FromHalf(half[t]) : table[t];
          ASSERT_EQ(got[i * row_len + j], want) << "row " << i << " col " << j;
        }
      }
    }
  }
}

TEST_P(ComputeKernelsTest, GatherRowsDequantizesQuantizedTables) {
  for (uint32_t dtype : {LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0}) {
    const bool q8 = dtype == LNPU_DTYPE_Q8_0;
    for (uint32_t row_len : {32u, 96u}) {
      const uint32_t table_rows = 9;
      const auto table = RandomFloats(size_t{table_rows} * row_len, -3, 3);
      std::vector<uint8_t> blocks(table.size() / 32 * (q8 ? 34 : 18));
      ASSERT_TRUE((q8 ? gguf::QuantizeRowQ8_0 : gguf::QuantizeRowQ4_0)(
                      table, absl::MakeSpan(blocks))
                      .ok());
      std::vector<float> dequantized(table.size());
      ASSERT_TRUE(gguf::DequantizeRow(
                      q8 ? gguf::GgmlType::kQ8_0 : gguf::GgmlType::kQ4_0,
                      blocks, absl::MakeSpan(dequantized))
                      .ok());
      const std::vector<int32_t> indices = {8, 0, 3, 3};
      auto cmd = MakeCommand<lnpu_cmd_gather_rows>(LNPU_OP_GATHER_ROWS);
      cmd.table = memory_.Upload(blocks);
      cmd.indices = memory_.Upload(indices);
      cmd.dst = memory_.Allocate(indices.size() * row_len * 4);
      cmd.table_dtype = dtype;
      cmd.row_len = row_len;
      cmd.table_rows = table_rows;
      cmd.count = static_cast<uint32_t>(indices.size());
      ASSERT_TRUE(RunCommand(cmd, memory_, context_).ok());
      const auto got = memory_.Download<float>(cmd.dst, indices.size() * row_len);
      for (size_t i = 0; i < indices.size(); ++i) {
        for (size_t j = 0; j < row_len; ++j) {
          ASSERT_EQ(got[i * row_len + j],
                    dequantized[size_t(indices[i]) * row_len + j])
              << "dtype " << dtype << " row " << i << " col " << j;
        }
      }
    }
  }
}

// KV rows converted to F16 on the way into the cache: round to nearest
// even (ties, subnormals, overflow to infinity) on every target.
TEST_P(ComputeKernelsTest, ScatterRowsConvertsF32ToF16) {
  const uint32_t elements = 37, rows = 3, dst_rows = 5, blocks = 2;
  const uint32_t row_bytes = elements * 4;
  std::vector<float> src = RandomFloats(size_t{blocks} * rows * elements, -70000, 70000);
  const float specials[] = {1.0f + 1.0f / 2048,  // tie: rounds to even 1.0
                            1.0f + 3.0f / 2048,  // tie: rounds up
                            65519.0f, 65520.0f,  // largest finite / overflow
                            -1e-6f,   3e-8f,     // subnormal / underflow
                            0.0f,     -0.0f,     0.1f};
  for (size_t i = 0; i < std::size(specials); ++i) src[i * 3] = specials[i];
  const std::vector<int32_t> indices = {4, -1, 0};
  auto cmd = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS,
                                                LNPU_SCATTER_F32_TO_F16);
  cmd.src = memory_.Upload(src);
  cmd.dst = memory_.Allocate(size_t{blocks} * dst_rows * elements * 2);
  cmd.indices = memory_.Upload(indices);
  cmd.src_block_stride = uint64_t{rows} * row_bytes;
  cmd.dst_block_stride = uint64_t{dst_rows} * elements * 2;
  cmd.row_bytes = row_bytes;
  cmd.rows = rows;
  cmd.blocks = blocks;
  cmd.dst_rows = dst_rows;
  ASSERT_TRUE(RunCommand(cmd, memory_, context_, DRM_LNPU_ENGINE_DMA).ok());
  std::vector<uint16_t> want(size_t{blocks} * dst_rows * elements, 0);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < rows; ++i) {
      if (indices[i] < 0) continue;
      for (size_t e = 0; e < elements; ++e) {
        want[(b * dst_rows + indices[i]) * elements + e] =
            FloatToFloat16(src[(b * rows + i) * elements + e]);
      }
    }
  }
  EXPECT_EQ(memory_.Download<uint16_t>(cmd.dst, want.size()), want);
}

// KV rows quantized to LNPU_DTYPE_I8 on the way into the cache: one f32
// scale per head (group) of each row, int8 rounded to nearest even.
TEST_P(ComputeKernelsTest, ScatterRowsQuantizesF32ToI8PerGroup) {
  const uint32_t group_len = 8, groups = 3, rows = 3, dst_rows = 5, blocks = 2;
  const uint32_t values = group_len * groups;
  const size_t dst_row = groups * (4 + group_len);
  std::vector<float> src = RandomFloats(size_t{blocks} * rows * values, -9, 9);
  // Group 0 of row 0: d = 2, so x / d has ties at .5 (to even) and the
  // extremes; group 1: all zero (d = 0, q = 0).
  const float exact[group_len] = {-254, 1, 3, 5, -7, 254, 0.5f, -1};
  const int8_t exact_q[group_len] = {-127, 0, 2, 2, -4, 127, 0, 0};
  std::copy(exact, exact + group_len, src.begin());
  std::fill(src.begin() + group_len, src.begin() + 2 * group_len, 0.0f);
  const std::vector<int32_t> indices = {4, -1, 0};
  auto cmd = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS,
                                                LNPU_SCATTER_F32_TO_I8);
  cmd.src = memory_.Upload(src);
  cmd.dst = memory_.Allocate(size_t{blocks} * dst_rows * dst_row);
  cmd.indices = memory_.Upload(indices);
  cmd.src_block_stride = uint64_t{rows} * values * 4;
  cmd.dst_block_stride = uint64_t{dst_rows} * dst_row;
  cmd.row_bytes = values * 4;
  cmd.group_len = group_len;
  cmd.rows = rows;
  cmd.blocks = blocks;
  cmd.dst_rows = dst_rows;
  ASSERT_TRUE(RunCommand(cmd, memory_, context_, DRM_LNPU_ENGINE_DMA).ok());
  const auto got = memory_.Download<uint8_t>(cmd.dst, blocks * dst_rows * dst_row);

  std::vector<uint8_t> want(got.size(), 0);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < rows; ++i) {
      if (indices[i] < 0) continue;
      std::vector<float> row(src.begin() + (b * rows + i) * values,
                             src.begin() + (b * rows + i + 1) * values);
      const std::vector<uint8_t> bytes = QuantizeI8(row, group_len);
      std::copy(bytes.begin(), bytes.end(),
                want.begin() + (b * dst_rows + indices[i]) * dst_row);
    }
  }
  EXPECT_EQ(got, want);
  // Slot 4 of block 0 holds row 0: scale 2 and the hand-computed values,
  // then scale 0 and zeros.
  const uint8_t* slot = got.data() + 4 * dst_row;
  float d;
  std::memcpy(&d, slot, 4);
  EXPECT_EQ(d, 2.0f);
  for (size_t j = 0; j < group_len; ++j) {
    EXPECT_EQ(static_cast<int8_t>(slot[4 + j]), exact_q[j]) << "element " << j;
  }
  std::memcpy(&d, slot + 4 + group_len, 4);
  EXPECT_EQ(d, 0.0f);
}

TEST_P(ComputeKernelsTest, GatherRowsIndexOutOfRangeFaultsWithoutWriting) {
  for (int32_t bad : {-1, 4, 1 << 30}) {
    auto cmd = MakeCommand<lnpu_cmd_gather_rows>(LNPU_OP_GATHER_ROWS);
    cmd.table = memory_.Upload(RandomFloats(4 * 3));
    cmd.indices = memory_.Upload(std::vector<int32_t>{0, bad});
    cmd.dst = memory_.Allocate(2 * 3 * 4);
    cmd.table_dtype = LNPU_DTYPE_F32;
    cmd.row_len = 3;
    cmd.table_rows = 4;
    cmd.count = 2;
    const absl::Status status = RunCommand(cmd, memory_, context_);
    EXPECT_FALSE(status.ok()) << "index " << bad;
    EXPECT_NE(status.message().find("indices[1]"), std::string::npos) << status;
    for (float v : memory_.Download<float>(cmd.dst, 6)) EXPECT_EQ(v, 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTargets, ComputeKernelsTest,
    ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
    [](const ::testing::TestParamInfo<int64_t>& info) {
      return std::string(hwy::TargetName(info.param));
    });

// ------------------------------------------------ target-independent ops

TEST(DataMovementTest, CopyIsMemmoveOnBothEngines) {
  HostDeviceMemory memory;
  ComputeContext context(1);
  for (uint32_t engine : {DRM_LNPU_ENGINE_COMPUTE, DRM_LNPU_ENGINE_DMA}) {
    std::vector<uint8_t> data(100);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
    const uint64_t base = memory.Upload(data);
    for (int64_t shift : {7, -7}) {  // overlapping forward and backward
      auto cmd = MakeCommand<lnpu_cmd_copy>(LNPU_OP_COPY);
      cmd.src = shift > 0 ? base : base + 7;
      cmd.dst = shift > 0 ? base + 7 : base;
      cmd.bytes = 93;
      std::vector<uint8_t> want = memory.Download<uint8_t>(base, 100);
      std::memmove(want.data() + (cmd.dst - base), want.data() + (cmd.src - base), 93);
      ASSERT_TRUE(RunCommand(cmd, memory, context, engine).ok());
      EXPECT_EQ(memory.Download<uint8_t>(base, 100), want);
    }
  }
}

TEST(DataMovementTest, ScatterRowsUpdatesEveryBlockAndSkipsNegativeIndices) {
  HostDeviceMemory memory;
  ComputeContext context(1);
  const uint32_t row_bytes = 12, rows = 4, dst_rows = 6, blocks = 3;
  const uint64_t src_stride = rows * row_bytes + 8;  // padded source blocks
  const uint64_t dst_stride = dst_rows * row_bytes;
  std::vector<uint8_t> src((blocks - 1) * src_stride + rows * row_bytes);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  const std::vector<int32_t> indices = {5, -1, 0, 2};
  auto cmd = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS);
  cmd.src = memory.Upload(src);
  cmd.dst = memory.Allocate(blocks * dst_stride);
  cmd.indices = memory.Upload(indices);
  cmd.src_block_stride = src_stride;
  cmd.dst_block_stride = dst_stride;
  cmd.row_bytes = row_bytes;
  cmd.rows = rows;
  cmd.blocks = blocks;
  cmd.dst_rows = dst_rows;
  ASSERT_TRUE(RunCommand(cmd, memory, context, DRM_LNPU_ENGINE_DMA).ok());
  std::vector<uint8_t> want(blocks * dst_stride, 0);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < rows; ++i) {
      if (indices[i] < 0) continue;
      std::memcpy(&want[b * dst_stride + indices[i] * row_bytes],
                  &src[b * src_stride + i * row_bytes], row_bytes);
    }
  }
  EXPECT_EQ(memory.Download<uint8_t>(cmd.dst, want.size()), want);
}

TEST(DataMovementTest, ScatterRowsIndexBeyondDestinationFaultsWithoutWriting) {
  HostDeviceMemory memory;
  ComputeContext context(1);
  auto cmd = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS);
  cmd.src = memory.Upload(std::vector<uint8_t>(2 * 8, 0xab));
  cmd.dst = memory.Allocate(3 * 8);
  cmd.indices = memory.Upload(std::vector<int32_t>{1, 3});
  cmd.row_bytes = 8;
  cmd.rows = 2;
  cmd.blocks = 1;
  cmd.dst_rows = 3;
  const absl::Status status =
      RunCommand(cmd, memory, context, DRM_LNPU_ENGINE_DMA);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("indices[1]"), std::string::npos) << status;
  EXPECT_EQ(memory.Download<uint8_t>(cmd.dst, 24), std::vector<uint8_t>(24, 0));
}

TEST(DataMovementTest, NopRunsOnBothEngines) {
  HostDeviceMemory memory;
  ComputeContext context(2);
  const auto cmd = MakeCommand<lnpu_cmd_nop>(LNPU_OP_NOP);
  EXPECT_TRUE(RunCommand(cmd, memory, context, DRM_LNPU_ENGINE_COMPUTE).ok());
  EXPECT_TRUE(RunCommand(cmd, memory, context, DRM_LNPU_ENGINE_DMA).ok());
}

TEST(WorkerPoolTest, RunsEveryTaskOnceOnDistinctWorkers) {
  compute::WorkerPool pool(3);
  for (int round = 0; round < 50; ++round) {
    const size_t tasks = 1 + round * 7;
    std::vector<std::atomic<int>> runs(tasks);
    std::vector<std::atomic<int>> active(pool.threads());
    std::atomic<bool> shared_worker{false};
    pool.ParallelFor(tasks, [&](size_t task, int worker) {
      ASSERT_GE(worker, 0);
      ASSERT_LT(worker, pool.threads());
      if (active[worker].fetch_add(1) != 0) shared_worker = true;
      runs[task].fetch_add(1);
      active[worker].fetch_sub(1);
    });
    for (size_t t = 0; t < tasks; ++t) ASSERT_EQ(runs[t].load(), 1) << t;
    EXPECT_FALSE(shared_worker.load());
  }
}

// Loops far apart (the worker sleeps between them, and the loop must wake
// it), each with a worker task that outlasts the caller's spin (the caller
// sleeps until the worker leaves): every task runs once, and ParallelFor
// returns only after all of them, with their writes visible.
TEST(WorkerPoolTest, WakesASleepingWorkerAndWaitsForItAsleep) {
  compute::WorkerPool pool(2);
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(compute::WorkerPool::kSpin * 10);
    std::vector<int> done(2, 0);  // plain ints: the pool must order them
    std::atomic<bool> worker_started{false};
    pool.ParallelFor(2, [&](size_t task, int worker) {
      if (worker != 0) {
        worker_started = true;
        std::this_thread::sleep_for(compute::WorkerPool::kSpin * 20);
      } else {
        // The other task must go to the (woken) worker, not to the caller.
        // (When the caller is kept off the CPU, the worker may take both.)
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (!worker_started.load() && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::yield();
        }
      }
      done[task] = round + 1;
    });
    ASSERT_TRUE(worker_started.load())
        << "round " << round << ": the sleeping worker was not woken";
    EXPECT_EQ(done[0], round + 1) << round;
    EXPECT_EQ(done[1], round + 1) << round;
  }
}

// A worker held in a signal handler stands for one the scheduler keeps off
// the CPU (other processes' load).
std::atomic<bool> worker_held{false};
std::atomic<bool> release_worker{false};
void HoldWorker(int) {
  worker_held.store(true);
  while (!release_worker.load()) {
  }
}

TEST(WorkerPoolTest, ALoopDoesNotWaitForAWorkerThatIsNotRunning) {
  static_assert(std::atomic<bool>::is_always_lock_free);
  compute::WorkerPool pool(2);
  // Finds the worker's thread: the caller's task waits (up to 2 s a loop)
  // for the worker to take the other one.
  pthread_t worker_thread{};
  std::atomic<bool> found{false};
  for (int round = 0; round < 10 && !found.load(); ++round) {
    pool.ParallelFor(2, [&](size_t, int worker) {
      if (worker == 1) {
        worker_thread = pthread_self();
        found = true;
        return;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (!found.load() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
    });
  }
  ASSERT_TRUE(found.load()) << "the worker never took a task";
  struct sigaction hold {}, previous{};
  hold.sa_handler = HoldWorker;
  sigemptyset(&hold.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &hold, &previous), 0);
  // The signal may land while the worker is inside a loop (it joined the
  // last one and has not left it yet: a few instructions), which the next
  // loop would wait for; so a few attempts.
  bool finished_while_held = false;
  for (int attempt = 0; attempt < 5 && !finished_while_held; ++attempt) {
    worker_held = false;
    release_worker = false;
    ASSERT_EQ(pthread_kill(worker_thread, SIGUSR1), 0);
    while (!worker_held.load()) std::this_thread::yield();
    std::vector<int> runs(100, 0);
    std::atomic<int> on_worker{0};
    std::atomic<bool> done{false};
    std::thread caller([&] {
      pool.ParallelFor(runs.size(), [&](size_t task, int worker) {
        ++runs[task];
        if (worker != 0) on_worker.fetch_add(1);
      });
      done = true;
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!done.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    finished_while_held = done.load();
    release_worker = true;
    caller.join();
    for (size_t task = 0; task < runs.size(); ++task) {
      ASSERT_EQ(runs[task], 1) << task;
    }
    if (finished_while_held) {
      EXPECT_EQ(on_worker.load(), 0);
    }
  }
  ASSERT_EQ(sigaction(SIGUSR1, &previous, nullptr), 0);
  EXPECT_TRUE(finished_while_held)
      << "every loop waited for the held worker until it was released";
}

// Waits up to 2 s for every worker of `pool` to sleep.
bool WaitUntilWorkersSleep(const compute::WorkerPool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!pool.WorkersAsleep() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(compute::WorkerPool::kSpin * 5);
  }
  return pool.WorkersAsleep();
}

// A loop too small to be worth waking the workers runs on the caller and
// leaves them asleep; a larger one, or any loop worth sharing while a worker
// is awake, goes to the pool (kernel_scheduling.h).
TEST(WorkerPoolTest, ASmallLoopDoesNotWakeASleepingWorker) {
  compute::WorkerPool pool(2);
  ASSERT_TRUE(WaitUntilWorkersSleep(pool));
  EXPECT_TRUE(compute::RunsOnCallerAlone(pool, compute::kMinWakingWork - 1));
  EXPECT_FALSE(compute::RunsOnCallerAlone(pool, compute::kMinWakingWork));
  EXPECT_TRUE(compute::RunsOnCallerAlone(pool, compute::kMinParallelWork - 1));
  std::vector<int> workers;
  compute::RunTasks(pool, 8, compute::kMinWakingWork - 1,
                    [&](size_t, int worker) { workers.push_back(worker); });
  EXPECT_EQ(workers, std::vector<int>(8, 0));
  EXPECT_TRUE(pool.WorkersAsleep());
  // With the worker inside a loop (its task waits for the caller's checks),
  // a loop from kMinParallelWork on is worth sharing.
  std::atomic<bool> worker_started{false};
  std::atomic<bool> checked{false};
  bool awake = false;
  bool shared = false;
  pool.ParallelFor(2, [&](size_t, int worker) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    if (worker != 0) {
      worker_started = true;
      while (!checked.load() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      return;
    }
    while (!worker_started.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    awake = !pool.WorkersAsleep();
    shared = !compute::RunsOnCallerAlone(pool, compute::kMinParallelWork);
    checked = true;
  });
  ASSERT_TRUE(worker_started.load()) << "the sleeping worker was not woken";
  EXPECT_TRUE(awake);
  EXPECT_TRUE(shared);
}

TEST(ComputeContextTest, ReportsThreadsAndClampsToOne) {
  EXPECT_EQ(ComputeContext(4).threads(), 4);
  EXPECT_EQ(ComputeContext(0).threads(), 1);
  EXPECT_EQ(ComputeContext(-3).threads(), 1);
}

}  // namespace
}  // namespace lnpu::softnpu
