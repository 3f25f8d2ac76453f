#include "base/quant_blocks.h"

#include <algorithm>
#include <cstring>

namespace lnpu {
namespace {

// Offsets inside a panel of rows of `blocks` blocks.
constexpr size_t QuantOffset(size_t block, size_t row_in_panel, size_t k_in_block) {
  return block * kQ8_0P16BlockQuantBytes + k_in_block / 4 * kQ8_0P16GroupBytes +
         row_in_panel * 4 + k_in_block % 4;
}
constexpr size_t ScaleOffset(size_t blocks, size_t block, size_t row_in_panel) {
  return blocks * kQ8_0P16BlockQuantBytes + (block * kQ8_0P16Rows + row_in_panel) * 2;
}

}  // namespace

void RepackQ8_0ToP16(const uint8_t* src, size_t rows, size_t blocks,
                     uint8_t* dst) {
  // Panel by panel, each output byte written once and in order: a 64-byte
  // group gathers 4 bytes of each of the panel's 16 source rows.
  const size_t row_bytes = blocks * kQ8_0BlockBytes;
  for (size_t first = 0; first < rows; first += kQ8_0P16Rows) {
    uint8_t* panel = dst + first / kQ8_0P16Rows * Q8_0P16PanelBytes(blocks);
    const size_t valid = std::min(kQ8_0P16Rows, rows - first);
    const uint8_t* row0 = src + first * row_bytes;
    uint8_t* out = panel;
    for (size_t b = 0; b < blocks; ++b) {
      for (size_t i = 0; i < kQuantBlock; i += 4) {
        for (size_t r = 0; r < kQ8_0P16Rows; ++r, out += 4) {
          if (r < valid) {
            std::memcpy(out, row0 + r * row_bytes + b * kQ8_0BlockBytes + 2 + i, 4);
          } else {
            std::memset(out, 0, 4);  // padding rows of a last partial panel
          }
        }
      }
    }
    for (size_t b = 0; b < blocks; ++b) {
      for (size_t r = 0; r < kQ8_0P16Rows; ++r, out += 2) {
        if (r < valid) {
          std::memcpy(out, row0 + r * row_bytes + b * kQ8_0BlockBytes, 2);
        } else {
          std::memset(out, 0, 2);
        }
      }
    }
  }
}

void Q8_0P16RowToQ8_0(const uint8_t* matrix, size_t row, size_t blocks,
                      uint8_t* dst) {
  const uint8_t* panel = matrix + row / kQ8_0P16Rows * Q8_0P16PanelBytes(blocks);
  const size_t r = row % kQ8_0P16Rows;
  for (size_t b = 0; b < blocks; ++b) {
    uint8_t* block = dst + b * kQ8_0BlockBytes;
    std::memcpy(block, panel + ScaleOffset(blocks, b, r), 2);
    for (size_t i = 0; i < kQuantBlock; i += 4) {
      std::memcpy(block + 2 + i, panel + QuantOffset(b, r, i), 4);
    }
  }
}

}  // namespace lnpu
