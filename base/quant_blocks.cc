#include "base/quant_blocks.h"

#include <algorithm>
#include <cstring>

#include "base/half.h"

namespace lnpu {
void RepackToP16(size_t block_bytes, P16Scales scales, const uint8_t* src, size_t rows,
                 size_t blocks, uint8_t* dst) {
  // Panel by panel and block by block, each output byte written once: a
  // 64-byte group gathers 4 bytes of each of the panel's 16 source rows.
  const size_t row_bytes = blocks * block_bytes;
  const size_t quant_bytes = block_bytes - 2;
  for (size_t first = 0; first < rows; first += kP16Rows) {
    uint8_t* panel = dst + first / kP16Rows * P16PanelBytes(block_bytes, blocks);
    const size_t valid = std::min(kP16Rows, rows - first);
    const uint8_t* row0 = src + first * row_bytes;
    for (size_t b = 0; b < blocks; ++b) {
      uint8_t* out = panel + P16QuantsOffset(block_bytes, scales, b);
      for (size_t i = 0; i < quant_bytes; i += 4) {
        for (size_t r = 0; r < kP16Rows; ++r, out += 4) {
          if (r < valid) {
            std::memcpy(out, row0 + r * row_bytes + b * block_bytes + 2 + i, 4);
          } else {
            std::memset(out, 0, 4);  // padding rows of a last partial panel
          }
        }
      }
      out = panel + P16ScalesOffset(block_bytes, scales, blocks, b);
      for (size_t r = 0; r < kP16Rows; ++r, out += 2) {
        if (r < valid) {
          std::memcpy(out, row0 + r * row_bytes + b * block_bytes, 2);
        } else {
          std::memset(out, 0, 2);
        }
      }
    }
  }
}

void P16RowToBlocks(size_t block_bytes, P16Scales scales, const uint8_t* matrix, size_t row,
                    size_t blocks, uint8_t* dst) {
  const uint8_t* panel = matrix + row / kP16Rows * P16PanelBytes(block_bytes, blocks);
  const size_t r = row % kP16Rows;
  for (size_t b = 0; b < blocks; ++b) {
    uint8_t* block = dst + b * block_bytes;
    std::memcpy(block, panel + P16ScalesOffset(block_bytes, scales, blocks, b) + 2 * r, 2);
    const uint8_t* quants = panel + P16QuantsOffset(block_bytes, scales, b) + 4 * r;
    for (size_t i = 0; i < block_bytes - 2; i += 4) {
      std::memcpy(block + 2 + i, quants + i / 4 * kP16GroupBytes, 4);
    }
  }
}

void Q6_KBlockQuants(const uint8_t* block, uint8_t* q) {
  for (size_t h = 0; h < 2; ++h) {
    const uint8_t* ql = block + 64 * h;
    const uint8_t* qh = block + kQ6_KBlock / 2 + 32 * h;
    uint8_t* out = q + 128 * h;
    for (size_t l = 0; l < 32; ++l) {
      out[l] = static_cast<uint8_t>((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4);
      out[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4);
      out[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
      out[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
    }
  }
}

void DequantizeQ6_KBlock(const uint8_t* block, float* y) {
  uint8_t q[kQ6_KBlock];
  Q6_KBlockQuants(block, q);
  const auto* sc = reinterpret_cast<const int8_t*>(block + kQ6_KScalesOffset);
  uint16_t half;
  std::memcpy(&half, block + kQ6_KDOffset, sizeof half);
  const float d = Float16ToFloat(half);
  for (size_t i = 0; i < kQ6_KBlock; ++i) {
    y[i] = d * static_cast<float>(sc[i / kQ6_KSubBlock]) * static_cast<float>(int{q[i]} - 32);
  }
}

}  // namespace lnpu
