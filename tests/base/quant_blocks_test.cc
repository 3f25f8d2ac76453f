#include "base/quant_blocks.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lnpu {
namespace {

// The panel formats by their block bytes: Q8_0 (LNPU_DTYPE_Q8_0_P16,
// _Q8_0_P16S) and Q4_0 (LNPU_DTYPE_Q4_0_P16, _Q4_0_P16S), and by where
// they keep their scales.
constexpr size_t kBlockBytes[] = {kQ8_0BlockBytes, kQ4_0BlockBytes};
constexpr P16Scales kLayouts[] = {P16Scales::kAfterPanel, P16Scales::kAfterPair};

std::string LayoutName(size_t block_bytes, P16Scales scales) {
  return std::string(block_bytes == kQ8_0BlockBytes ? "Q8_0" : "Q4_0") +
         (scales == P16Scales::kAfterPair ? "_P16S" : "_P16");
}

// Random rows of blocks: any bytes (the repack only moves them).
std::vector<uint8_t> RandomRows(size_t rows, size_t blocks, size_t block_bytes) {
  std::mt19937 rng(37);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> src(rows * blocks * block_bytes);
  for (uint8_t& b : src) b = static_cast<uint8_t>(byte(rng));
  return src;
}

TEST(QuantBlocksTest, P16SizesAreWholePanels) {
  EXPECT_EQ(kQ8_0P16BlockQuantBytes, 512u);
  EXPECT_EQ(P16BlockQuantBytes(kQ4_0BlockBytes), 256u);
  for (size_t bytes : kBlockBytes) {
    EXPECT_EQ(P16PanelBytes(bytes, 1), 16u * bytes);
    EXPECT_EQ(P16MatrixBytes(bytes, 1, 2), 16u * 2 * bytes);
    EXPECT_EQ(P16MatrixBytes(bytes, 16, 2), 16u * 2 * bytes);
    EXPECT_EQ(P16MatrixBytes(bytes, 17, 2), 32u * 2 * bytes);
    EXPECT_EQ(P16MatrixBytes(bytes, 37, 3), 48u * 3 * bytes);
  }
}

// Every row of a 37-row matrix (two whole panels and a partial one) comes
// back unchanged in every layout, with odd and even block counts; the 11
// padding rows of the last panel are zero.
TEST(QuantBlocksTest, P16RepackRoundTripsEveryRow) {
  constexpr size_t kRows = 37;
  for (size_t block_bytes : kBlockBytes) {
    for (P16Scales scales : kLayouts) {
    for (size_t blocks : {1u, 2u, 3u, 4u}) {
      SCOPED_TRACE(LayoutName(block_bytes, scales) + ", blocks " + std::to_string(blocks));
      const std::vector<uint8_t> src = RandomRows(kRows, blocks, block_bytes);
      const size_t row_bytes = blocks * block_bytes;
      std::vector<uint8_t> packed(P16MatrixBytes(block_bytes, kRows, blocks), 0xa5);
      RepackToP16(block_bytes, scales, src.data(), kRows, blocks, packed.data());
      std::vector<uint8_t> row(row_bytes);
      for (size_t r = 0; r < kRows; ++r) {
        std::memset(row.data(), 0xa5, row.size());
        P16RowToBlocks(block_bytes, scales, packed.data(), r, blocks, row.data());
        EXPECT_EQ(0, std::memcmp(row.data(), src.data() + r * row_bytes, row_bytes))
            << "row " << r;
      }
      const std::vector<uint8_t> zero(row_bytes, 0);
      for (size_t r = kRows; r < 48; ++r) {
        P16RowToBlocks(block_bytes, scales, packed.data(), r, blocks, row.data());
        EXPECT_EQ(row, zero) << "padding row " << r;
      }
    }
    }
  }
}

// The layouts of the UAPI header, byte for byte, for an even and an odd
// block count. With Q = 512 (Q8_0: 8 groups) or 256 (Q4_0: 4 groups)
// quant bytes per block, byte 64g + 4r + i of block b's quants in panel p
// is byte 4g + i of the quant bytes of row 16p + r's block b (Q8_0:
// q[32b + 4g + i]; Q4_0: the nibbles of elements 32b + 4g + i and
// 32b + 16 + 4g + i), and row 16p + r's scale d of block b is the f16 at
// 2r of block b's scales. LNPU_DTYPE_*_P16: block b's quants at Qb, its
// scales at blocks * Q + 32b. LNPU_DTYPE_*_P16S: pair j (blocks 2j,
// 2j + 1) at j * (2Q + 64); block 2j + e's quants at pair start + eQ, its
// scales at pair start + nQ + 32e, n the pair's block count (2, or 1 for
// a last odd block).
TEST(QuantBlocksTest, P16LayoutsMatchTheUapi) {
  constexpr size_t kRows = 37;
  for (size_t block_bytes : kBlockBytes) {
    for (P16Scales scales : kLayouts) {
      for (size_t blocks : {4u, 5u}) {
        SCOPED_TRACE(LayoutName(block_bytes, scales) + ", blocks " + std::to_string(blocks));
        const size_t quant_bytes = block_bytes == kQ8_0BlockBytes ? 512 : 256;
        const size_t groups = quant_bytes / 64;
        const bool paired = scales == P16Scales::kAfterPair;
        const size_t pair_bytes = 2 * quant_bytes + 64;
        const auto quants_at = [&](size_t b) {
          return paired ? b / 2 * pair_bytes + b % 2 * quant_bytes : quant_bytes * b;
        };
        const auto scales_at = [&](size_t b) {
          const size_t in_pair = b / 2 * 2 + 1 < blocks ? 2 : 1;
          return paired ? b / 2 * pair_bytes + in_pair * quant_bytes + 32 * (b % 2)
                        : blocks * quant_bytes + 32 * b;
        };
        const std::vector<uint8_t> src = RandomRows(kRows, blocks, block_bytes);
        std::vector<uint8_t> packed(P16MatrixBytes(block_bytes, kRows, blocks), 0xa5);
        RepackToP16(block_bytes, scales, src.data(), kRows, blocks, packed.data());
        const size_t panel_bytes = P16PanelBytes(block_bytes, blocks);
        ASSERT_EQ(panel_bytes, blocks * (quant_bytes + 32));
        for (size_t p = 0; p < 3; ++p) {
          const uint8_t* panel = packed.data() + p * panel_bytes;
          for (size_t r = 0; r < 16; ++r) {
            const size_t row = 16 * p + r;
            for (size_t b = 0; b < blocks; ++b) {
              const uint8_t* block =
                  row < kRows ? src.data() + (row * blocks + b) * block_bytes : nullptr;
              for (size_t k = 0; k < 2; ++k) {
                EXPECT_EQ(panel[scales_at(b) + 2 * r + k], block ? block[k] : 0)
                    << "scale of row " << row << " block " << b;
              }
              for (size_t g = 0; g < groups; ++g) {
                for (size_t i = 0; i < 4; ++i) {
                  EXPECT_EQ(panel[quants_at(b) + 64 * g + 4 * r + i],
                            block ? block[2 + 4 * g + i] : 0)
                      << "row " << row << " block " << b << " quant byte " << 4 * g + i;
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace lnpu
