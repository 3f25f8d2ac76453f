// MATMUL with Q6_K weights (quant_matmul_q6_k.h): the portable loop
// against double sums of the dequantized weights (gguf::DequantizeRow, the
// compiler's reading of GGUF Q6_K) and against a transcription of the
// contract's f32 order bit for bit; the vector loops this CPU runs
// (AVX-512, AVX2, NEON with and without SDOT) and Matmul (GEMV passes
// for every row count, on the pool) against the portable loop bit for bit;
// extreme q, scales and activations without int16/int32 overflow.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "base/half.h"
#include "base/quant_blocks.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "gtest/gtest.h"
#include "kernel_iface/softnpu/compute/kernels.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/quant_matmul_q6_k.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {
namespace {

// Activations quantized by the documented rule (quant_matmul.h).
struct Activations {
  std::vector<int8_t> q;
  std::vector<float> scales;
  QuantizedActivations view() const { return {.q = q.data(), .scales = scales.data()}; }
};

Activations Quantize(const std::vector<float>& src, size_t rows, size_t k) {
  Activations out;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < k / kQuantBlock; ++b) {
      const float* x = src.data() + r * k + b * kQuantBlock;
      float amax = 0;
      for (size_t j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::abs(x[j]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      out.scales.push_back(d);
      for (size_t j = 0; j < kQuantBlock; ++j) {
        out.q.push_back(static_cast<int8_t>(std::nearbyint(x[j] * id)));
      }
    }
  }
  return out;
}

// One Q6_K matmul: rows x k activations, n x k random Q6_K weights (every
// byte random but the f16 block scale, a small positive or negative
// finite), bias and an old dst.
struct Case {
  Case(size_t rows, size_t k, size_t n) : rows(rows), k(k), n(n) {}
  size_t rows, k, n;
  std::vector<float> src;
  Activations x;
  std::vector<uint8_t> weight;
  std::vector<float> bias, old_dst;
};

Case MakeCase(std::mt19937& rng, size_t rows, size_t k, size_t n) {
  std::uniform_real_distribution<float> dist(-2, 2);
  std::uniform_int_distribution<int> byte(0, 255);
  Case t(rows, k, n);
  t.src.resize(rows * k);
  for (float& v : t.src) v = dist(rng);
  for (size_t i = 0; i < t.src.size(); i += 37) t.src[i] *= 20;  // outliers
  std::fill(t.src.begin(), t.src.begin() + kQuantBlock, 0.0f);    // a zero block
  t.x = Quantize(t.src, rows, k);
  t.weight.resize(n * k / kQ6_KBlock * kQ6_KBlockBytes);
  for (uint8_t& b : t.weight) b = static_cast<uint8_t>(byte(rng));
  for (size_t block = 0; block < t.weight.size() / kQ6_KBlockBytes; ++block) {
    const uint16_t d = FloatToFloat16(dist(rng) * 0.01f);
    std::memcpy(t.weight.data() + block * kQ6_KBlockBytes + kQ6_KDOffset, &d, 2);
  }
  t.bias.resize(n);
  for (float& v : t.bias) v = dist(rng);
  t.old_dst.resize(rows * n);
  for (float& v : t.old_dst) v = dist(rng);
  return t;
}

MatmulArgs Args(const Case& t, bool bias, bool accumulate, float* dst, size_t rows) {
  MatmulArgs args;
  args.src = t.src.data();
  args.weight = t.weight.data();
  args.weight_type = WeightType::kQ6_K;
  args.bias = bias ? t.bias.data() : nullptr;
  args.accumulate = accumulate;
  args.dst = dst;
  args.rows = static_cast<uint32_t>(rows);
  args.k = static_cast<uint32_t>(t.k);
  args.n = static_cast<uint32_t>(t.n);
  return args;
}

// Every loop this machine runs, by name.
std::vector<std::pair<std::string, Q6_KGemvFn>> Loops() {
  std::vector<std::pair<std::string, Q6_KGemvFn>> loops = {{"portable", PortableQ6_KGemv}};
  if (Avx512Q6_KGemv() != nullptr) loops.emplace_back("avx512vnni", Avx512Q6_KGemv());
  if (Avx2Q6_KGemv() != nullptr) loops.emplace_back("avx2", Avx2Q6_KGemv());
  if (NeonDotprodQ6_KGemv() != nullptr) loops.emplace_back("neon-dotprod", NeonDotprodQ6_KGemv());
  if (NeonQ6_KGemv() != nullptr) loops.emplace_back("neon", NeonQ6_KGemv());
  return loops;
}

// The contract's order (quant_matmul_q6_k.h) transcribed from the
// dequantizer's reading of the bytes: q[i] - 32 = round(w[i] / (d * sc)).
std::vector<float> ContractOrder(const Case& t, bool bias, bool accumulate) {
  std::vector<float> out = t.old_dst;
  const size_t blocks = t.k / kQ6_KBlock, row_bytes = blocks * kQ6_KBlockBytes;
  for (size_t r = 0; r < t.rows; ++r) {
    for (size_t c = 0; c < t.n; ++c) {
      float acc[16] = {};
      for (size_t s = 0; s < blocks; ++s) {
        const uint8_t* block = t.weight.data() + c * row_bytes + s * kQ6_KBlockBytes;
        uint8_t q[kQ6_KBlock];
        Q6_KBlockQuants(block, q);
        const auto* sc = reinterpret_cast<const int8_t*>(block + kQ6_KScalesOffset);
        float part[16] = {};
        for (size_t b = 0; b < 8; ++b) {
          for (size_t i = 0; i < 8; ++i) {
            int32_t sum = 0;
            for (size_t e = 4 * i; e < 4 * i + 4; ++e) {
              sum += (q[32 * b + e] - 32) * t.x.q[r * t.k + 256 * s + 32 * b + e];
            }
            float& lane = part[8 * (b % 2) + i];
            lane = std::fmaf(static_cast<float>(sc[2 * b + i / 4] * sum),
                             t.x.scales[r * t.k / 32 + 8 * s + b], lane);
          }
        }
        uint16_t half;
        std::memcpy(&half, block + kQ6_KDOffset, 2);
        for (size_t i = 0; i < 16; ++i) acc[i] = std::fmaf(part[i], Float16ToFloat(half), acc[i]);
      }
      float tt[8];
      for (size_t i = 0; i < 8; ++i) tt[i] = acc[i] + acc[i + 8];
      const float sum = ((tt[0] + tt[4]) + (tt[2] + tt[6])) + ((tt[1] + tt[5]) + (tt[3] + tt[7]));
      float base = accumulate ? t.old_dst[r * t.n + c] : 0.0f;
      if (bias) base += t.bias[c];
      out[r * t.n + c] = base + sum;
    }
  }
  return out;
}

void ExpectBitsEqual(const std::vector<float>& got, const std::vector<float>& want,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " = " << got[i] << ", want " << want[i];
    }
  }
}

TEST(Q6_KMatmulTest, PortableMatchesDoubleReferenceOfDequantizedWeights) {
  std::mt19937 rng(61);
  int variant = 0;
  for (size_t k : {256, 768, 2048}) {
    for (size_t n : {1, 5, 33}) {
      for (size_t rows : {1, 2, 3, 4}) {
        const bool bias = variant & 1, accumulate = variant & 2;
        ++variant;
        SCOPED_TRACE("rows=" + std::to_string(rows) + " k=" + std::to_string(k) +
                     " n=" + std::to_string(n));
        const Case t = MakeCase(rng, rows, k, n);
        std::vector<float> w(n * k);
        ASSERT_TRUE(gguf::DequantizeRow(gguf::GgmlType::kQ6_K, t.weight, absl::MakeSpan(w)).ok());
        std::vector<float> dst = t.old_dst;
        PortableQ6_KGemv(Args(t, bias, accumulate, dst.data(), rows), t.x.view(), 0, n);
        int reported = 0;
        for (size_t r = 0; r < rows; ++r) {
          for (size_t c = 0; c < n; ++c) {
            double want = 0, magnitude = 0;
            for (size_t i = 0; i < k; ++i) {
              const double xi = double(t.x.scales[(r * k + i) / kQuantBlock]) * t.x.q[r * k + i];
              want += xi * w[c * k + i];
              magnitude += std::abs(xi * w[c * k + i]);
            }
            if (bias) want += t.bias[c], magnitude += std::abs(t.bias[c]);
            if (accumulate) want += t.old_dst[r * n + c], magnitude += std::abs(t.old_dst[r * n + c]);
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

// Every loop follows the contract's order bit for bit over any column
// range, and writes nothing outside it.
TEST(Q6_KMatmulTest, LoopsFollowTheContractOrderOverAnyRange) {
  std::mt19937 rng(62);
  const std::vector<std::pair<std::string, Q6_KGemvFn>> loops = Loops();
  for (size_t rows : {1, 2, 3, 4}) {
    for (size_t k : {256, 1280}) {
      const Case t = MakeCase(rng, rows, k, 19);
      for (int variant = 0; variant < 4; ++variant) {
        const bool bias = variant & 1, accumulate = variant & 2;
        const std::vector<float> want = ContractOrder(t, bias, accumulate);
        for (const auto& [name, loop] : loops) {
          for (const auto& [c0, c1] : {std::pair<size_t, size_t>{0, 19}, {1, 2}, {3, 17}, {18, 19}}) {
            std::vector<float> dst = t.old_dst;
            loop(Args(t, bias, accumulate, dst.data(), rows), t.x.view(), c0, c1);
            std::vector<float> expect = t.old_dst;
            for (size_t r = 0; r < rows; ++r) {
              for (size_t c = c0; c < c1; ++c) expect[r * t.n + c] = want[r * t.n + c];
            }
            ExpectBitsEqual(dst, expect,
                            name + " rows=" + std::to_string(rows) + " k=" + std::to_string(k) +
                                " columns [" + std::to_string(c0) + ", " + std::to_string(c1) +
                                ")" + (bias ? " bias" : "") + (accumulate ? " accumulate" : ""));
          }
        }
      }
    }
  }
}

// Matmul takes Q6_K through GEMV passes for every row count (there is no
// Q6_K GEMM): each row bit for bit what a one-row call gives, split across
// the pool's workers.
TEST(Q6_KMatmulTest, MatmulOfAnyRowCountEqualsOneRowCalls) {
  std::mt19937 rng(63);
  WorkerPool pool(3);
  KernelScratch scratch;
  for (size_t rows : {1, 4, 5, 16, 41}) {
    const Case t = MakeCase(rng, rows, 1024, 70);
    MatmulArgs args = Args(t, true, false, nullptr, rows);
    EXPECT_TRUE(RunsOnQuantGemv(args)) << rows;
    std::vector<float> dst(rows * t.n, -1.0f);
    args.dst = dst.data();
    Matmul(args, pool, &scratch);
    const std::vector<float> want = ContractOrder(t, true, false);
    ExpectBitsEqual(dst, want, "Matmul rows=" + std::to_string(rows));
  }
}

// The extremes of every factor: q 0 and 63 (q - 32 = -32, 31), sub-block
// scales -128 and 127, activations +-127 (a block of +-amax): int16 pair
// sums and int32 lanes must not wrap. Compared with exact integer sums.
TEST(Q6_KMatmulTest, ExtremeValuesDoNotOverflow) {
  const size_t k = 512, n = 4;
  for (const auto& [q, sc, x] : {std::tuple{0, -128, 127.0f}, {63, 127, 127.0f},
                                 {0, 127, -127.0f}, {63, -128, -127.0f}}) {
    Case t(1, k, n);
    t.src.assign(k, x);
    t.x = Quantize(t.src, 1, k);
    t.weight.assign(n * k / kQ6_KBlock * kQ6_KBlockBytes, 0);
    for (size_t block = 0; block < t.weight.size() / kQ6_KBlockBytes; ++block) {
      uint8_t* b = t.weight.data() + block * kQ6_KBlockBytes;
      std::memset(b, (q & 0xF) * 0x11, 128);              // both nibbles
      std::memset(b + 128, (q >> 4) * 0x55, 64);          // all four 2-bit fields
      std::memset(b + kQ6_KScalesOffset, static_cast<uint8_t>(sc), 16);
      const uint16_t d = FloatToFloat16(1.0f);
      std::memcpy(b + kQ6_KDOffset, &d, 2);
    }
    t.bias.assign(n, 0.0f);
    t.old_dst.assign(n, 0.0f);
    // Every element is sc * (q - 32) * x with x = 127 * d_x = x: exact.
    const double want = double(k) * sc * (q - 32) * x;
    for (const auto& [name, loop] : Loops()) {
      std::vector<float> dst(n, 0.0f);
      loop(Args(t, false, false, dst.data(), 1), t.x.view(), 0, n);
      for (size_t c = 0; c < n; ++c) {
        EXPECT_EQ(dst[c], want) << name << " q=" << q << " sc=" << sc << " x=" << x;
      }
    }
  }
}

}  // namespace
}  // namespace lnpu::softnpu::compute
