// aarch64 quantized-matmul paths (quant_matmul.h):
//   "neon-i8mm"     SMMLA (vmmlaq_s32, FEAT_I8MM, Armv8.6-A and e.g.
//                   Neoverse V1/N2, Cortex-A510/A710): one instruction
//                   multiplies a 2x8 int8 tile of two activation rows by
//                   one of two weight columns into a 2x2 int32 tile. GEMM
//                   only; its GEMV is neon-dotprod's (one row has no pairs).
//   "neon-dotprod"  SDOT (vdotq_s32, FEAT_DotProd, Armv8.2-A and later):
//                   one instruction adds 16 int8 products into 4 int32
//                   lanes, so a 32-element block is two SDOTs per
//                   activation row and weight column.
// The instructions are enabled per function (a `#pragma GCC target` region
// per path), never for the whole file, so the library runs on any Armv8-A
// CPU; supported() checks the kernel's hwcaps.
//
// Panel weights (Q8_0P16, Q4_0P16 and their _P16S forms) go to
// PortableP16Matmul on both paths: its one f32 order is the contract's
// (quant_matmul.h).
//
// Both paths run the same register-tile loop (quant_matmul_arm-inl.h):
// kRows activation rows (1, 2 or 4 for GEMV, 4 for GEMM) times 4 weight
// columns.
// Per block a tile loads (and for Q4_0 unpacks) the 4 columns' weights and
// their f16 scales once and reuses them for every row, and applies
// d_w * d_x with one convert and one f32 multiply-add per 4 outputs.
#include <arm_neon.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernel_iface/softnpu/compute/quant_matmul.h"

namespace lnpu::softnpu::compute {
namespace {

#define LNPU_QM_INLINE inline __attribute__((always_inline))

// Weight columns of one register tile.
constexpr size_t kTileCols = 4;

// Weight formats: Load gives a block's 32 weights as int8, elements 0..15
// in lo and 16..31 in hi.
struct Q8_0 {
  static constexpr size_t kBlockBytes = kQ8_0BlockBytes;
  static LNPU_QM_INLINE void Load(const uint8_t* block, int8x16_t& lo,
                                  int8x16_t& hi) {
    lo = vld1q_s8(reinterpret_cast<const int8_t*>(block + 2));
    hi = vld1q_s8(reinterpret_cast<const int8_t*>(block + 2 + 16));
  }
};
struct Q4_0 {
  static constexpr size_t kBlockBytes = kQ4_0BlockBytes;
  // Bytes 0..15 hold elements 0..15 in their low nibbles and 16..31 in
  // their high nibbles; a weight is its nibble minus 8.
  static LNPU_QM_INLINE void Load(const uint8_t* block, int8x16_t& lo,
                                  int8x16_t& hi) {
    const uint8x16_t bytes = vld1q_u8(block + 2);
    const int8x16_t eight = vdupq_n_s8(8);
    lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(0xF))), eight);
    hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4)), eight);
  }
};

// The f16 scales at the start of 4 blocks, as f32 lanes 0..3.
LNPU_QM_INLINE float32x4_t LoadScales(const uint8_t* const (&blocks)[kTileCols]) {
  uint16_t half[kTileCols];
  for (size_t j = 0; j < kTileCols; ++j) std::memcpy(&half[j], blocks[j], 2);
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(half)));
}

// Block b of the tile's 4 weight columns: their weights as int8 (Load) and
// their scales as f32 lanes 0..3 (LoadScales). Both paths' tiles start a
// block with it.
template <class W>
LNPU_QM_INLINE float32x4_t LoadBlocks(const uint8_t* const (&w)[kTileCols], size_t b,
                                      int8x16_t (&lo)[kTileCols], int8x16_t (&hi)[kTileCols]) {
  const uint8_t* block[kTileCols];
  for (size_t j = 0; j < kTileCols; ++j) {
    block[j] = w[j] + b * W::kBlockBytes;
    W::Load(block[j], lo[j], hi[j]);
  }
  return LoadScales(block);
}

// Lane j: the sum of the 4 lanes of s[j].
LNPU_QM_INLINE int32x4_t SumLanes(int32x4_t s0, int32x4_t s1, int32x4_t s2,
                                  int32x4_t s3) {
  return vpaddq_s32(vpaddq_s32(s0, s1), vpaddq_s32(s2, s3));
}

// Each path's kernels are compiled for the architecture level its
// intrinsics are defined under in GCC 12's arm_neon.h (a plain "+dotprod"
// does not reach vdotq_s32 there).
namespace dotprod {
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

// acc[i] lane j += sum over blocks of d_w[j][b] * d_x[i][b] * (int32 dot of
// block b of activation row x[i] and weight column w[j]). The int32 sums
// are exact: at most 8 products of |w| <= 128, |x| <= 127 per lane.
struct Kernel {
  template <class W, size_t kRows>
  static LNPU_QM_INLINE void Tile(
      const uint8_t* const (&w)[kTileCols], const int8_t* const (&x)[kRows],
      const float* const (&dx)[kRows], size_t blocks, float32x4_t (&acc)[kRows]) {
    const int32x4_t zero = vdupq_n_s32(0);
    for (size_t b = 0; b < blocks; ++b) {
      int8x16_t w_lo[kTileCols], w_hi[kTileCols];
      const float32x4_t dw = LoadBlocks<W>(w, b, w_lo, w_hi);
      for (size_t i = 0; i < kRows; ++i) {
        const int8x16_t x_lo = vld1q_s8(x[i] + b * kQuantBlock);
        const int8x16_t x_hi = vld1q_s8(x[i] + b * kQuantBlock + 16);
        int32x4_t s[kTileCols];
        for (size_t j = 0; j < kTileCols; ++j) {
          s[j] = vdotq_s32(vdotq_s32(zero, w_lo[j], x_lo), w_hi[j], x_hi);
        }
        const int32x4_t dots = SumLanes(s[0], s[1], s[2], s[3]);
        acc[i] = vfmaq_f32(acc[i], vcvtq_f32_s32(dots), vmulq_n_f32(dw, dx[i][b]));
      }
    }
  }
};

#include "kernel_iface/softnpu/compute/quant_matmul_arm-inl.h"

// All a.rows (1..kQuantGemvMaxRows) rows in one tile, so that each weight
// block is loaded once for all of them. Kernel::Tile's operations on a row
// do not depend on kRows: each row's result is that of a one-row call.
template <class W>
void GemvRows(const MatmulArgs& a, const QuantizedActivations& x, size_t col_begin,
              size_t col_end) {
  static_assert(kQuantGemvMaxRows == 4);
  switch (a.rows) {
    case 1: Tiles<W, 1>(a, x, 0, 1, col_begin, col_end); break;
    case 2: Tiles<W, 2>(a, x, 0, 2, col_begin, col_end); break;
    default: Tiles<W, 4>(a, x, 0, a.rows, col_begin, col_end); break;
  }
}

void Gemv(const MatmulArgs& a, const QuantizedActivations& x, size_t col_begin,
          size_t col_end) {
  if (IsPanelType(a.weight_type)) {
    PortableP16Matmul(a, x, 0, a.rows, col_begin, col_end);
  } else if (a.weight_type == WeightType::kQ8_0) {
    GemvRows<Q8_0>(a, x, col_begin, col_end);
  } else {
    GemvRows<Q4_0>(a, x, col_begin, col_end);
  }
}

#pragma GCC pop_options
}  // namespace dotprod

namespace i8mm {
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+i8mm")

// 2x8 int8 tiles for SMMLA: chunk c (elements 8c..8c+7) of a and of b.
LNPU_QM_INLINE int8x16_t Pair(int8x16_t a, int8x16_t b, bool high) {
  const int64x2_t a64 = vreinterpretq_s64_s8(a), b64 = vreinterpretq_s64_s8(b);
  return vreinterpretq_s8_s64(high ? vzip2q_s64(a64, b64) : vzip1q_s64(a64, b64));
}

// The 2x8 tiles of one block of two rows (or columns): pairs[c] holds
// chunk c of both, for the chunks c = 0..3 of the 32 elements.
LNPU_QM_INLINE void BlockPairs(int8x16_t lo0, int8x16_t hi0, int8x16_t lo1,
                               int8x16_t hi1, int8x16_t (&pairs)[4]) {
  pairs[0] = Pair(lo0, lo1, false);
  pairs[1] = Pair(lo0, lo1, true);
  pairs[2] = Pair(hi0, hi1, false);
  pairs[3] = Pair(hi0, hi1, true);
}

// Same contract as dotprod::Kernel::Tile for kRows = 4. Per block, row pair
// p and column pair q give the exact int32 2x2 tile
// [r0c0, r0c1, r1c0, r1c1] after four SMMLAs; it is scaled by
// [dx0 dw0, dx0 dw1, dx1 dw0, dx1 dw1] into acc2[p][q], which is
// rearranged into rows at the end.
struct Kernel {
  template <class W, size_t kRows>
  static LNPU_QM_INLINE void Tile(const uint8_t* const (&w)[kTileCols],
                                  const int8_t* const (&x)[kRows],
                                  const float* const (&dx)[kRows], size_t blocks,
                                  float32x4_t (&acc)[kRows]) {
    static_assert(kRows == 4, "SMMLA tiles pair up 4 activation rows");
    const int32x4_t zero = vdupq_n_s32(0);
    float32x4_t acc2[2][2];
    for (auto& row : acc2) row[0] = row[1] = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < blocks; ++b) {
      int8x16_t w_lo[kTileCols], w_hi[kTileCols];
      const float32x4_t dw = LoadBlocks<W>(w, b, w_lo, w_hi);
      // [dw_{2q}, dw_{2q+1}] twice, for column pair q.
      const float32x4_t dw_pair[2] = {
          vcombine_f32(vget_low_f32(dw), vget_low_f32(dw)),
          vcombine_f32(vget_high_f32(dw), vget_high_f32(dw))};
      int8x16_t w_pairs[2][4];
      BlockPairs(w_lo[0], w_hi[0], w_lo[1], w_hi[1], w_pairs[0]);
      BlockPairs(w_lo[2], w_hi[2], w_lo[3], w_hi[3], w_pairs[1]);
      for (size_t p = 0; p < 2; ++p) {
        const int8_t* x0 = x[2 * p] + b * kQuantBlock;
        const int8_t* x1 = x[2 * p + 1] + b * kQuantBlock;
        int8x16_t x_pairs[4];
        BlockPairs(vld1q_s8(x0), vld1q_s8(x0 + 16), vld1q_s8(x1), vld1q_s8(x1 + 16),
                   x_pairs);
        // [dx_{2p}, dx_{2p}, dx_{2p+1}, dx_{2p+1}].
        const float32x4_t dx_pair = vcombine_f32(vdup_n_f32(dx[2 * p][b]),
                                                 vdup_n_f32(dx[2 * p + 1][b]));
        for (size_t q = 0; q < 2; ++q) {
          int32x4_t s = zero;
          for (size_t c = 0; c < 4; ++c) s = vmmlaq_s32(s, x_pairs[c], w_pairs[q][c]);
          acc2[p][q] = vfmaq_f32(acc2[p][q], vcvtq_f32_s32(s),
                                 vmulq_f32(dx_pair, dw_pair[q]));
        }
      }
    }
    for (size_t p = 0; p < 2; ++p) {
      acc[2 * p] = vaddq_f32(acc[2 * p], vcombine_f32(vget_low_f32(acc2[p][0]),
                                                      vget_low_f32(acc2[p][1])));
      acc[2 * p + 1] =
          vaddq_f32(acc[2 * p + 1], vcombine_f32(vget_high_f32(acc2[p][0]),
                                                 vget_high_f32(acc2[p][1])));
    }
  }
};

#include "kernel_iface/softnpu/compute/quant_matmul_arm-inl.h"

#pragma GCC pop_options
}  // namespace i8mm

bool DotprodSupported() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

// neon-i8mm borrows neon-dotprod's GEMV (quant_matmul.h), so it needs both.
bool I8mmSupported() {
  return DotprodSupported() && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
}

}  // namespace

const QuantMatmulPath kNeonI8mmQuantMatmulPath = {
    .name = "neon-i8mm",
    .supported = I8mmSupported,
    .gemv = nullptr,
    .gemm = i8mm::Gemm,
    .gemm_tile_rows = 64,
    .gemm_tile_cols = 32,
};

const QuantMatmulPath kNeonDotprodQuantMatmulPath = {
    .name = "neon-dotprod",
    .supported = DotprodSupported,
    .gemv = dotprod::Gemv,
    .gemm = dotprod::Gemm,
    .gemm_tile_rows = 64,
    .gemm_tile_cols = 32,
};

}  // namespace lnpu::softnpu::compute
