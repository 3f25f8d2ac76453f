// aarch64 quantized-matmul path (quant_matmul.h):
//   "neon-dotprod"  SDOT (vdotq_s32, FEAT_DotProd, Armv8.2-A and later):
//                   one instruction adds 16 int8 products into 4 int32
//                   lanes, so a 32-element block is two SDOTs per
//                   activation row and weight column.
// The dot-product instructions are enabled per function (target
// attributes), never for the whole file, so the library runs on any
// Armv8-A CPU; supported() checks the kernel's hwcaps (HWCAP_ASIMDDP).
//
// One register-tile kernel serves GEMV and GEMM: kRows activation rows
// (1 for GEMV, 4 for GEMM) times 4 weight columns. Per block it loads (and
// for Q4_0 unpacks) the 4 columns' weights and their f16 scales once, then
// for each row reuses them against that row's activations; the 4 columns'
// int32 sums are folded into one vector (lane j = column j) so that one
// convert and one f32 multiply-add per row and block apply d_w * d_x.
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
// Armv8.2-A is part of the attribute: GCC 12's arm_neon.h defines vdotq_s32
// under that architecture level, and a plain "+dotprod" does not reach it.
#define LNPU_QM_DOTPROD_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))

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

// Lane j: the sum of the 4 lanes of s[j].
LNPU_QM_INLINE int32x4_t SumLanes(int32x4_t s0, int32x4_t s1, int32x4_t s2,
                                  int32x4_t s3) {
  return vpaddq_s32(vpaddq_s32(s0, s1), vpaddq_s32(s2, s3));
}

// acc[i] lane j += sum over blocks of d_w[j][b] * d_x[i][b] * (int32 dot of
// block b of activation row x[i] and weight column w[j]). The int32 sums
// are exact: at most 8 products of |w| <= 128, |x| <= 127 per lane.
template <class W, size_t kRows>
LNPU_QM_INLINE LNPU_QM_DOTPROD_TARGET void DotTile(
    const uint8_t* const (&w)[kTileCols], const int8_t* const (&x)[kRows],
    const float* const (&dx)[kRows], size_t blocks, float32x4_t (&acc)[kRows]) {
  const int32x4_t zero = vdupq_n_s32(0);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* block[kTileCols];
    int8x16_t w_lo[kTileCols], w_hi[kTileCols];
    for (size_t j = 0; j < kTileCols; ++j) {
      block[j] = w[j] + b * W::kBlockBytes;
      W::Load(block[j], w_lo[j], w_hi[j]);
    }
    const float32x4_t dw = LoadScales(block);
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

// dst rows [row_begin, row_end) x columns [col_begin, col_end) in tiles of
// kRows x kTileCols. Column groups are the outer loop, so a group's weights
// stay in L1 while the rows pass over them. Rows and columns past the end
// repeat the last one; their sums are discarded.
template <class W, size_t kRows>
LNPU_QM_DOTPROD_TARGET void DotTiles(const MatmulArgs& a,
                                     const QuantizedActivations& x,
                                     size_t row_begin, size_t row_end,
                                     size_t col_begin, size_t col_end) {
  const size_t blocks = a.k / kQuantBlock;
  const size_t row_bytes = blocks * W::kBlockBytes;
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  for (size_t c = col_begin; c < col_end; c += kTileCols) {
    const uint8_t* w[kTileCols];
    for (size_t j = 0; j < kTileCols; ++j) {
      w[j] = weight + std::min(c + j, col_end - 1) * row_bytes;
    }
    const size_t cols = std::min(kTileCols, col_end - c);
    for (size_t r = row_begin; r < row_end; r += kRows) {
      const int8_t* xq[kRows];
      const float* xs[kRows];
      float32x4_t acc[kRows];
      for (size_t i = 0; i < kRows; ++i) {
        const size_t row = std::min(r + i, row_end - 1);
        xq[i] = x.q + row * a.k;
        xs[i] = x.scales + row * blocks;
        acc[i] = vdupq_n_f32(0.0f);
      }
      DotTile<W, kRows>(w, xq, xs, blocks, acc);
      const size_t rows = std::min(kRows, row_end - r);
      for (size_t i = 0; i < rows; ++i) {
        float sums[kTileCols];
        vst1q_f32(sums, acc[i]);
        for (size_t j = 0; j < cols; ++j) {
          a.dst[(r + i) * a.n + c + j] = MatmulOutputBase(a, r + i, c + j) + sums[j];
        }
      }
    }
  }
}

void DotprodGemv(const MatmulArgs& a, const QuantizedActivations& x,
                 size_t col_begin, size_t col_end) {
  if (a.weight_type == WeightType::kQ8_0) {
    DotTiles<Q8_0, 1>(a, x, 0, 1, col_begin, col_end);
  } else {
    DotTiles<Q4_0, 1>(a, x, 0, 1, col_begin, col_end);
  }
}

void DotprodGemm(const MatmulArgs& a, const QuantizedActivations& x,
                 size_t row_begin, size_t row_end, size_t col_begin,
                 size_t col_end) {
  if (a.weight_type == WeightType::kQ8_0) {
    DotTiles<Q8_0, 4>(a, x, row_begin, row_end, col_begin, col_end);
  } else {
    DotTiles<Q4_0, 4>(a, x, row_begin, row_end, col_begin, col_end);
  }
}

bool DotprodSupported() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

}  // namespace

const QuantMatmulPath kNeonDotprodQuantMatmulPath = {
    .name = "neon-dotprod",
    .supported = DotprodSupported,
    .gemv = DotprodGemv,
    .gemm = DotprodGemm,
    .gemm_tile_rows = 64,
    .gemm_tile_cols = 32,
};

}  // namespace lnpu::softnpu::compute
