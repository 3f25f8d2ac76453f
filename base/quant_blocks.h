// Block layouts of the int8/int4 weight formats the device computes on
// directly. LNPU_DTYPE_Q8_0 and LNPU_DTYPE_Q4_0 are also GGUF's Q8_0 and
// Q4_0: 32 elements per block, one f16 scale d first.
//   Q8_0: d, then 32 int8 q;             x = d * q.
//   Q4_0: d, then 16 bytes of 4-bit q (element i in the low nibble of byte
//         i, element 16 + i in its high nibble);  x = d * (q - 8).
// LNPU_DTYPE_Q8_0_P16 / _Q4_0_P16 and LNPU_DTYPE_Q8_0_P16S / _Q4_0_P16S
// hold the same blocks rearranged in panels of 16 rows (the UAPI header
// defines the layouts), so that vector and matrix units read a block of 16
// rows as aligned 64-byte groups of 4 quant bytes x 16 rows and the 16
// scales as one vector. The two differ only in where a panel keeps its
// scales (P16Scales). The functions below serve all four: `block_bytes`
// (kQ8_0BlockBytes or kQ4_0BlockBytes) and `scales` name the format.
#ifndef LNPU_BASE_QUANT_BLOCKS_H_
#define LNPU_BASE_QUANT_BLOCKS_H_

#include <cstddef>
#include <cstdint>

namespace lnpu {

inline constexpr size_t kQuantBlock = 32;  // elements per Q8_0 / Q4_0 block
inline constexpr size_t kQ8_0BlockBytes = 2 + kQuantBlock;
inline constexpr size_t kQ4_0BlockBytes = 2 + kQuantBlock / 2;

// The panel formats: rows per panel, bytes of one group (4 quant bytes of
// each of the 16 rows) and of a block's 16 f16 scales.
inline constexpr size_t kP16Rows = 16;
inline constexpr size_t kP16GroupBytes = 4 * kP16Rows;
inline constexpr size_t kP16BlockScaleBytes = 2 * kP16Rows;

// Quant bytes of one block of a panel: 8 groups (Q8_0: 32 int8 per row) or
// 4 (Q4_0: 16 bytes of nibbles per row).
constexpr size_t P16BlockQuantBytes(size_t block_bytes) {
  return (block_bytes - 2) * kP16Rows;
}
inline constexpr size_t kQ8_0P16BlockQuantBytes = P16BlockQuantBytes(kQ8_0BlockBytes);

// Where a panel keeps its blocks' scales: after all of its quants
// (LNPU_DTYPE_*_P16), or in the quant stream, after each pair of blocks'
// quants (LNPU_DTYPE_*_P16S: a stream reader then meets each scale line
// among the quant lines it belongs to; a last odd block's quants are
// followed by its own scales).
enum class P16Scales { kAfterPanel, kAfterPair };

// Bytes of a pair of blocks and their scales (P16Scales::kAfterPair).
constexpr size_t P16PairBytes(size_t block_bytes) {
  return 2 * (P16BlockQuantBytes(block_bytes) + kP16BlockScaleBytes);
}

// Offset in its panel of block b's quants (P16BlockQuantBytes: its groups
// in order) and of its 16 f16 scales (row r's at + 2r), in a panel of
// `blocks` blocks.
constexpr size_t P16QuantsOffset(size_t block_bytes, P16Scales scales, size_t b) {
  return scales == P16Scales::kAfterPanel
             ? b * P16BlockQuantBytes(block_bytes)
             : b / 2 * P16PairBytes(block_bytes) + b % 2 * P16BlockQuantBytes(block_bytes);
}
// P16Scales::kAfterPair: the offset of block b's scales in a pair of
// `pair_blocks` blocks (2, or 1 for a last odd block).
constexpr size_t P16PairScalesOffset(size_t block_bytes, size_t b, size_t pair_blocks) {
  return b / 2 * P16PairBytes(block_bytes) + pair_blocks * P16BlockQuantBytes(block_bytes) +
         b % 2 * kP16BlockScaleBytes;
}
constexpr size_t P16ScalesOffset(size_t block_bytes, P16Scales scales, size_t blocks, size_t b) {
  if (scales == P16Scales::kAfterPanel) {
    return blocks * P16BlockQuantBytes(block_bytes) + b * kP16BlockScaleBytes;
  }
  return P16PairScalesOffset(block_bytes, b, b / 2 * 2 + 1 < blocks ? 2 : 1);
}

// Bytes of one panel whose rows hold `blocks` blocks (16 rows' worth), and
// of a matrix of `rows` such rows (whole panels: the last one padded with
// zero rows).
constexpr size_t P16PanelBytes(size_t block_bytes, size_t blocks) {
  return blocks * kP16Rows * block_bytes;
}
constexpr size_t P16MatrixBytes(size_t block_bytes, size_t rows, size_t blocks) {
  return (rows + kP16Rows - 1) / kP16Rows * P16PanelBytes(block_bytes, blocks);
}

// Writes the panel form of `rows` rows of `blocks` blocks each (src:
// rows * blocks * block_bytes bytes) to dst (P16MatrixBytes(block_bytes,
// rows, blocks) bytes; padding rows are zeroed).
void RepackToP16(size_t block_bytes, P16Scales scales, const uint8_t* src, size_t rows,
                 size_t blocks, uint8_t* dst);

// Row `row` of a panel matrix of rows of `blocks` blocks, as its blocks
// (dst: blocks * block_bytes bytes): the inverse of the repack.
void P16RowToBlocks(size_t block_bytes, P16Scales scales, const uint8_t* matrix, size_t row,
                    size_t blocks, uint8_t* dst);

// LNPU_DTYPE_Q6_K is GGUF's Q6_K (the UAPI header spells the layout out):
// blocks of 256 weights in 16 sub-blocks of 16, 210 bytes each: 128 bytes
// of low 4 bits (ql), 64 of high 2 bits (qh), 16 int8 sub-block scales
// (sc), then the f16 block scale d; w[i] = d * sc[i / 16] * (q[i] - 32).
inline constexpr size_t kQ6_KBlock = 256;
inline constexpr size_t kQ6_KSubBlock = 16;
inline constexpr size_t kQ6_KBlockBytes = kQ6_KBlock / 2 + kQ6_KBlock / 4 + kQ6_KBlock / 16 + 2;
inline constexpr size_t kQ6_KScalesOffset = kQ6_KBlock / 2 + kQ6_KBlock / 4;  // sc
inline constexpr size_t kQ6_KDOffset = kQ6_KScalesOffset + kQ6_KBlock / 16;    // d

// The 256 unsigned 6-bit q (0 .. 63) of a Q6_K block, in element order.
void Q6_KBlockQuants(const uint8_t* block, uint8_t* q);

// The 256 weights of a Q6_K block: y[i] = (d * sc[i / 16]) * (q[i] - 32)
// in f32.
void DequantizeQ6_KBlock(const uint8_t* block, float* y);

}  // namespace lnpu

#endif  // LNPU_BASE_QUANT_BLOCKS_H_
