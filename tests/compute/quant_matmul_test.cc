// Every quantized-matmul path this machine can run (quant_matmul.h: AMX,
// AVX-512 VNNI, AVX-VNNI, Arm dot product, the portable Highway path)
// against an exact integer reference: the test quantizes the activations
// with the documented rule and sums d_w * d_x * (int32 block dot) in double.
// Paths may differ from it only by f32 rounding of the scale-and-add steps:
// |got - ref| <= 1e-5 * sum_b |d_w d_x| * sum_i |q_w q_x| + 1e-6.
// Panel weights (Q8_0P16, Q4_0P16 and their _P16S forms) have one exact f32
// order (quant_matmul.h):
// PortableP16Matmul is checked against a double reference and a
// transcription of that order, and every path against it bit for bit.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "base/half.h"
#include "base/quant_blocks.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/quantize.h"
#include "gtest/gtest.h"
#include "kernel_iface/softnpu/compute/kernels.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"
#if defined(__x86_64__)
#include "kernel_iface/softnpu/compute/x86_cpu_features.h"
#endif

namespace lnpu::softnpu::compute {
namespace {

struct Shape {
  size_t rows, k, n;
};

std::string TypeName(WeightType type) {
  switch (type) {
    case WeightType::kQ8_0: return " q8_0";
    case WeightType::kQ4_0: return " q4_0";
    case WeightType::kQ8_0P16: return " q8_0p16";
    case WeightType::kQ4_0P16: return " q4_0p16";
    case WeightType::kQ8_0P16S: return " q8_0p16s";
    case WeightType::kQ4_0P16S: return " q4_0p16s";
    default: return " ?";
  }
}

// Every quantized weight type.
constexpr WeightType kQuantTypes[] = {WeightType::kQ8_0,     WeightType::kQ4_0,
                                      WeightType::kQ8_0P16,  WeightType::kQ4_0P16,
                                      WeightType::kQ8_0P16S, WeightType::kQ4_0P16S};
constexpr WeightType kPanelTypes[] = {WeightType::kQ8_0P16, WeightType::kQ4_0P16,
                                      WeightType::kQ8_0P16S, WeightType::kQ4_0P16S};

// The panel form (`panel_type`) of n rows of k elements of its block type.
std::vector<uint8_t> RepackP16(WeightType panel_type, const std::vector<uint8_t>& rows,
                               size_t n, size_t k) {
  const size_t blocks = k / kQuantBlock;
  const size_t block_bytes = WeightBytes(BlockTypeOf(panel_type), kQuantBlock);
  EXPECT_EQ(rows.size(), n * blocks * block_bytes);
  std::vector<uint8_t> out(lnpu::P16MatrixBytes(block_bytes, n, blocks));
  lnpu::RepackToP16(block_bytes, PanelScalesOf(panel_type), rows.data(), n, blocks, out.data());
  return out;
}

// n x k weights of block type `type` (Q8_0 or Q4_0) quantized from uniform
// values in [-1, 1].
std::vector<uint8_t> RandomBlocks(std::mt19937& rng, WeightType type, size_t n, size_t k) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> weight_f32(n * k);
  for (float& v : weight_f32) v = dist(rng);
  std::vector<uint8_t> weight(n * WeightBytes(type, k));
  EXPECT_TRUE((type == WeightType::kQ8_0 ? gguf::QuantizeRowQ8_0 : gguf::QuantizeRowQ4_0)(
                  weight_f32, absl::MakeSpan(weight))
                  .ok());
  return weight;
}

// Integer view of one quantized weight row: per-block scales and int8
// values (Q4_0 nibbles minus 8).
struct QuantRow {
  std::vector<float> scales;
  std::vector<int> q;
};

QuantRow DecodeWeightRow(const uint8_t* row, size_t k, WeightType type) {
  QuantRow out;
  const size_t block_bytes =
      type == WeightType::kQ8_0 ? kQ8_0BlockBytes : kQ4_0BlockBytes;
  for (size_t b = 0; b < k / kQuantBlock; ++b) {
    const uint8_t* block = row + b * block_bytes;
    uint16_t half;
    std::memcpy(&half, block, 2);
    out.scales.push_back(Float16ToFloat(half));
    for (size_t j = 0; j < kQuantBlock; ++j) {
      if (type == WeightType::kQ8_0) {
        out.q.push_back(static_cast<int8_t>(block[2 + j]));
      } else {
        const uint8_t byte = block[2 + j % 16];
        out.q.push_back((j < 16 ? byte & 0xF : byte >> 4) - 8);
      }
    }
  }
  return out;
}

// The documented activation quantization (quant_matmul.h).
QuantRow QuantizeActivationRow(const float* x, size_t k) {
  QuantRow out;
  for (size_t b = 0; b < k / kQuantBlock; ++b) {
    float amax = 0;
    for (size_t j = 0; j < kQuantBlock; ++j) {
      amax = std::max(amax, std::abs(x[b * kQuantBlock + j]));
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out.scales.push_back(d);
    for (size_t j = 0; j < kQuantBlock; ++j) {
      out.q.push_back(static_cast<int>(std::nearbyint(x[b * kQuantBlock + j] * id)));
    }
  }
  return out;
}

// `rows` activation rows of k values quantized by the documented rule, as
// the GEMV loops read them.
struct QuantizedRows {
  std::vector<int8_t> q;
  std::vector<float> scales;
  QuantizedActivations view() const { return {.q = q.data(), .scales = scales.data()}; }
};
QuantizedRows QuantizeRows(const std::vector<float>& src, size_t rows, size_t k) {
  QuantizedRows out;
  for (size_t r = 0; r < rows; ++r) {
    const QuantRow row = QuantizeActivationRow(src.data() + r * k, k);
    out.q.insert(out.q.end(), row.q.begin(), row.q.end());
    out.scales.insert(out.scales.end(), row.scales.begin(), row.scales.end());
  }
  return out;
}

class QuantMatmulPathTest
    : public ::testing::TestWithParam<const QuantMatmulPath*> {
 protected:
  void SetUp() override { SetQuantMatmulPathForTest(GetParam()); }
  void TearDown() override { SetQuantMatmulPathForTest(nullptr); }

  std::vector<float> RandomFloats(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }

  // n x k weights of `type` quantized from uniform values in [-1, 1]
  // (panel types: rows of their block type repacked into panels).
  std::vector<uint8_t> RandomWeights(WeightType type, size_t n, size_t k) {
    const std::vector<uint8_t> rows = RandomBlocks(rng_, BlockTypeOf(type), n, k);
    return IsPanelType(type) ? RepackP16(type, rows, n, k) : rows;
  }

  // dst = src (rows x k) times the n x k weights of `type`, no bias.
  std::vector<float> RunMatmul(const std::vector<float>& src, const std::vector<uint8_t>& weight,
                               WeightType type, size_t rows, size_t k, size_t n) {
    std::vector<float> dst(rows * n, 0.0f);
    MatmulArgs args;
    args.src = src.data();
    args.weight = weight.data();
    args.weight_type = type;
    args.dst = dst.data();
    args.rows = rows;
    args.k = k;
    args.n = n;
    Matmul(args, pool_, &scratch_);
    return dst;
  }

  void Check(const Shape& s, WeightType type, bool bias, bool accumulate) {
    SCOPED_TRACE(std::string(GetParam()->name) + " rows=" + std::to_string(s.rows) +
                 " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) +
                 TypeName(type));
    // Activations with outliers, as after RMSNorm in real models, and an
    // all-zero block (scale 0).
    auto src = RandomFloats(s.rows * s.k, -2, 2);
    for (size_t i = 0; i < src.size(); i += 37) src[i] *= 20;
    std::fill(src.begin(), src.begin() + kQuantBlock, 0.0f);
    const size_t row_bytes = WeightBytes(type, s.k);
    const std::vector<uint8_t> weight = RandomWeights(type, s.n, s.k);
    const auto bias_v = RandomFloats(s.n, -1, 1);
    const auto old_dst = RandomFloats(s.rows * s.n, -1, 1);
    std::vector<float> dst = old_dst;

    MatmulArgs args;
    args.src = src.data();
    args.weight = weight.data();
    args.weight_type = type;
    args.bias = bias ? bias_v.data() : nullptr;
    args.accumulate = accumulate;
    args.dst = dst.data();
    args.rows = s.rows;
    args.k = s.k;
    args.n = s.n;
    Matmul(args, pool_, &scratch_);

    std::vector<QuantRow> weight_rows;
    for (size_t c = 0; c < s.n; ++c) {
      if (IsPanelType(type)) {
        std::vector<uint8_t> row(row_bytes);
        lnpu::P16RowToBlocks(WeightBytes(BlockTypeOf(type), kQuantBlock), PanelScalesOf(type),
                             weight.data(), c, s.k / kQuantBlock, row.data());
        weight_rows.push_back(DecodeWeightRow(row.data(), s.k, BlockTypeOf(type)));
      } else {
        weight_rows.push_back(DecodeWeightRow(weight.data() + c * row_bytes, s.k, type));
      }
    }
    int reported = 0;
    for (size_t r = 0; r < s.rows; ++r) {
      const QuantRow x = QuantizeActivationRow(src.data() + r * s.k, s.k);
      for (size_t c = 0; c < s.n; ++c) {
        const QuantRow& w = weight_rows[c];
        double want = 0, magnitude = 0;
        for (size_t b = 0; b < s.k / kQuantBlock; ++b) {
          int64_t dot = 0, abs_dot = 0;
          for (size_t j = b * kQuantBlock; j < (b + 1) * kQuantBlock; ++j) {
            dot += int64_t{x.q[j]} * w.q[j];
            abs_dot += std::abs(int64_t{x.q[j]} * w.q[j]);
          }
          const double scale = double(x.scales[b]) * w.scales[b];
          want += scale * double(dot);
          magnitude += std::abs(scale) * double(abs_dot);
        }
        if (bias) {
          want += bias_v[c];
          magnitude += std::abs(bias_v[c]);
        }
        if (accumulate) {
          want += old_dst[r * s.n + c];
          magnitude += std::abs(old_dst[r * s.n + c]);
        }
        const double got = dst[r * s.n + c];
        const double tol = 1e-5 * magnitude + 1e-6;
        if (!(std::abs(got - want) <= tol) && reported++ < 5) {
          ADD_FAILURE() << "dst[" << r << "][" << c << "] = " << got
                        << ", want " << want << " (tolerance " << tol << ")";
        }
      }
    }
  }

  std::mt19937 rng_{4321};
  WorkerPool pool_{3};  // more workers than CI cores: tasks interleave
  KernelScratch scratch_;
};

TEST_P(QuantMatmulPathTest, MatchesIntegerReferenceOnRaggedShapes) {
  std::vector<Shape> shapes = {
      {1, 32, 1},    {1, 64, 5},     {1, 96, 67},   {1, 896, 33},
      {1, 2048, 70}, {2, 32, 3},     {3, 64, 9},    {4, 128, 4},
      {2, 416, 37},  {3, 1120, 13},  {4, 2080, 61}, {4, 96, 1},
      {5, 544, 130}, {15, 96, 17},   {16, 64, 16},  {17, 96, 19},
      {31, 160, 47}, {33, 256, 65},  {70, 1024, 70}, {128, 896, 96}};
  std::uniform_int_distribution<size_t> rows(1, 80), blocks(1, 40), cols(1, 150);
  for (int i = 0; i < 6; ++i) {
    shapes.push_back({rows(rng_), 32 * blocks(rng_), cols(rng_)});
  }
  int variant = 0;
  for (const Shape& s : shapes) {
    for (WeightType type : kQuantTypes) {
      Check(s, type, variant & 1, variant & 2);
      ++variant;
    }
  }
}

// Activations large enough that every int8 value hits +-127 and weights at
// the ends of their range: the int32 block sums must not saturate.
TEST_P(QuantMatmulPathTest, ExtremeValuesDoNotSaturate) {
  for (WeightType type : kQuantTypes) {
    const bool q4_0 = BlockTypeOf(type) == WeightType::kQ4_0;
    for (size_t rows : {1, 3, 40}) {
      const size_t k = 4096, n = 20;
      std::vector<float> src(rows * k);
      for (size_t i = 0; i < src.size(); ++i) src[i] = (i % 3 == 0) ? -1e3f : 1e3f;
      std::vector<float> weight_f32(n * k);
      for (size_t i = 0; i < weight_f32.size(); ++i) {
        weight_f32[i] = (i % 3 == 0) ? -8.0f : 7.0f;
      }
      std::vector<uint8_t> weight(
          n * WeightBytes(q4_0 ? WeightType::kQ4_0 : WeightType::kQ8_0, k));
      ASSERT_TRUE((q4_0 ? gguf::QuantizeRowQ4_0 : gguf::QuantizeRowQ8_0)(
                      weight_f32, absl::MakeSpan(weight))
                      .ok());
      std::vector<float> deq(weight_f32.size());
      ASSERT_TRUE(gguf::DequantizeRow(q4_0 ? gguf::GgmlType::kQ4_0 : gguf::GgmlType::kQ8_0,
                                      weight, absl::MakeSpan(deq))
                      .ok());
      if (IsPanelType(type)) weight = RepackP16(type, weight, n, k);
      const std::vector<float> dst = RunMatmul(src, weight, type, rows, k, n);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < n; ++c) {
          double want = 0, magnitude = 0;
          for (size_t i = 0; i < k; ++i) {
            want += double(src[r * k + i]) * deq[c * k + i];
            magnitude += std::abs(double(src[r * k + i]) * deq[c * k + i]);
          }
          // Activations are exactly on the int8 grid (|x| constant), so
          // only f32 rounding separates the result from the exact sum.
          ASSERT_NEAR(dst[r * n + c], want, 1e-5 * magnitude)
              << GetParam()->name << TypeName(type) << " rows=" << rows << " [" << r << "]["
              << c << "]";
        }
      }
    }
  }
}

// A NaN or an infinity among a row's activations makes every output of
// that row NaN on every path, GEMV and GEMM alike, as f32 arithmetic
// would; the other rows stay finite. (Quantizing a NaN to int8 must not
// turn it into a number: Arm's max drops NaN and converts it to 0.)
TEST_P(QuantMatmulPathTest, NonFiniteActivationsMakeTheirRowNaN) {
  const size_t k = 96, n = 37;
  for (WeightType type : kQuantTypes) {
    for (size_t rows : {1, 3, 40}) {
      auto src = RandomFloats(rows * k, -2, 2);
      const size_t nan_row = rows / 2, inf_row = rows - 1;
      src[nan_row * k + 40] = std::numeric_limits<float>::quiet_NaN();
      if (rows > 1) src[inf_row * k + 95] = -std::numeric_limits<float>::infinity();
      const std::vector<uint8_t> weight = RandomWeights(type, n, k);
      const std::vector<float> dst = RunMatmul(src, weight, type, rows, k, n);
      for (size_t r = 0; r < rows; ++r) {
        const bool poisoned = r == nan_row || (rows > 1 && r == inf_row);
        for (size_t c = 0; c < n; ++c) {
          ASSERT_EQ(std::isnan(dst[r * n + c]), poisoned)
              << GetParam()->name << TypeName(type) << " rows=" << rows << " dst[" << r << "][" << c << "] = " << dst[r * n + c];
        }
      }
    }
  }
}

// The GEMV of 2..4 rows (a batched decode step), and the GEMV passes of up
// to the path's GemvPassesMaxRows rows, give each row exactly what a
// call with that row alone gives, bit for bit, on odd column counts and
// block counts that are not multiples of the kernels' block groups. The
// 8-row shape's k makes each worker's columns span several L2 pieces.
TEST_P(QuantMatmulPathTest, SeveralRowGemvEqualsOneRowCallsBitForBit) {
  const Shape shapes[] = {{2, 32, 1},    {3, 96, 5},    {4, 288, 67},    {2, 1120, 33},
                          {3, 416, 130}, {4, 2080, 19}, {5, 288, 67},    {8, 8192, 403},
                          {13, 96, 41},  {16, 416, 130}};
  int variant = 0;
  for (const Shape& s : shapes) {
    for (WeightType type : kQuantTypes) {
      if (s.rows > GemvPassesMaxRows(*GetParam(), type)) continue;  // the GEMM's rows
      SCOPED_TRACE(std::string(GetParam()->name) + " rows=" + std::to_string(s.rows) +
                   " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) +
                   TypeName(type));
      const bool bias = variant & 1, accumulate = variant & 2;
      ++variant;
      auto src = RandomFloats(s.rows * s.k, -2, 2);
      for (size_t i = 0; i < src.size(); i += 29) src[i] *= 15;
      const std::vector<uint8_t> weight = RandomWeights(type, s.n, s.k);
      const auto bias_v = RandomFloats(s.n, -1, 1);
      const auto old_dst = RandomFloats(s.rows * s.n, -1, 1);
      MatmulArgs args;
      args.weight = weight.data();
      args.weight_type = type;
      args.bias = bias ? bias_v.data() : nullptr;
      args.accumulate = accumulate;
      args.k = s.k;
      args.n = s.n;

      std::vector<float> batched = old_dst;
      args.src = src.data();
      args.dst = batched.data();
      args.rows = s.rows;
      Matmul(args, pool_, &scratch_);
      for (size_t r = 0; r < s.rows; ++r) {
        std::vector<float> alone(old_dst.begin() + r * s.n,
                                 old_dst.begin() + (r + 1) * s.n);
        args.src = src.data() + r * s.k;
        args.dst = alone.data();
        args.rows = 1;
        Matmul(args, pool_, &scratch_);
        for (size_t c = 0; c < s.n; ++c) {
          ASSERT_EQ(std::bit_cast<uint32_t>(batched[r * s.n + c]),
                    std::bit_cast<uint32_t>(alone[c]))
              << "row " << r << " column " << c << ": " << batched[r * s.n + c]
              << " batched, " << alone[c] << " alone";
        }
      }
    }
  }
}

// MatmulGroup (the software NPU's grouped Q/K/V and gate/up commands) leaves
// every dst exactly as Matmul calls of its members in turn do: groups of 2-4
// matrices that mix all four quantized types, n of 1 to 300 (ragged panels,
// a matrix smaller than one column chunk beside a large one), bias and
// accumulation per member, rows from decode (1) through batched decode and
// the GEMV passes (8, 16) to a prefill (40, where the group runs its
// members one by one on the GEMM).
TEST_P(QuantMatmulPathTest, MatmulGroupEqualsMatmulsInTurnBitForBit) {
  constexpr WeightType kAll[] = {WeightType::kQ8_0,     WeightType::kQ4_0,
                                 WeightType::kQ8_0P16,  WeightType::kQ4_0P16,
                                 WeightType::kQ8_0P16S, WeightType::kQ4_0P16S};
  const size_t ns[] = {300, 5, 33, 1, 131, 64, 17};
  int variant = 0;
  for (size_t rows : {1, 2, 3, 4, 8, 16, 40}) {
    for (size_t members = 2; members <= 4; ++members) {
      const size_t k = variant % 2 == 0 ? 288 : 2080;
      SCOPED_TRACE(std::string(GetParam()->name) + " rows=" + std::to_string(rows) +
                   " k=" + std::to_string(k) + " members=" + std::to_string(members));
      const auto src = RandomFloats(rows * k, -2, 2);
      std::vector<std::vector<uint8_t>> weights(members);
      std::vector<std::vector<float>> biases(members), old_dsts(members), got(members),
          want(members);
      std::vector<MatmulArgs> group(members);
      for (size_t m = 0; m < members; ++m) {
        MatmulArgs& a = group[m];
        a.weight_type = kAll[(variant + m) % 4];
        a.n = ns[(variant + 3 * m) % std::size(ns)];
        a.rows = rows;
        a.k = k;
        a.src = src.data();
        weights[m] = RandomWeights(a.weight_type, a.n, k);
        a.weight = weights[m].data();
        biases[m] = RandomFloats(a.n, -1, 1);
        a.bias = (variant + m) % 3 == 0 ? biases[m].data() : nullptr;
        a.accumulate = (variant + m) % 2 == 1;
        old_dsts[m] = RandomFloats(rows * a.n, -1, 1);
      }
      ++variant;
      for (size_t m = 0; m < members; ++m) {
        want[m] = old_dsts[m];
        MatmulArgs alone = group[m];
        alone.dst = want[m].data();
        Matmul(alone, pool_, &scratch_);
      }
      for (size_t m = 0; m < members; ++m) {
        got[m] = old_dsts[m];
        group[m].dst = got[m].data();
      }
      MatmulGroup(group, pool_, &scratch_);
      for (size_t m = 0; m < members; ++m) {
        for (size_t i = 0; i < want[m].size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[m][i]), std::bit_cast<uint32_t>(want[m][i]))
              << "member " << m << TypeName(group[m].weight_type) << " n=" << group[m].n
              << " dst[" << i / group[m].n << "][" << i % group[m].n << "] = " << got[m][i]
              << ", want " << want[m][i];
        }
      }
    }
  }
}

// The GEMV loop itself over any column range, as workers of Matmul call it:
// each row of a call of 1..4 rows equals, bit for bit, a one-row call of
// that row over all columns, whatever the range's start (odd offsets,
// ranges shorter than the kernels' column step, single columns, ranges
// starting, ending or crossing inside a Q8_0P16 panel, ranges of 1 to 7
// panels, which the panel GEMVs take in steps of 4, 3, 2 and 1 streams) and
// for block counts that leave blocks after the avx512vnni block groups; it
// writes nothing outside the range. The panel types' one-row calls equal
// PortableP16Matmul.
TEST_P(QuantMatmulPathTest, GemvRowsEqualOneRowCallsOverAnyColumnRange) {
  const auto gemv = ActiveQuantGemv();
  constexpr size_t kRows = kQuantGemvMaxRows, kN = 7 * 16 + 5;
  const std::pair<size_t, size_t> ranges[] = {
      {0, kN},   {1, kN},  {3, kN - 2}, {5, 6},   {2, 11},  {kN - 1, kN}, {7, 10},
      {0, 16},   {16, kN}, {15, 17},    {14, 19}, {16, 17}, {0, 1},       {17, 22},
      {0, 48},   {16, 64}, {0, 112},    {20, 100}, {5, 80}, {32, 96}};
  for (size_t blocks : {1, 2, 3, 5, 6, 7, 9, 13}) {
    for (WeightType type : kQuantTypes) {
      const size_t k = blocks * kQuantBlock;
      auto src = RandomFloats(kRows * k, -2, 2);
      for (size_t i = 0; i < src.size(); i += 29) src[i] *= 15;
      const QuantizedRows x = QuantizeRows(src, kRows, k);
      const std::vector<uint8_t> weight = RandomWeights(type, kN, k);
      const auto bias = RandomFloats(kN, -1, 1);
      const auto old_dst = RandomFloats(kRows * kN, -1, 1);
      MatmulArgs args;
      args.weight = weight.data();
      args.weight_type = type;
      args.bias = bias.data();
      args.accumulate = true;
      args.k = k;
      args.n = kN;
      std::vector<float> alone = old_dst;
      for (size_t r = 0; r < kRows; ++r) {
        args.dst = alone.data() + r * kN;
        args.rows = 1;
        gemv(args, {.q = x.q.data() + r * k, .scales = x.scales.data() + r * blocks}, 0, kN);
      }
      if (IsPanelType(type)) {
        std::vector<float> portable = old_dst;
        args.dst = portable.data();
        args.rows = kRows;
        PortableP16Matmul(args, x.view(), 0, kRows, 0, kN);
        for (size_t i = 0; i < kRows * kN; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(alone[i]), std::bit_cast<uint32_t>(portable[i]))
              << GetParam()->name << " blocks=" << blocks << " one-row gemv dst[" << i
              << "] = " << alone[i] << ", PortableP16Matmul " << portable[i];
        }
      }
      for (size_t rows = 1; rows <= kRows; ++rows) {
        for (const auto& [begin, end] : ranges) {
          SCOPED_TRACE(std::string(GetParam()->name) + " rows=" + std::to_string(rows) +
                       " blocks=" + std::to_string(blocks) + " columns [" +
                       std::to_string(begin) + ", " + std::to_string(end) + ")" +
                       TypeName(type));
          std::vector<float> dst = old_dst;
          args.dst = dst.data();
          args.rows = rows;
          gemv(args, x.view(), begin, end);
          for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < kN; ++c) {
              const float want = c >= begin && c < end ? alone[r * kN + c] : old_dst[r * kN + c];
              ASSERT_EQ(std::bit_cast<uint32_t>(dst[r * kN + c]), std::bit_cast<uint32_t>(want))
                  << "row " << r << " column " << c << ": " << dst[r * kN + c] << ", want "
                  << want;
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Panel weights (Q8_0P16, Q4_0P16).

// Random activations (with outliers and an all-zero block) quantized by the
// documented rule, weights of the panel type's block type (`blocks`) and
// their panel form, bias and old dst.
struct P16Case {
  WeightType type;
  size_t rows, k, n;
  std::vector<float> src;
  QuantizedRows x;
  std::vector<uint8_t> blocks, p16;
  std::vector<float> bias, old_dst;
};

P16Case MakeP16Case(std::mt19937& rng, WeightType type, size_t rows, size_t k, size_t n) {
  std::uniform_real_distribution<float> dist(-2, 2);
  P16Case t;
  t.type = type;
  t.rows = rows;
  t.k = k;
  t.n = n;
  t.src.resize(rows * k);
  for (float& v : t.src) v = dist(rng);
  for (size_t i = 0; i < t.src.size(); i += 37) t.src[i] *= 20;
  std::fill(t.src.begin(), t.src.begin() + kQuantBlock, 0.0f);
  t.x = QuantizeRows(t.src, rows, k);
  t.blocks = RandomBlocks(rng, BlockTypeOf(type), n, k);
  t.p16 = RepackP16(type, t.blocks, n, k);
  t.bias.resize(n);
  for (float& v : t.bias) v = dist(rng);
  t.old_dst.resize(rows * n);
  for (float& v : t.old_dst) v = dist(rng);
  return t;
}

MatmulArgs P16Args(const P16Case& t, bool bias, bool accumulate, float* dst) {
  MatmulArgs args;
  args.src = t.src.data();
  args.weight = t.p16.data();
  args.weight_type = t.type;
  args.bias = bias ? t.bias.data() : nullptr;
  args.accumulate = accumulate;
  args.dst = dst;
  args.rows = t.rows;
  args.k = t.k;
  args.n = t.n;
  return args;
}

// PortableP16Matmul against double sums of the dequantized weights
// (gguf::DequantizeRow of the rows before the repack) times the dequantized
// int8 activations, up to f32 rounding of the scale-and-add steps; n not a
// multiple of 16 (a padded last panel).
TEST(PortableP16MatmulTest, MatchesDoubleReferenceOfDequantizedWeights) {
  std::mt19937 rng(2024);
  int variant = 0;
  for (WeightType type : kPanelTypes) {
    for (size_t n : {1, 15, 17, 67}) {
      for (size_t k : {32, 96, 288, 2080}) {
        for (size_t rows : {1, 2, 3, 4, 5, 16, 40}) {
          const bool bias = variant & 1, accumulate = variant & 2;
          ++variant;
          SCOPED_TRACE("rows=" + std::to_string(rows) + " k=" + std::to_string(k) +
                       " n=" + std::to_string(n) + (bias ? " bias" : "") +
                       (accumulate ? " accumulate" : "") + TypeName(type));
          const P16Case t = MakeP16Case(rng, type, rows, k, n);
          std::vector<float> w(n * k);
          ASSERT_TRUE(gguf::DequantizeRow(BlockTypeOf(type) == WeightType::kQ4_0
                                              ? gguf::GgmlType::kQ4_0
                                              : gguf::GgmlType::kQ8_0,
                                          t.blocks, absl::MakeSpan(w))
                          .ok());
          std::vector<float> dst = t.old_dst;
          PortableP16Matmul(P16Args(t, bias, accumulate, dst.data()), t.x.view(), 0, rows, 0, n);
          int reported = 0;
          for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < n; ++c) {
              double want = 0, magnitude = 0;
              for (size_t i = 0; i < k; ++i) {
                const double xi = double(t.x.scales[(r * k + i) / kQuantBlock]) * t.x.q[r * k + i];
                want += xi * w[c * k + i];
                magnitude += std::abs(xi * w[c * k + i]);
              }
              if (bias) {
                want += t.bias[c];
                magnitude += std::abs(t.bias[c]);
              }
              if (accumulate) {
                want += t.old_dst[r * n + c];
                magnitude += std::abs(t.old_dst[r * n + c]);
              }
              const double got = dst[r * n + c];
              const double tol = 1e-5 * magnitude + 1e-6;
              if (!(std::abs(got - want) <= tol) && reported++ < 5) {
                ADD_FAILURE() << "dst[" << r << "][" << c << "] = " << got << ", want " << want
                              << " (tolerance " << tol << ")";
              }
            }
          }
        }
      }
    }
  }
}

// PortableP16Matmul over any row and column range, ranges starting and
// ending inside panels included, writes exactly the quant_matmul.h order
// transcribed here from the Q8_0 / Q4_0 rows, bit for bit, and nothing
// outside the range; in both panel layouts, with odd and even block counts.
// (The panels' bytes are checked against the UAPI header's text in
// tests/base/quant_blocks_test.cc, so the references here and above check
// the kernels' reading of that layout.)
TEST(PortableP16MatmulTest, FollowsTheContractOrderOverAnyRange) {
  std::mt19937 rng(77);
  const size_t rows = 6, n = 37;
  for (WeightType type : kPanelTypes) {
    const bool q4 = BlockTypeOf(type) == WeightType::kQ4_0;
    const size_t block_bytes = q4 ? 18 : 34;
    for (size_t k : {32, 160, 192, 1056}) {
      SCOPED_TRACE("k=" + std::to_string(k) + TypeName(type));
      const size_t blocks = k / kQuantBlock;
      const P16Case t = MakeP16Case(rng, type, rows, k, n);
      ASSERT_EQ(t.p16.size(), 3 * blocks * 16 * block_bytes);
      // The contract's order, from the rows before the repack.
      std::vector<float> want = t.old_dst;
      for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < n; ++c) {
          float acc = +0.0f;
          for (size_t b = 0; b < blocks; ++b) {
            const uint8_t* block = t.blocks.data() + (c * blocks + b) * block_bytes;
            int32_t dot = 0;
            for (size_t i = 0; i < kQuantBlock; ++i) {
              const int32_t w = q4 ? (i < 16 ? block[2 + i] & 0xF : block[2 + i - 16] >> 4) - 8
                                   : int32_t{static_cast<int8_t>(block[2 + i])};
              dot += w * int32_t{t.x.q[r * k + kQuantBlock * b + i]};
            }
            uint16_t half;
            std::memcpy(&half, block, 2);
            acc = std::fmaf(static_cast<float>(dot),
                            Float16ToFloat(half) * t.x.scales[r * blocks + b], acc);
          }
          want[r * n + c] = t.old_dst[r * n + c] + t.bias[c] + acc;
        }
      }
      const std::pair<size_t, size_t> col_ranges[] = {{0, n},   {1, n},   {3, 13},  {15, 17},
                                                      {16, 32}, {31, 33}, {36, 37}, {0, 1},
                                                      {5, 6},   {17, 36}, {32, 37}};
      const std::pair<size_t, size_t> row_ranges[] = {{0, rows}, {1, 2}, {2, 5}, {5, 6}};
      for (const auto& [c0, c1] : col_ranges) {
        for (const auto& [r0, r1] : row_ranges) {
          std::vector<float> dst = t.old_dst;
          PortableP16Matmul(P16Args(t, true, true, dst.data()), t.x.view(), r0, r1, c0, c1);
          for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < n; ++c) {
              const bool inside = r >= r0 && r < r1 && c >= c0 && c < c1;
              const float expect = inside ? want[r * n + c] : t.old_dst[r * n + c];
              ASSERT_EQ(std::bit_cast<uint32_t>(dst[r * n + c]), std::bit_cast<uint32_t>(expect))
                  << "k=" << k << " rows [" << r0 << ", " << r1 << ") columns [" << c0 << ", " << c1
                  << "): dst[" << r << "][" << c << "] = " << dst[r * n + c] << ", want " << expect;
            }
          }
        }
      }
    }
  }
}

// Matmul with panel weights gives PortableP16Matmul's results bit for
// bit on every path, through the GEMV (1..4 rows), the GEMV passes and the
// GEMM, with odd n (a padded last panel), with and without bias and
// accumulation: prefill and decode agree whatever the CPU.
TEST_P(QuantMatmulPathTest, PanelMatmulEqualsPortableBitForBit) {
  std::mt19937 rng(31);
  for (WeightType type : kPanelTypes) {
    const size_t ks[] = {32, 288, 1120};
    const size_t ns[] = {67, 1, 33, 131};
    int variant = 0;
    for (size_t rows : {1, 2, 3, 4, 5, 8, 17, 300}) {
      const size_t k = ks[variant % 3], n = ns[variant % 4];
      for (int flags = 0; flags < 4; ++flags) {
        const bool bias = flags & 1, accumulate = flags & 2;
        SCOPED_TRACE(std::string(GetParam()->name) + " rows=" + std::to_string(rows) +
                     " k=" + std::to_string(k) + " n=" + std::to_string(n) + (bias ? " bias" : "") +
                     (accumulate ? " accumulate" : "") + TypeName(type));
        const P16Case t = MakeP16Case(rng, type, rows, k, n);
        std::vector<float> want = t.old_dst;
        PortableP16Matmul(P16Args(t, bias, accumulate, want.data()), t.x.view(), 0, rows, 0, n);
        std::vector<float> got = t.old_dst;
        Matmul(P16Args(t, bias, accumulate, got.data()), pool_, &scratch_);
        for (size_t i = 0; i < rows * n; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << "dst[" << i / n << "][" << i % n << "] = " << got[i] << ", want " << want[i];
        }
      }
      ++variant;
    }
  }
}

// The path's GEMM loop over any row x column range (ranges starting and
// ending inside panels, single columns) writes exactly PortableP16Matmul's
// values inside the range and nothing outside, for both panel types.
TEST_P(QuantMatmulPathTest, PanelGemmEqualsPortableOverAnyRange) {
  std::mt19937 rng(5);
  const size_t rows = 37, n = 45;
  for (WeightType type : kPanelTypes) {
    for (size_t k : {32, 224, 1056}) {
      SCOPED_TRACE("k=" + std::to_string(k) + TypeName(type));
      const P16Case t = MakeP16Case(rng, type, rows, k, n);
      std::vector<float> want = t.old_dst;
      PortableP16Matmul(P16Args(t, true, true, want.data()), t.x.view(), 0, rows, 0, n);
      const std::pair<size_t, size_t> col_ranges[] = {{0, n},   {3, 13},  {15, 17}, {16, 32},
                                                      {31, 45}, {44, 45}, {7, 8},   {1, 40}};
      const std::pair<size_t, size_t> row_ranges[] = {{0, rows}, {5, 6}, {3, 20}, {33, 37}};
      for (const auto& [c0, c1] : col_ranges) {
        for (const auto& [r0, r1] : row_ranges) {
          std::vector<float> dst = t.old_dst;
          GetParam()->gemm(P16Args(t, true, true, dst.data()), t.x.view(), r0, r1, c0, c1);
          for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < n; ++c) {
              const bool inside = r >= r0 && r < r1 && c >= c0 && c < c1;
              const float expect = inside ? want[r * n + c] : t.old_dst[r * n + c];
              ASSERT_EQ(std::bit_cast<uint32_t>(dst[r * n + c]), std::bit_cast<uint32_t>(expect))
                  << GetParam()->name << " k=" << k << " rows [" << r0 << ", " << r1
                  << ") columns [" << c0 << ", " << c1 << "): dst[" << r << "][" << c
                  << "] = " << dst[r * n + c] << ", want " << expect;
            }
          }
        }
      }
    }
  }
}

// The x86 GEMVs compute the same int32 lanes per block (vpdpbusd with the
// offset correction, or vpmaddubsw + vpmaddwd) and add the blocks' scaled
// lanes in the same order (avx512vnni's Q8_0 column pairs one block after
// the other in each half), so their Q8_0 results agree bit for bit: which of
// them a machine has does not change a Q8_0 model's decode. 15 columns: the
// avx512vnni GEMV's steps of 4 and 2 columns (column pairs) and of one.
TEST(QuantMatmulPathsTest, X86GemvsAgreeBitForBitOnQ8_0) {
#if defined(LNPU_X86_QUANT_MATMUL_PATHS)
  std::vector<const QuantMatmulPath*> paths;
  for (const QuantMatmulPath* path :
       {&kAvx512VnniQuantMatmulPath, &kAvxVnniQuantMatmulPath, &kAvx2QuantMatmulPath}) {
    if (path->supported()) paths.push_back(path);
  }
  if (paths.size() < 2) GTEST_SKIP() << "fewer than two x86 GEMV paths on this CPU";
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> dist(-2, 2);
  constexpr size_t kN = 15;
  for (size_t blocks : {1, 2, 3, 8, 9, 17}) {
    for (size_t rows = 1; rows <= kQuantGemvMaxRows; ++rows) {
      const size_t k = blocks * kQuantBlock;
      std::vector<float> src(rows * k), weight_f32(kN * k);
      for (float& v : src) v = dist(rng);
      for (float& v : weight_f32) v = dist(rng);
      std::vector<uint8_t> weight(kN * WeightBytes(WeightType::kQ8_0, k));
      ASSERT_TRUE(gguf::QuantizeRowQ8_0(weight_f32, absl::MakeSpan(weight)).ok());
      const QuantizedRows x = QuantizeRows(src, rows, k);
      MatmulArgs args;
      args.weight = weight.data();
      args.weight_type = WeightType::kQ8_0;
      args.rows = rows;
      args.k = k;
      args.n = kN;
      std::vector<std::vector<float>> dst(paths.size(), std::vector<float>(rows * kN));
      for (size_t p = 0; p < paths.size(); ++p) {
        args.dst = dst[p].data();
        paths[p]->gemv(args, x.view(), 0, kN);
      }
      for (size_t p = 1; p < paths.size(); ++p) {
        for (size_t i = 0; i < rows * kN; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(dst[p][i]), std::bit_cast<uint32_t>(dst[0][i]))
              << paths[p]->name << " vs " << paths[0]->name << ": blocks " << blocks
              << " rows " << rows << " dst[" << i << "] " << dst[p][i] << " vs " << dst[0][i];
        }
      }
    }
  }
#else
  GTEST_SKIP() << "no x86 quantized-matmul paths in this build (not x86-64, or "
                  "-Dx86_quant_matmul_paths=false)";
#endif
}

TEST(QuantMatmulPathsTest, PortablePathIsLastAndAlwaysSupported) {
  const auto paths = SupportedQuantMatmulPaths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.back(), &kHighwayQuantMatmulPath);
  EXPECT_NE(kHighwayQuantMatmulPath.gemv, nullptr);
  EXPECT_EQ(&ActiveQuantMatmulPath(), paths.front());
  for (const QuantMatmulPath* path : paths) {
    EXPECT_TRUE(path->supported()) << path->name;
    EXPECT_NE(path->gemm, nullptr) << path->name;
    EXPECT_GT(path->gemm_tile_rows, 0u) << path->name;
    EXPECT_GT(path->gemm_tile_cols, 0u) << path->name;
  }
}

#if defined(LNPU_X86_QUANT_MATMUL_PATHS)
// The flags the kernel reports for this CPU (the first "flags" line of
// /proc/cpuinfo; it lists a feature only when the OS supports its state):
// an oracle independent of the library's CPUID code.
std::set<std::string> KernelCpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    return {std::istream_iterator<std::string>(words), {}};
  }
  return {};
}
#endif

// The parameterized tests above run every supported path; on an x86 CPU
// with the instruction sets, the x86 paths must be among them, best first.
TEST(QuantMatmulPathsTest, X86PathsRunWhereTheCpuHasThem) {
#if defined(LNPU_X86_QUANT_MATMUL_PATHS)
  if (std::getenv(kX86FeaturesOffVariable) != nullptr) {
    GTEST_SKIP() << kX86FeaturesOffVariable << " hides features /proc/cpuinfo lists";
  }
  const std::set<std::string> flags = KernelCpuFlags();
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  auto has = [&flags](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (!flags.count(name)) return false;
    }
    return true;
  };
  const bool avx2 = has({"avx2", "fma", "f16c"});
  const struct {
    const QuantMatmulPath* path;
    bool cpu_has_it;
  } expected[] = {
      {&kAvx512VnniQuantMatmulPath,
       avx2 && has({"avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni"})},
      {&kAvxVnniQuantMatmulPath, avx2 && has({"avx_vnni"})},
      {&kAvx2QuantMatmulPath, avx2},
  };
  const auto paths = SupportedQuantMatmulPaths();
  auto previous = paths.begin();
  for (const auto& [path, cpu_has_it] : expected) {
    const auto it = std::find(paths.begin(), paths.end(), path);
    EXPECT_EQ(it != paths.end(), cpu_has_it) << path->name;
    if (it != paths.end()) {
      EXPECT_GE(it, previous) << path->name << " is listed before a better path";
      previous = it;
    }
  }
#else
  GTEST_SKIP() << "no x86 quantized-matmul paths in this build (not x86-64, or "
                  "-Dx86_quant_matmul_paths=false)";
#endif
}

// LNPU_EXPECTED_QUANT_PATHS="name,name,...": the supported paths, best
// first. tools/scripts/test.sh sets it for each CPU qemu emulates, so that a
// wrong feature check fails instead of leaving a path untested.
TEST(QuantMatmulPathsTest, SupportedPathsAreTheExpectedOnes) {
  const char* expected = std::getenv("LNPU_EXPECTED_QUANT_PATHS");
  if (expected == nullptr) GTEST_SKIP() << "LNPU_EXPECTED_QUANT_PATHS is not set";
  std::string names;
  for (const QuantMatmulPath* path : SupportedQuantMatmulPaths()) {
    if (!names.empty()) names += ',';
    names += path->name;
  }
  EXPECT_EQ(names, expected);
}

INSTANTIATE_TEST_SUITE_P(
    SupportedPaths, QuantMatmulPathTest,
    ::testing::ValuesIn(SupportedQuantMatmulPaths().begin(),
                        SupportedQuantMatmulPaths().end()),
    [](const ::testing::TestParamInfo<const QuantMatmulPath*>& info) {
      std::string name(info.param->name);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace lnpu::softnpu::compute
