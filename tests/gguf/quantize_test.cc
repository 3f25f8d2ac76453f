// Q8_0 / Q4_0 quantization and the dequantization of every supported GGML
// type, against hand-computed blocks that follow the GGML block layouts.
#include "compiler_artifacts/gguf/quantize.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::gguf {
namespace {

using ::testing::HasSubstr;

void PutF16(float value, uint8_t* p) {
  const uint16_t bits = FloatToFloat16(value);
  std::memcpy(p, &bits, 2);
}

std::vector<float> RandomRow(size_t n, uint32_t seed, float range) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> row(n);
  for (float& x : row) x = dist(rng);
  return row;
}

TEST(QuantizeTest, Q8_0KnownBlock) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = -3.4f;
  x[2] = 2.5f;   // round half away from zero
  x[3] = -2.5f;
  x[31] = 0.49f;
  std::vector<uint8_t> q(34);
  ASSERT_TRUE(QuantizeRowQ8_0(x, absl::MakeSpan(q)).ok());
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  EXPECT_EQ(d, FloatToFloat16(1.0f));
  EXPECT_EQ(static_cast<int8_t>(q[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(q[3]), -3);
  EXPECT_EQ(static_cast<int8_t>(q[4]), 3);
  EXPECT_EQ(static_cast<int8_t>(q[5]), -3);
  EXPECT_EQ(static_cast<int8_t>(q[33]), 0);

  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, q, absl::MakeSpan(y)).ok());
  EXPECT_EQ(y[0], 127.0f);
  EXPECT_EQ(y[1], -3.0f);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[31], 0.0f);
}

TEST(QuantizeTest, Q4_0KnownBlock) {
  std::vector<float> x(32, 0.0f);
  x[0] = -16.0f;  // largest magnitude, negative: d = -16 / -8 = 2
  x[1] = 14.0f;   // 14 / 2 + 8.5 = 15.5 -> 15
  x[16] = 16.5f / 2;  // not the max: 4.125 + 8.5 = 12.625 -> 12
  x[17] = -1.0f;  // -0.5 + 8.5 = 8
  std::vector<uint8_t> q(18);
  ASSERT_TRUE(QuantizeRowQ4_0(x, absl::MakeSpan(q)).ok());
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  EXPECT_EQ(d, FloatToFloat16(2.0f));
  EXPECT_EQ(q[2 + 0], 0x0 | (12 << 4));  // element 0 low, element 16 high
  EXPECT_EQ(q[2 + 1], 15 | (8 << 4));
  EXPECT_EQ(q[2 + 2], 8 | (8 << 4));  // zeros: 0 / 2 + 8.5 -> 8

  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_0, q, absl::MakeSpan(y)).ok());
  EXPECT_EQ(y[0], -16.0f);
  EXPECT_EQ(y[1], 14.0f);
  EXPECT_EQ(y[16], 8.0f);
  EXPECT_EQ(y[17], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
}

TEST(QuantizeTest, Q4_0PositiveMaxClampsAt15) {
  std::vector<float> x(32, 0.0f);
  x[5] = 8.0f;  // d = -1: 8 -> -8 + 8.5 = 0; -8 would give 16.5 -> 15
  x[6] = -8.0f;
  std::vector<uint8_t> q(18);
  ASSERT_TRUE(QuantizeRowQ4_0(x, absl::MakeSpan(q)).ok());
  EXPECT_EQ(q[2 + 5] & 0xF, 0);
  EXPECT_EQ(q[2 + 6] & 0xF, 15);
}

TEST(QuantizeTest, ZeroBlocksQuantizeToZero) {
  const std::vector<float> x(64, 0.0f);
  std::vector<uint8_t> q8(68), q4(36);
  ASSERT_TRUE(QuantizeRowQ8_0(x, absl::MakeSpan(q8)).ok());
  ASSERT_TRUE(QuantizeRowQ4_0(x, absl::MakeSpan(q4)).ok());
  std::vector<float> y(64, 1.0f);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, q8, absl::MakeSpan(y)).ok());
  EXPECT_EQ(y, x);
  std::fill(y.begin(), y.end(), 1.0f);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_0, q4, absl::MakeSpan(y)).ok());
  EXPECT_EQ(y, x);
}

// Round trips stay within half a quantization step of the block's scale
// (plus the f16 rounding of the scale itself).
TEST(QuantizeTest, RoundTripErrorBounds) {
  const std::vector<float> x = RandomRow(32 * 64, 7, 3.0f);
  std::vector<uint8_t> q8(64 * 34), q4(64 * 18);
  ASSERT_TRUE(QuantizeRowQ8_0(x, absl::MakeSpan(q8)).ok());
  ASSERT_TRUE(QuantizeRowQ4_0(x, absl::MakeSpan(q4)).ok());
  std::vector<float> y8(x.size()), y4(x.size());
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, q8, absl::MakeSpan(y8)).ok());
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_0, q4, absl::MakeSpan(y4)).ok());
  for (size_t b = 0; b < 64; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    for (size_t j = 0; j < 32; ++j) {
      const size_t i = b * 32 + j;
      // Step d = amax / 127; f16 scale error 2^-11 relative on 127 steps.
      EXPECT_LE(std::fabs(y8[i] - x[i]), amax / 127 * (0.5f + 127.0f / 2048) + 1e-6f) << i;
      // Step d = amax / 8; the largest positive value may clamp a full step.
      EXPECT_LE(std::fabs(y4[i] - x[i]), amax / 8 * (1.0f + 8.0f / 2048) + 1e-6f) << i;
    }
  }
  // Re-quantizing a dequantized Q8_0 row reproduces it exactly.
  std::vector<uint8_t> again(q8.size());
  ASSERT_TRUE(QuantizeRowQ8_0(y8, absl::MakeSpan(again)).ok());
  EXPECT_EQ(again, q8);
}

TEST(QuantizeTest, RejectsBadSizesAndValues) {
  std::vector<float> x(33, 1.0f);
  std::vector<uint8_t> q(68);
  absl::Status s = QuantizeRowQ8_0(x, absl::MakeSpan(q));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("multiple of the 32"));
  x.resize(64);
  s = QuantizeRowQ4_0(x, absl::MakeSpan(q));  // needs 36 bytes
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("36"));
  x[3] = std::nanf("");
  s = QuantizeRowQ8_0(x, absl::MakeSpan(q));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("finite"));
  x[3] = INFINITY;
  EXPECT_EQ(QuantizeRowQ4_0(x, absl::MakeSpan(q).subspan(0, 36)).code(),
            absl::StatusCode::kInvalidArgument);

  std::vector<float> y(32);
  EXPECT_EQ(DequantizeRow(GgmlType::kQ8_0, absl::MakeSpan(q).subspan(0, 33),
                          absl::MakeSpan(y)).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> y300(300);
  std::vector<uint8_t> k(210 * 2);
  EXPECT_EQ(DequantizeRow(GgmlType::kQ6_K, k, absl::MakeSpan(y300)).code(),
            absl::StatusCode::kInvalidArgument);
  s = DequantizeRow(GgmlType::kQ5_K, k, absl::MakeSpan(y));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("Q5_K"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("Q6_K"));
}

TEST(QuantizeTest, DequantizesFloatTypes) {
  const float values[3] = {1.5f, -2.0f, 0.25f};
  std::vector<uint8_t> f32(12), f16(6), bf16(6);
  std::memcpy(f32.data(), values, 12);
  for (int i = 0; i < 3; ++i) {
    const uint16_t h = FloatToFloat16(values[i]);
    const uint16_t b = FloatToBFloat16(values[i]);
    std::memcpy(f16.data() + 2 * i, &h, 2);
    std::memcpy(bf16.data() + 2 * i, &b, 2);
  }
  const std::vector<float> expected(values, values + 3);
  std::vector<float> y(3);
  for (auto [type, bytes] : {std::pair{GgmlType::kF32, f32}, std::pair{GgmlType::kF16, f16},
                             std::pair{GgmlType::kBF16, bf16}}) {
    ASSERT_TRUE(DequantizeRow(type, bytes, absl::MakeSpan(y)).ok());
    EXPECT_EQ(y, expected);
  }
}

// A block_q4_K built field by field: d = 0.5, dmin = 0.25, sub-block j has
// scale 3 + 7j (6 bits) and min 60 - j, nibble of element i is i % 16.
TEST(QuantizeTest, Q4_KHandBuiltBlock) {
  std::vector<uint8_t> block(144, 0);
  PutF16(0.5f, block.data());
  PutF16(0.25f, block.data() + 2);
  uint8_t scale[8], min[8];
  for (int j = 0; j < 8; ++j) {
    scale[j] = static_cast<uint8_t>(3 + 7 * j);  // 3..52
    min[j] = static_cast<uint8_t>(60 - j);        // 60..53
  }
  uint8_t* packed = block.data() + 4;
  for (int j = 0; j < 4; ++j) {
    // Sub-blocks 0..3: low 6 bits of bytes j (scale) and j + 4 (min); their
    // top two bits carry the high bits of sub-block j + 4.
    packed[j] = static_cast<uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    // Sub-blocks 4..7: low nibbles in byte j + 8 (scale low, min high).
    packed[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0xF) | ((min[j + 4] & 0xF) << 4));
  }
  // 4 chunks of 64 elements: 32 bytes each, low nibbles first sub-block,
  // high nibbles the second.
  uint8_t* qs = block.data() + 16;
  for (int chunk = 0; chunk < 4; ++chunk) {
    for (int l = 0; l < 32; ++l) {
      const int lo = (chunk * 64 + l) % 16;
      const int hi = (chunk * 64 + 32 + l) % 16;
      qs[chunk * 32 + l] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
  std::vector<float> y(256);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_K, block, absl::MakeSpan(y)).ok());
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32;
    const float expected = 0.5f * scale[sub] * (i % 16) - 0.25f * min[sub];
    EXPECT_EQ(y[i], expected) << i;
  }
}

// A block_q6_K built field by field: element i has the 6-bit value
// q = (5 * i) % 64, sub-block (16 elements) s has scale s - 8, d = 0.125.
TEST(QuantizeTest, Q6_KHandBuiltBlock) {
  std::vector<uint8_t> block(210, 0);
  uint8_t* ql = block.data();
  uint8_t* qh = block.data() + 128;
  auto* scales = reinterpret_cast<int8_t*>(block.data() + 192);
  PutF16(0.125f, block.data() + 208);
  for (int s = 0; s < 16; ++s) scales[s] = static_cast<int8_t>(s - 8);
  auto value = [](int i) { return (5 * i) % 64; };
  // Each half of 128 elements: element n*128 + l + 32*g (g = 0..3) has its
  // low nibble in ql[64n + l + 32*(g % 2)] (low nibble for g < 2, high for
  // g >= 2) and its high two bits at bit 2g of qh[32n + l].
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 32; ++l) {
      for (int g = 0; g < 4; ++g) {
        const int q = value(n * 128 + l + 32 * g);
        uint8_t& low = ql[64 * n + l + 32 * (g % 2)];
        low |= static_cast<uint8_t>(g < 2 ? (q & 0xF) : (q & 0xF) << 4);
        qh[32 * n + l] |= static_cast<uint8_t>((q >> 4) << (2 * g));
      }
    }
  }
  std::vector<float> y(256);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ6_K, block, absl::MakeSpan(y)).ok());
  for (int i = 0; i < 256; ++i) {
    const float expected = 0.125f * static_cast<float>(i / 16 - 8) * (value(i) - 32);
    EXPECT_EQ(y[i], expected) << i;
  }
}

}  // namespace
}  // namespace lnpu::gguf
