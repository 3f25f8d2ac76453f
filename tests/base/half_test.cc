#include "base/half.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace lnpu {
namespace {

uint32_t Bits(float value) { return std::bit_cast<uint32_t>(value); }
float FromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(Float16Test, KnownValues) {
  EXPECT_EQ(FloatToFloat16(0.0f), 0x0000);
  EXPECT_EQ(FloatToFloat16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToFloat16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToFloat16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToFloat16(0.5f), 0x3800);
  EXPECT_EQ(FloatToFloat16(65504.0f), 0x7bff);  // Largest finite.
  EXPECT_EQ(FloatToFloat16(0x1.0p-14f), 0x0400);  // Smallest normal.
  EXPECT_EQ(Float16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(Float16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(Float16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(Bits(Float16ToFloat(0x8000)), 0x80000000u);
}

TEST(Float16Test, Subnormals) {
  EXPECT_EQ(Float16ToFloat(0x0001), 0x1.0p-24f);
  EXPECT_EQ(Float16ToFloat(0x03ff), 1023 * 0x1.0p-24f);
  EXPECT_EQ(Float16ToFloat(0x8200), -512 * 0x1.0p-24f);
  EXPECT_EQ(FloatToFloat16(0x1.0p-24f), 0x0001);
  EXPECT_EQ(FloatToFloat16(1023 * 0x1.0p-24f), 0x03ff);
  EXPECT_EQ(FloatToFloat16(-3 * 0x1.0p-24f), 0x8003);
  // Half of the smallest subnormal ties to even (zero); just above rounds up.
  EXPECT_EQ(FloatToFloat16(0x1.0p-25f), 0x0000);
  EXPECT_EQ(FloatToFloat16(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(FloatToFloat16(1.5f * 0x1.0p-24f), 0x0002);  // Tie: 1 -> 2 (even).
  EXPECT_EQ(FloatToFloat16(2.5f * 0x1.0p-24f), 0x0002);  // Tie: stays 2 (even).
  EXPECT_EQ(FloatToFloat16(0x1.0p-30f), 0x0000);
  EXPECT_EQ(FloatToFloat16(-0x1.0p-30f), 0x8000);
  // Largest subnormal rounding up into the smallest normal.
  EXPECT_EQ(FloatToFloat16(0x1.fffp-15f), 0x0400);
  // Float subnormals are far below the binary16 range.
  EXPECT_EQ(FloatToFloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(Float16Test, RoundsToNearestEven) {
  EXPECT_EQ(FloatToFloat16(1.0f + 0x1.0p-11f), 0x3c00);      // Tie, even below.
  EXPECT_EQ(FloatToFloat16(1.0f + 3 * 0x1.0p-11f), 0x3c02);  // Tie, even above.
  EXPECT_EQ(FloatToFloat16(1.0f + 0x1.8p-11f), 0x3c01);      // Above the tie.
  EXPECT_EQ(FloatToFloat16(65519.0f), 0x7bff);               // Below the overflow tie.
}

TEST(Float16Test, InfinityOverflowAndNan) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToFloat16(kInf), 0x7c00);
  EXPECT_EQ(FloatToFloat16(-kInf), 0xfc00);
  EXPECT_EQ(FloatToFloat16(65520.0f), 0x7c00);  // Overflow tie rounds to infinity.
  EXPECT_EQ(FloatToFloat16(1e10f), 0x7c00);
  EXPECT_EQ(FloatToFloat16(-std::numeric_limits<float>::max()), 0xfc00);
  EXPECT_EQ(Float16ToFloat(0x7c00), kInf);
  EXPECT_EQ(Float16ToFloat(0xfc00), -kInf);

  const uint16_t nan = FloatToFloat16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  // A signalling NaN whose payload lives only in the low bits stays a NaN.
  const uint16_t low_payload = FloatToFloat16(FromBits(0xff800001u));
  EXPECT_EQ(low_payload & 0xfe00, 0xfe00);
  EXPECT_TRUE(std::isnan(Float16ToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(Float16ToFloat(0x7c01)));
  EXPECT_TRUE(std::signbit(Float16ToFloat(0xfe00)));
}

TEST(Float16Test, EveryHalfRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    const float value = Float16ToFloat(half);
    if ((half & 0x7c00) == 0x7c00 && (half & 0x03ff) != 0) {
      ASSERT_TRUE(std::isnan(value)) << std::hex << bits;
      ASSERT_TRUE(std::isnan(Float16ToFloat(FloatToFloat16(value)))) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(FloatToFloat16(value), half) << std::hex << bits;
  }
}

// The compiler's binary16 type: g++ 12 has _Float16 in C++ on x86-64 but
// not on aarch64, where __fp16 (IEEE format) converts with the FPU; clang
// 14 has neither on x86-64 (the sanitizer build), where the GCC builds run
// the check.
#if defined(__aarch64__)
using CompilerHalf = __fp16;
#define LNPU_COMPILER_HALF 1
#elif defined(__FLT16_MAX__)
using CompilerHalf = _Float16;
#define LNPU_COMPILER_HALF 1
#endif

TEST(Float16Test, MatchesTheCompilersConversion) {
#if !defined(LNPU_COMPILER_HALF)
  GTEST_SKIP() << "this compiler has no binary16 type on this target";
#else
  // The compiler's conversion (libgcc's _Float16 on x86-64, FCVT on aarch64)
  // rounds to nearest even: an independent reference over random bit
  // patterns, weighted towards the binary16 range.
  std::mt19937 random(7);
  for (int i = 0; i < 400000; ++i) {
    uint32_t bits = random();
    if (i % 2 == 0) bits = (bits & 0x807fffffu) | ((100u + (bits >> 23) % 50u) << 23);
    const float value = FromBits(bits);
    if (std::isnan(value)) continue;
    const uint16_t expected = std::bit_cast<uint16_t>(static_cast<CompilerHalf>(value));
    ASSERT_EQ(FloatToFloat16(value), expected) << std::hexfloat << value;
  }
#endif
}

TEST(BFloat16Test, ConversionsAndRounding) {
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808000u)), 0x3f80);  // Tie, even below.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f818000u)), 0x3f82);  // Tie, even above.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808001u)), 0x3f81);  // Above the tie.
  // Subnormals keep their top bits.
  EXPECT_EQ(BFloat16ToFloat(0x0001), FromBits(0x00010000u));
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00010000u)), 0x0001);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00008000u)), 0x0000);  // Tie to even zero.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x80018000u)), 0x8002);
  // Infinity, overflow and NaN.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToBFloat16(kInf), 0x7f80);
  EXPECT_EQ(FloatToBFloat16(-kInf), 0xff80);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(BFloat16ToFloat(0xff80), -kInf);
  const uint16_t nan = FloatToBFloat16(FromBits(0x7f800001u));  // Payload only in low bits.
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(nan)));
  EXPECT_EQ(nan, 0x7fc0);
}

TEST(BFloat16Test, EveryBFloatRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t bfloat = static_cast<uint16_t>(bits);
    const float value = BFloat16ToFloat(bfloat);
    ASSERT_EQ(Bits(value), bits << 16);
    if (std::isnan(value)) {
      ASSERT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(value))));
    } else {
      ASSERT_EQ(FloatToBFloat16(value), bfloat) << std::hex << bits;
    }
  }
}

TEST(HalfTest, UsableInConstantExpressions) {
  static_assert(FloatToFloat16(1.0f) == 0x3c00);
  static_assert(Float16ToFloat(0x0001) == 0x1.0p-24f);
  static_assert(FloatToBFloat16(-2.0f) == 0xc000);
  SUCCEED();
}

}  // namespace
}  // namespace lnpu
