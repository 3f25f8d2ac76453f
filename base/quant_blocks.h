// Block layouts of the int8/int4 weight formats the device computes on
// directly. LNPU_DTYPE_Q8_0 and LNPU_DTYPE_Q4_0 are also GGUF's Q8_0 and
// Q4_0: 32 elements per block, one f16 scale d first.
//   Q8_0: d, then 32 int8 q;             x = d * q.
//   Q4_0: d, then 16 bytes of 4-bit q (element i in the low nibble of byte
//         i, element 16 + i in its high nibble);  x = d * (q - 8).
// LNPU_DTYPE_Q8_0_P16 holds the same Q8_0 blocks rearranged in panels of 16
// rows (the UAPI header defines the layout), so that vector and matrix
// units read a block of 16 rows as aligned 64-byte groups of 4 k x 16
// rows and the 16 scales as one vector.
#ifndef LNPU_BASE_QUANT_BLOCKS_H_
#define LNPU_BASE_QUANT_BLOCKS_H_

#include <cstddef>
#include <cstdint>

namespace lnpu {

inline constexpr size_t kQuantBlock = 32;  // elements per Q8_0 / Q4_0 block
inline constexpr size_t kQ8_0BlockBytes = 2 + kQuantBlock;
inline constexpr size_t kQ4_0BlockBytes = 2 + kQuantBlock / 2;

// LNPU_DTYPE_Q8_0_P16: rows per panel, and per block of a panel the bytes
// of its quants (8 groups of 4 k x 16 rows) and of its 16 f16 scales.
inline constexpr size_t kQ8_0P16Rows = 16;
inline constexpr size_t kQ8_0P16GroupBytes = 4 * kQ8_0P16Rows;
inline constexpr size_t kQ8_0P16BlockQuantBytes = kQuantBlock * kQ8_0P16Rows;
inline constexpr size_t kQ8_0P16BlockScaleBytes = 2 * kQ8_0P16Rows;

// Bytes of one LNPU_DTYPE_Q8_0_P16 panel whose rows hold `blocks` blocks
// (16 Q8_0 rows' worth), and of a matrix of `rows` such rows (whole
// panels: the last one padded with zero rows).
constexpr size_t Q8_0P16PanelBytes(size_t blocks) {
  return blocks * kQ8_0P16Rows * kQ8_0BlockBytes;
}
constexpr size_t Q8_0P16MatrixBytes(size_t rows, size_t blocks) {
  return (rows + kQ8_0P16Rows - 1) / kQ8_0P16Rows * Q8_0P16PanelBytes(blocks);
}

// Writes the LNPU_DTYPE_Q8_0_P16 form of `rows` Q8_0 rows of `blocks`
// blocks each (src: rows * blocks * 34 bytes) to dst
// (Q8_0P16MatrixBytes(rows, blocks) bytes; padding rows are zeroed).
void RepackQ8_0ToP16(const uint8_t* src, size_t rows, size_t blocks,
                     uint8_t* dst);

// Row `row` of a LNPU_DTYPE_Q8_0_P16 matrix of rows of `blocks` blocks, as
// its Q8_0 blocks (dst: blocks * 34 bytes): the inverse of the repack.
void Q8_0P16RowToQ8_0(const uint8_t* matrix, size_t row, size_t blocks,
                      uint8_t* dst);

}  // namespace lnpu

#endif  // LNPU_BASE_QUANT_BLOCKS_H_
