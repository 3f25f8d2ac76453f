// Q8_0 / Q4_0 quantization against hand-computed blocks that follow the
// GGML block layouts (dequantization of every type: dequantize_test.cc).
#include "compiler_artifacts/gguf/dequantize.h"
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
}

}  // namespace
}  // namespace lnpu::gguf
