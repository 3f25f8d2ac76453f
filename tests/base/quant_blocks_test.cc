#include "base/quant_blocks.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lnpu {
namespace {

// Random Q8_0 rows: any bytes (the repack only moves them).
std::vector<uint8_t> RandomQ8_0Rows(size_t rows, size_t blocks) {
  std::mt19937 rng(37);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> src(rows * blocks * kQ8_0BlockBytes);
  for (uint8_t& b : src) b = static_cast<uint8_t>(byte(rng));
  return src;
}

TEST(QuantBlocksTest, P16SizesAreWholePanels) {
  EXPECT_EQ(Q8_0P16PanelBytes(1), 16u * 34);
  EXPECT_EQ(Q8_0P16MatrixBytes(1, 2), 16u * 2 * 34);
  EXPECT_EQ(Q8_0P16MatrixBytes(16, 2), 16u * 2 * 34);
  EXPECT_EQ(Q8_0P16MatrixBytes(17, 2), 32u * 2 * 34);
  EXPECT_EQ(Q8_0P16MatrixBytes(37, 3), 48u * 3 * 34);
}

// Every row of a 37-row matrix (two whole panels and a partial one) comes
// back unchanged; the 11 padding rows of the last panel are zero.
TEST(QuantBlocksTest, P16RepackRoundTripsEveryRow) {
  constexpr size_t kRows = 37;
  for (size_t blocks : {1u, 3u}) {
    const std::vector<uint8_t> src = RandomQ8_0Rows(kRows, blocks);
    const size_t row_bytes = blocks * kQ8_0BlockBytes;
    std::vector<uint8_t> packed(Q8_0P16MatrixBytes(kRows, blocks), 0xa5);
    RepackQ8_0ToP16(src.data(), kRows, blocks, packed.data());
    std::vector<uint8_t> row(row_bytes);
    for (size_t r = 0; r < kRows; ++r) {
      std::memset(row.data(), 0xa5, row.size());
      Q8_0P16RowToQ8_0(packed.data(), r, blocks, row.data());
      EXPECT_EQ(0, std::memcmp(row.data(), src.data() + r * row_bytes,
                               row_bytes))
          << "blocks " << blocks << " row " << r;
    }
    const std::vector<uint8_t> zero(row_bytes, 0);
    for (size_t r = kRows; r < 48; ++r) {
      Q8_0P16RowToQ8_0(packed.data(), r, blocks, row.data());
      EXPECT_EQ(row, zero) << "blocks " << blocks << " padding row " << r;
    }
  }
}

// The layout of the UAPI header (LNPU_DTYPE_Q8_0_P16), byte for byte: in
// panel p, byte 512b + 64g + 4r + i is q[16p + r][32b + 4g + i], and
// d[16p + r][b] is the f16 at blocks * 512 + 2 * (16b + r).
TEST(QuantBlocksTest, P16LayoutMatchesTheUapi) {
  constexpr size_t kRows = 37, kBlocks = 3;
  const std::vector<uint8_t> src = RandomQ8_0Rows(kRows, kBlocks);
  std::vector<uint8_t> packed(Q8_0P16MatrixBytes(kRows, kBlocks), 0xa5);
  RepackQ8_0ToP16(src.data(), kRows, kBlocks, packed.data());
  const size_t panel_bytes = Q8_0P16PanelBytes(kBlocks);
  for (size_t p = 0; p < 3; ++p) {
    const uint8_t* panel = packed.data() + p * panel_bytes;
    for (size_t r = 0; r < 16; ++r) {
      const size_t row = 16 * p + r;
      for (size_t b = 0; b < kBlocks; ++b) {
        const uint8_t* block =
            row < kRows ? src.data() + (row * kBlocks + b) * kQ8_0BlockBytes
                        : nullptr;
        for (size_t k = 0; k < 2; ++k) {
          EXPECT_EQ(panel[kBlocks * 512 + 2 * (16 * b + r) + k],
                    block ? block[k] : 0)
              << "scale of row " << row << " block " << b;
        }
        for (size_t g = 0; g < 8; ++g) {
          for (size_t i = 0; i < 4; ++i) {
            EXPECT_EQ(panel[512 * b + 64 * g + 4 * r + i],
                      block ? block[2 + 4 * g + i] : 0)
                << "row " << row << " block " << b << " k " << 4 * g + i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace lnpu
