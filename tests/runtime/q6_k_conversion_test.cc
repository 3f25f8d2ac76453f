#include "runtime/q6_k_conversion.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/quant_blocks.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/quantize.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::runtime {
namespace {

using ::testing::HasSubstr;

// A Q6_K matrix of `rows` x `row_len` at `offset`.
WeightMatrix Q6_K(uint64_t offset, uint32_t rows, uint32_t row_len) {
  return {.offset = offset, .rows = rows, .row_len = row_len, .dtype = LNPU_DTYPE_Q6_K};
}

TEST(Q6_KConversionTest, NothingToConvertCopiesTheWholeSection) {
  const Q8_0Layout layout = PlanQ8_0Conversions(1000, {{0, 1000}}, {});
  EXPECT_TRUE(layout.conversions.empty());
  EXPECT_EQ(layout.copied_bytes, 1000u);
  EXPECT_EQ(layout.buffer_bytes, 1000u);
}

// The output projection ends the section (what npu-compile writes): its
// Q8_0 form replaces its Q6_K bytes, which are not copied.
TEST(Q6_KConversionTest, LastWeightIsConvertedInPlace) {
  const WeightMatrix output = Q6_K(4096, 32, 256);  // 6720 bytes as Q6_K
  const Q8_0Layout layout =
      PlanQ8_0Conversions(4096 + 6720, {{0, 4000}, {4000, 96}, {4096, 6720}}, {output});
  ASSERT_EQ(layout.conversions.size(), 1u);
  EXPECT_EQ(layout.conversions[0].q8_0_offset, 4096u);
  EXPECT_EQ(layout.copied_bytes, 4096u);
  EXPECT_EQ(layout.buffer_bytes, 4096u + 32 * 8 * 34);  // 8704, a multiple of 64
}

// A weight after the matrix (or a misaligned matrix) keeps the section
// whole: the Q8_0 forms follow it, each 64-byte aligned.
TEST(Q6_KConversionTest, OthersFollowTheSectionAligned) {
  const WeightMatrix first = Q6_K(128, 1, 256);  // 210 bytes, 272 as Q8_0
  const WeightMatrix second = Q6_K(384, 2, 256);
  const std::vector<WeightExtent> weights = {{0, 100}, {128, 210}, {384, 420}, {832, 168}};
  const Q8_0Layout layout = PlanQ8_0Conversions(1000, weights, {first, second});
  ASSERT_EQ(layout.conversions.size(), 2u);
  EXPECT_EQ(layout.copied_bytes, 1000u);
  EXPECT_EQ(layout.conversions[0].q8_0_offset, 1024u);
  EXPECT_EQ(layout.conversions[1].q8_0_offset, 1024u + 320);  // 272 rounded up to 64
  EXPECT_EQ(layout.buffer_bytes, 1024u + 320 + 576);          // 544 rounded up

  const WeightMatrix misaligned = Q6_K(130, 1, 256);
  const Q8_0Layout after = PlanQ8_0Conversions(340, {{0, 100}, {130, 210}}, {misaligned});
  EXPECT_EQ(after.copied_bytes, 340u);
  EXPECT_EQ(after.conversions[0].q8_0_offset, 384u);
}

// Mixed: the last matrix in place, an earlier one after the in-place one's
// Q8_0 end.
TEST(Q6_KConversionTest, InPlaceLastAndAnEarlierOneAfterIt) {
  const WeightMatrix early = Q6_K(0, 1, 256);
  const WeightMatrix output = Q6_K(256, 1, 256);
  const Q8_0Layout layout =
      PlanQ8_0Conversions(466, {{0, 210}, {210, 40}, {256, 210}}, {early, output});
  ASSERT_EQ(layout.conversions.size(), 2u);
  EXPECT_EQ(layout.copied_bytes, 256u);
  EXPECT_EQ(layout.conversions[1].q8_0_offset, 256u);
  EXPECT_EQ(layout.conversions[0].q8_0_offset, 256u + 320);
  EXPECT_EQ(layout.buffer_bytes, 256u + 320 + 320);
}

// Row by row what gguf's DequantizeRow + QuantizeRowQ8_0 give (npu-compile's
// conversion); a non-finite block scale is refused.
TEST(Q6_KConversionTest, RowsConvertLikeTheCompiler) {
  constexpr size_t kRows = 3, kRowLen = 512;
  std::mt19937 random(7);
  std::vector<uint8_t> q6_k(kRows * (kRowLen / kQ6_KBlock) * kQ6_KBlockBytes);
  for (uint8_t& byte : q6_k) byte = static_cast<uint8_t>(random());
  for (size_t b = 0; b < q6_k.size() / kQ6_KBlockBytes; ++b) {
    const uint16_t d = 0x2C00;  // f16 0.0625
    std::memcpy(&q6_k[b * kQ6_KBlockBytes + kQ6_KDOffset], &d, 2);
  }
  const size_t q8_0_row = kRowLen / kQuantBlock * kQ8_0BlockBytes;
  std::vector<uint8_t> converted(kRows * q8_0_row);
  std::vector<float> scratch(kRowLen);
  ASSERT_TRUE(ConvertQ6_KRowsToQ8_0(q6_k, kRows, kRowLen, absl::MakeSpan(scratch),
                                    absl::MakeSpan(converted))
                  .ok());
  for (size_t r = 0; r < kRows; ++r) {
    std::vector<float> values(kRowLen);
    const size_t q6_k_row = q6_k.size() / kRows;
    ASSERT_TRUE(gguf::DequantizeRow(gguf::GgmlType::kQ6_K,
                                    absl::MakeConstSpan(q6_k).subspan(r * q6_k_row, q6_k_row),
                                    absl::MakeSpan(values))
                    .ok());
    std::vector<uint8_t> expected(q8_0_row);
    ASSERT_TRUE(gguf::QuantizeRowQ8_0(values, absl::MakeSpan(expected)).ok());
    EXPECT_EQ(std::vector<uint8_t>(converted.begin() + r * q8_0_row,
                                   converted.begin() + (r + 1) * q8_0_row),
              expected)
        << "row " << r;
  }

  const uint16_t infinity = 0x7C00;
  std::memcpy(&q6_k[kQ6_KBlockBytes + kQ6_KDOffset], &infinity, 2);
  const absl::Status refused = ConvertQ6_KRowsToQ8_0(q6_k, kRows, kRowLen, absl::MakeSpan(scratch),
                                                     absl::MakeSpan(converted));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lnpu::runtime
