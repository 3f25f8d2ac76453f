#include "base/crc32.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lnpu {
namespace {

absl::Span<const uint8_t> Bytes(const char* text) {
  return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(text), std::strlen(text));
}

// Bitwise CRC-32C, written from the definition, as the oracle for the
// table and hardware paths.
uint32_t BitwiseCrc32c(absl::Span<const uint8_t> bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    c ^= b;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

TEST(Crc32Test, MatchesTheStandardCheckValue) {
  const auto bytes = Bytes("123456789");
  EXPECT_EQ(Crc32(bytes), 0xCBF43926u);
  EXPECT_EQ(Crc32(bytes.subspan(4), Crc32(bytes.first(4))), 0xCBF43926u);
  EXPECT_EQ(Crc32({}), 0u);
}

TEST(Crc32cTest, MatchesTheStandardCheckValue) {
  const auto bytes = Bytes("123456789");
  EXPECT_EQ(Crc32c(bytes), 0xE3069283u);
  EXPECT_EQ(Crc32c(bytes.subspan(4), Crc32c(bytes.first(4))), 0xE3069283u);
  EXPECT_EQ(Crc32c({}), 0u);
}

TEST(Crc32cTest, AgreesWithTheDefinitionAtEveryLengthAndSplit) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(300);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  for (size_t n = 0; n <= data.size(); ++n) {
    const auto bytes = absl::MakeConstSpan(data).first(n);
    ASSERT_EQ(Crc32c(bytes), BitwiseCrc32c(bytes)) << "length " << n;
    const size_t split = n / 3;
    ASSERT_EQ(Crc32c(bytes.subspan(split), Crc32c(bytes.first(split))), BitwiseCrc32c(bytes))
        << "length " << n << " split " << split;
  }
}

TEST(Crc32cTest, NamesItsImplementation) {
  const std::string name = Crc32cImplementation();
  EXPECT_TRUE(name == "sse4.2" || name == "armv8-crc" || name == "table") << name;
}

TEST(Crc32cTest, DetectsASingleFlippedBit) {
  std::vector<uint8_t> data(4096, 0x5a);
  const uint32_t good = Crc32c(data);
  for (size_t bit : {0, 1000, 32767}) {
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(Crc32c(data), good) << bit;
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

}  // namespace
}  // namespace lnpu
