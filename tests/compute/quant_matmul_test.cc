// Every quantized-matmul path this machine can run (quant_matmul.h: AMX,
// AVX-512 VNNI, AVX-VNNI, Arm dot product, the portable Highway path)
// against an exact integer reference: the test quantizes the activations
// with the documented rule and sums d_w * d_x * (int32 block dot) in double.
// Paths may differ from it only by f32 rounding of the scale-and-add steps:
// |got - ref| <= 1e-5 * sum_b |d_w d_x| * sum_i |q_w q_x| + 1e-6.
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

  // n x k weights of `type` quantized from uniform values in [-1, 1].
  std::vector<uint8_t> RandomWeights(WeightType type, size_t n, size_t k) {
    const auto weight_f32 = RandomFloats(n * k, -1, 1);
    std::vector<uint8_t> weight(n * WeightBytes(type, k));
    EXPECT_TRUE((type == WeightType::kQ8_0 ? gguf::QuantizeRowQ8_0
                                           : gguf::QuantizeRowQ4_0)(
                    weight_f32, absl::MakeSpan(weight))
                    .ok());
    return weight;
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
                 (type == WeightType::kQ8_0 ? " q8_0" : " q4_0"));
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
      weight_rows.push_back(DecodeWeightRow(weight.data() + c * row_bytes, s.k, type));
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
    for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0}) {
      Check(s, type, variant & 1, variant & 2);
      ++variant;
    }
  }
}

// Activations large enough that every int8 value hits +-127 and weights at
// the ends of their range: the int32 block sums must not saturate.
TEST_P(QuantMatmulPathTest, ExtremeValuesDoNotSaturate) {
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0}) {
    for (size_t rows : {1, 3, 40}) {
      const size_t k = 4096, n = 20;
      std::vector<float> src(rows * k);
      for (size_t i = 0; i < src.size(); ++i) src[i] = (i % 3 == 0) ? -1e3f : 1e3f;
      std::vector<float> weight_f32(n * k);
      for (size_t i = 0; i < weight_f32.size(); ++i) {
        weight_f32[i] = (i % 3 == 0) ? -8.0f : 7.0f;
      }
      std::vector<uint8_t> weight(n * WeightBytes(type, k));
      ASSERT_TRUE((type == WeightType::kQ8_0 ? gguf::QuantizeRowQ8_0
                                             : gguf::QuantizeRowQ4_0)(
                      weight_f32, absl::MakeSpan(weight))
                      .ok());
      std::vector<float> deq(weight_f32.size());
      ASSERT_TRUE(gguf::DequantizeRow(type == WeightType::kQ8_0 ? gguf::GgmlType::kQ8_0
                                                               : gguf::GgmlType::kQ4_0,
                                      weight, absl::MakeSpan(deq))
                      .ok());
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
              << GetParam()->name << " rows=" << rows << " [" << r << "][" << c << "]";
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
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0}) {
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
              << GetParam()->name << (type == WeightType::kQ8_0 ? " q8_0" : " q4_0")
              << " rows=" << rows << " dst[" << r << "][" << c << "] = " << dst[r * n + c];
        }
      }
    }
  }
}

// The GEMV of 2..4 rows (a batched decode step), and the GEMV passes of up
// to the path's gemv_passes_max_rows rows, give each row exactly what a
// call with that row alone gives, bit for bit, on odd column counts and
// block counts that are not multiples of the kernels' block groups. The
// 8-row shape's k makes each worker's columns span several L2 pieces.
TEST_P(QuantMatmulPathTest, SeveralRowGemvEqualsOneRowCallsBitForBit) {
  const Shape shapes[] = {{2, 32, 1},    {3, 96, 5},    {4, 288, 67},    {2, 1120, 33},
                          {3, 416, 130}, {4, 2080, 19}, {5, 288, 67},    {8, 8192, 403},
                          {13, 96, 41},  {16, 416, 130}};
  int variant = 0;
  for (const Shape& s : shapes) {
    if (s.rows > GetParam()->gemv_passes_max_rows) continue;  // the GEMM's rows
    for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0}) {
      SCOPED_TRACE(std::string(GetParam()->name) + " rows=" + std::to_string(s.rows) +
                   " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) +
                   (type == WeightType::kQ8_0 ? " q8_0" : " q4_0"));
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

// The GEMV loop itself over any column range, as workers of Matmul call it:
// each row of a call of 1..4 rows equals, bit for bit, a one-row call of
// that row over all columns, whatever the range's start (odd offsets,
// ranges shorter than the kernels' column step, single columns) and for
// block counts that leave blocks after the avx512vnni block groups.
TEST_P(QuantMatmulPathTest, GemvRowsEqualOneRowCallsOverAnyColumnRange) {
  const auto gemv = ActiveQuantGemv();
  constexpr size_t kRows = kQuantGemvMaxRows, kN = 23;
  const std::pair<size_t, size_t> ranges[] = {{0, kN}, {1, kN}, {3, kN - 2}, {5, 6},
                                              {2, 11}, {kN - 1, kN}, {7, 10}};
  for (size_t blocks : {1, 2, 3, 5, 6, 7, 9, 13}) {
    for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0}) {
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
      for (size_t rows = 1; rows <= kRows; ++rows) {
        for (const auto& [begin, end] : ranges) {
          SCOPED_TRACE(std::string(GetParam()->name) + " rows=" + std::to_string(rows) +
                       " blocks=" + std::to_string(blocks) + " columns [" +
                       std::to_string(begin) + ", " + std::to_string(end) + ")" +
                       (type == WeightType::kQ8_0 ? " q8_0" : " q4_0"));
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

// The x86 GEMVs compute the same int32 lanes per block (vpdpbusd with the
// offset correction, or vpmaddubsw + vpmaddwd) and add the blocks' scaled
// lanes in the same order (avx512vnni's Q8_0 column pairs one block after
// the other in each half), so their Q8_0 results agree bit for bit: which of
// them a machine has does not change a Q8_0 model's decode. 15 columns: the
// avx512vnni GEMV's steps of 4 and 2 columns (column pairs) and of one.
TEST(QuantMatmulPathsTest, X86GemvsAgreeBitForBitOnQ8_0) {
#if defined(__x86_64__)
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
  GTEST_SKIP() << "not an x86-64 build";
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

// The parameterized tests above run every supported path; on an x86 CPU
// with the instruction sets, the x86 paths must be among them, best first.
TEST(QuantMatmulPathsTest, X86PathsRunWhereTheCpuHasThem) {
#if defined(__x86_64__)
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
  GTEST_SKIP() << "not an x86-64 build";
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
