// MATMUL (matmul.h): the F32 / F16 GEMV and GEMM loops, the portable
// "highway" quantized path and the work split over the pool.
//
// Highway re-includes this file once per enabled SIMD target (see
// foreach_target.h); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target, the HWY_ONCE part once.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel_iface/softnpu/compute/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/half.h"
#include "base/quant_blocks.h"
#include "hwy/highway.h"
#include "kernel_iface/softnpu/compute/cpu_kinds.h"
#include "kernel_iface/softnpu/compute/kernel_scheduling.h"
#include "kernel_iface/softnpu/compute/matmul.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/quant_matmul_q6_k.h"
#include "kernel_iface/softnpu/compute/simd-inl.h"
#if defined(__x86_64__)
#include "kernel_iface/softnpu/compute/x86_gemv_walk.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace lnpu::softnpu::compute {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Matmul micro-kernels. Each adds dot products over [begin, end) of the
// given rows to sums[]; called with DF for the vector part of a k range and
// with D1 for its ragged end. Four weight rows share every src load.

template <class D, typename WT>
HWY_INLINE void Dot1x4(D d, const float* s, const WT* const w[4], size_t begin,
                       size_t end, float sums[4]) {
  const size_t lanes = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (size_t i = begin; i + lanes <= end; i += lanes) {
    const auto x = hn::LoadU(d, s + i);
    a0 = hn::MulAdd(x, LoadWeights(d, w[0] + i), a0);
    a1 = hn::MulAdd(x, LoadWeights(d, w[1] + i), a1);
    a2 = hn::MulAdd(x, LoadWeights(d, w[2] + i), a2);
    a3 = hn::MulAdd(x, LoadWeights(d, w[3] + i), a3);
  }
  sums[0] += ReduceSum(d, a0);
  sums[1] += ReduceSum(d, a1);
  sums[2] += ReduceSum(d, a2);
  sums[3] += ReduceSum(d, a3);
}

// sums[4 * r + c] += s[r] . w[c] for a 4 x 4 block. Its four row steps are
// alike on purpose: unrolled by hand, with 16 named accumulators meant to
// stay in vector registers.
template <class D, typename WT>
HWY_INLINE void Dot4x4(D d, const float* const s[4], const WT* const w[4],
                       size_t begin, size_t end, float sums[16]) {
  const size_t lanes = hn::Lanes(d);
  auto a00 = hn::Zero(d), a01 = hn::Zero(d), a02 = hn::Zero(d),
       a03 = hn::Zero(d);
  auto a10 = hn::Zero(d), a11 = hn::Zero(d), a12 = hn::Zero(d),
       a13 = hn::Zero(d);
  auto a20 = hn::Zero(d), a21 = hn::Zero(d), a22 = hn::Zero(d),
       a23 = hn::Zero(d);
  auto a30 = hn::Zero(d), a31 = hn::Zero(d), a32 = hn::Zero(d),
       a33 = hn::Zero(d);
  for (size_t i = begin; i + lanes <= end; i += lanes) {
    const auto w0 = LoadWeights(d, w[0] + i);
    const auto w1 = LoadWeights(d, w[1] + i);
    const auto w2 = LoadWeights(d, w[2] + i);
    const auto w3 = LoadWeights(d, w[3] + i);
    auto x = hn::LoadU(d, s[0] + i);
    a00 = hn::MulAdd(x, w0, a00);
    a01 = hn::MulAdd(x, w1, a01);
    a02 = hn::MulAdd(x, w2, a02);
    a03 = hn::MulAdd(x, w3, a03);
    x = hn::LoadU(d, s[1] + i);
    a10 = hn::MulAdd(x, w0, a10);
    a11 = hn::MulAdd(x, w1, a11);
    a12 = hn::MulAdd(x, w2, a12);
    a13 = hn::MulAdd(x, w3, a13);
    x = hn::LoadU(d, s[2] + i);
    a20 = hn::MulAdd(x, w0, a20);
    a21 = hn::MulAdd(x, w1, a21);
    a22 = hn::MulAdd(x, w2, a22);
    a23 = hn::MulAdd(x, w3, a23);
    x = hn::LoadU(d, s[3] + i);
    a30 = hn::MulAdd(x, w0, a30);
    a31 = hn::MulAdd(x, w1, a31);
    a32 = hn::MulAdd(x, w2, a32);
    a33 = hn::MulAdd(x, w3, a33);
  }
  sums[0] += ReduceSum(d, a00);
  sums[1] += ReduceSum(d, a01);
  sums[2] += ReduceSum(d, a02);
  sums[3] += ReduceSum(d, a03);
  sums[4] += ReduceSum(d, a10);
  sums[5] += ReduceSum(d, a11);
  sums[6] += ReduceSum(d, a12);
  sums[7] += ReduceSum(d, a13);
  sums[8] += ReduceSum(d, a20);
  sums[9] += ReduceSum(d, a21);
  sums[10] += ReduceSum(d, a22);
  sums[11] += ReduceSum(d, a23);
  sums[12] += ReduceSum(d, a30);
  sums[13] += ReduceSum(d, a31);
  sums[14] += ReduceSum(d, a32);
  sums[15] += ReduceSum(d, a33);
}

// Offset of the ragged end of a `len`-element range.
HWY_INLINE size_t VectorPart(size_t len) {
  const DF df;
  return len - len % hn::Lanes(df);
}


// Four weight rows starting at column c of [.., col_end); rows past the end
// repeat the last one (their results are discarded).
template <typename WT>
HWY_INLINE void WeightQuad(const WT* weight, size_t k, size_t c,
                           size_t col_end, size_t k_offset, const WT* w[4]) {
  for (size_t j = 0; j < 4; ++j) {
    w[j] = weight + std::min(c + j, col_end - 1) * k + k_offset;
  }
}

template <typename WT>
void GemvColumnsT(const MatmulArgs& a, size_t col_begin, size_t col_end) {
  const WT* weight = static_cast<const WT*>(a.weight);
  const size_t vector_part = VectorPart(a.k);
  for (size_t c = col_begin; c < col_end; c += 4) {
    const WT* w[4];
    WeightQuad(weight, a.k, c, col_end, 0, w);
    float sums[4] = {};
    Dot1x4(DF(), a.src, w, 0, vector_part, sums);
    Dot1x4(D1(), a.src, w, vector_part, a.k, sums);
    const size_t valid = std::min<size_t>(4, col_end - c);
    for (size_t j = 0; j < valid; ++j) {
      a.dst[c + j] = MatmulOutputBase(a, 0, c + j) + sums[j];
    }
  }
}

void GemvColumns(const MatmulArgs& a, size_t col_begin, size_t col_end) {
  if (a.weight_type == WeightType::kF16) {
    GemvColumnsT<hwy::float16_t>(a, col_begin, col_end);
  } else {
    GemvColumnsT<float>(a, col_begin, col_end);
  }
}

// Columns of k processed per pass over a tile, so that four weight rows and
// four src rows of one pass stay in L1 and the tile's src rows in L2. A
// multiple of every target's lane count, so only the last pass is ragged.
constexpr size_t kGemmKBlock = 512;

template <typename WT>
void GemmTileT(const MatmulArgs& a, size_t row_begin, size_t row_end,
               size_t col_begin, size_t col_end) {
  const WT* weight = static_cast<const WT*>(a.weight);
  InitMatmulOutputTile(a, row_begin, row_end, col_begin, col_end);
  for (size_t k0 = 0; k0 < a.k; k0 += kGemmKBlock) {
    const size_t k_len = std::min(kGemmKBlock, a.k - k0);
    const size_t vector_part = VectorPart(k_len);
    for (size_t c = col_begin; c < col_end; c += 4) {
      const WT* w[4];
      WeightQuad(weight, a.k, c, col_end, k0, w);
      const size_t valid_cols = std::min<size_t>(4, col_end - c);
      for (size_t r = row_begin; r < row_end; r += 4) {
        const float* s[4];
        for (size_t i = 0; i < 4; ++i) {
          s[i] = a.src + std::min(r + i, row_end - 1) * a.k + k0;
        }
        float sums[16] = {};
        Dot4x4(DF(), s, w, 0, vector_part, sums);
        Dot4x4(D1(), s, w, vector_part, k_len, sums);
        const size_t valid_rows = std::min<size_t>(4, row_end - r);
        for (size_t i = 0; i < valid_rows; ++i) {
          float* out = a.dst + (r + i) * a.n + c;
          for (size_t j = 0; j < valid_cols; ++j) out[j] += sums[4 * i + j];
        }
      }
    }
  }
}

void GemmTile(const MatmulArgs& a, size_t row_begin, size_t row_end,
              size_t col_begin, size_t col_end) {
  if (a.weight_type == WeightType::kF16) {
    GemmTileT<hwy::float16_t>(a, row_begin, row_end, col_begin, col_end);
  } else {
    GemmTileT<float>(a, row_begin, row_end, col_begin, col_end);
  }
}


// ---------------------------------------------------------------------------
// Block-quantized weights (Q8_0, Q4_0) times int8-quantized activations.
//
// The portable path ("highway"): both operands are widened to int16 and one
// block's dot product is a sequence of int16 pair multiply-adds into int32
// lanes (vpmaddwd on x86, smlal pairs on Arm), exact because |w| <= 128 and
// |x| <= 127. Each block's int32 sums are converted once and scaled by
// d_w * d_x into f32 accumulators.

// Vectors of at most 16 int16 lanes, so that a vector never straddles the
// two nibble halves of a Q4_0 block (bytes 0..15 low, then high nibbles).
using D16 = hn::CappedTag<int16_t, 16>;
using D32 = hn::Repartition<int32_t, D16>;
using DF32 = hn::Repartition<float, D16>;

HWY_INLINE float LoadF16Scale(const uint8_t* block) {
  uint16_t half;
  std::memcpy(&half, block, sizeof(half));
  return Float16ToFloat(half);
}

// Weights [j, j + Lanes(D16)) of a block, widened to int16.
struct Q8_0Weights {
  static constexpr size_t kBlockBytes = kQ8_0BlockBytes;
  static HWY_INLINE hn::Vec<D16> Load(D16 d, const uint8_t* block, size_t j) {
    const hn::Rebind<int8_t, D16> d8;
    return hn::PromoteTo(
        d, hn::LoadU(d8, reinterpret_cast<const int8_t*>(block + 2 + j)));
  }
};
struct Q4_0Weights {
  static constexpr size_t kBlockBytes = kQ4_0BlockBytes;
  static HWY_INLINE hn::Vec<D16> Load(D16 d, const uint8_t* block, size_t j) {
    const hn::Rebind<uint8_t, D16> d8;
    const hn::Rebind<uint16_t, D16> du16;
    constexpr size_t kHalf = kQuantBlock / 2;
    const auto bytes = hn::PromoteTo(du16, hn::LoadU(d8, block + 2 + j % kHalf));
    const auto nibbles = j < kHalf ? hn::And(bytes, hn::Set(du16, 0xF))
                                   : hn::ShiftRight<4>(bytes);
    return hn::Sub(hn::BitCast(d, nibbles), hn::Set(d, 8));
  }
};

// Exact int32 lane sums of one block's products: x (int8) times weights.
template <class W>
HWY_INLINE hn::Vec<D32> BlockDot(const uint8_t* block, const int8_t* x) {
  const D16 d16;
  const D32 d32;
  const hn::Rebind<int8_t, D16> d8;
  auto sum0 = hn::Zero(d32);
  auto sum1 = hn::Zero(d32);
  for (size_t j = 0; j < kQuantBlock; j += hn::Lanes(d16)) {
    sum0 = hn::ReorderWidenMulAccumulate(
        d32, W::Load(d16, block, j), hn::PromoteTo(d16, hn::LoadU(d8, x + j)),
        sum0, sum1);
  }
  return hn::Add(sum0, sum1);
}

// Quantizes rows [row_begin, row_end) of src (k a multiple of 32) into
// int8 values q[r][k] and per-block scales[r][k / 32] (QuantizedActivations).
// A block holding a NaN or an infinity gets the scale NaN and int8 values 0,
// so that every dot product over it is NaN, as in f32 (Max drops NaN on
// Arm, and NaN has no int8 value).
void QuantizeActivationRows(const float* src, size_t k, size_t row_begin,
                            size_t row_end, int8_t* q, float* scales) {
  const hn::CappedTag<float, kQuantBlock> df;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t lanes = hn::Lanes(df);
  const size_t blocks = k / kQuantBlock;
  for (size_t r = row_begin; r < row_end; ++r) {
    for (size_t b = 0; b < blocks; ++b) {
      const size_t offset = r * k + b * kQuantBlock;
      const float* x = src + offset;
      auto vmax = hn::Zero(df);
      auto non_finite = hn::FirstN(df, 0);
      for (size_t j = 0; j < kQuantBlock; j += lanes) {
        const auto v = hn::LoadU(df, x + j);
        vmax = hn::Max(vmax, hn::Abs(v));
        non_finite = hn::Or(non_finite, hn::Not(hn::IsFinite(v)));
      }
      if (!hn::AllFalse(df, non_finite)) {
        std::fill(q + offset, q + offset + kQuantBlock, int8_t{0});
        scales[r * blocks + b] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const auto vid = hn::Set(df, id);
      for (size_t j = 0; j < kQuantBlock; j += lanes) {
        const auto qi = hn::NearestInt(hn::Mul(hn::LoadU(df, x + j), vid));
        hn::StoreU(hn::DemoteTo(di8, qi), di8, q + offset + j);
      }
      scales[r * blocks + b] = d;
    }
  }
}

// Rows [0, a.rows) x columns [col_begin, col_end), column by column: the
// rows after the first read the column's weights from L1. Each row's
// sequence of operations is that of a one-row call.
template <class W>
void QuantGemvColumnsT(const MatmulArgs& a, const QuantizedActivations& x,
                       size_t col_begin, size_t col_end) {
  const DF32 df;
  const size_t blocks = a.k / kQuantBlock;
  const size_t row_bytes = blocks * W::kBlockBytes;
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  for (size_t c = col_begin; c < col_end; ++c) {
    const uint8_t* w = weight + c * row_bytes;
    for (size_t r = 0; r < a.rows; ++r) {
      const int8_t* xq = x.q + r * a.k;
      const float* xs = x.scales + r * blocks;
      // Two accumulators halve the dependency chain of the f32 adds.
      auto acc0 = hn::Zero(df);
      auto acc1 = hn::Zero(df);
      size_t b = 0;
      for (; b + 2 <= blocks; b += 2) {
        const uint8_t* w0 = w + b * W::kBlockBytes;
        const uint8_t* w1 = w0 + W::kBlockBytes;
        const auto s0 = hn::ConvertTo(df, BlockDot<W>(w0, xq + b * kQuantBlock));
        const auto s1 = hn::ConvertTo(df, BlockDot<W>(w1, xq + (b + 1) * kQuantBlock));
        acc0 = hn::MulAdd(s0, hn::Set(df, LoadF16Scale(w0) * xs[b]), acc0);
        acc1 = hn::MulAdd(s1, hn::Set(df, LoadF16Scale(w1) * xs[b + 1]), acc1);
      }
      if (b < blocks) {
        const uint8_t* w0 = w + b * W::kBlockBytes;
        const auto s0 = hn::ConvertTo(df, BlockDot<W>(w0, xq + b * kQuantBlock));
        acc0 = hn::MulAdd(s0, hn::Set(df, LoadF16Scale(w0) * xs[b]), acc0);
      }
      a.dst[r * a.n + c] = MatmulOutputBase(a, r, c) + ReduceSum(df, hn::Add(acc0, acc1));
    }
  }
}

// Blocks of k per pass over a GEMM tile: four rows of int16 activations of
// one pass (4 x 16 x 64 bytes) stay in L1 while a column's weights stream.
constexpr size_t kQuantGemmKBlocks = 16;

template <class W>
void QuantGemmTileT(const MatmulArgs& a, const QuantizedActivations& x,
                    size_t row_begin, size_t row_end, size_t col_begin,
                    size_t col_end) {
  const DF32 df;
  const size_t blocks = a.k / kQuantBlock;
  const size_t row_bytes = blocks * W::kBlockBytes;
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  InitMatmulOutputTile(a, row_begin, row_end, col_begin, col_end);
  for (size_t b0 = 0; b0 < blocks; b0 += kQuantGemmKBlocks) {
    const size_t b1 = std::min(blocks, b0 + kQuantGemmKBlocks);
    for (size_t r = row_begin; r < row_end; r += 4) {
      // Rows past the end repeat the last one; their sums are discarded.
      const int8_t* q[4];
      const float* sc[4];
      for (size_t i = 0; i < 4; ++i) {
        const size_t row = std::min(r + i, row_end - 1);
        q[i] = x.q + row * a.k;
        sc[i] = x.scales + row * blocks;
      }
      const size_t valid_rows = std::min<size_t>(4, row_end - r);
      for (size_t c = col_begin; c < col_end; ++c) {
        const uint8_t* w = weight + c * row_bytes;
        auto acc0 = hn::Zero(df), acc1 = hn::Zero(df), acc2 = hn::Zero(df),
             acc3 = hn::Zero(df);
        for (size_t b = b0; b < b1; ++b) {
          const uint8_t* block = w + b * W::kBlockBytes;
          const float dw = LoadF16Scale(block);
          const size_t e = b * kQuantBlock;
          acc0 = hn::MulAdd(hn::ConvertTo(df, BlockDot<W>(block, q[0] + e)),
                            hn::Set(df, dw * sc[0][b]), acc0);
          acc1 = hn::MulAdd(hn::ConvertTo(df, BlockDot<W>(block, q[1] + e)),
                            hn::Set(df, dw * sc[1][b]), acc1);
          acc2 = hn::MulAdd(hn::ConvertTo(df, BlockDot<W>(block, q[2] + e)),
                            hn::Set(df, dw * sc[2][b]), acc2);
          acc3 = hn::MulAdd(hn::ConvertTo(df, BlockDot<W>(block, q[3] + e)),
                            hn::Set(df, dw * sc[3][b]), acc3);
        }
        const float sums[4] = {ReduceSum(df, acc0), ReduceSum(df, acc1),
                               ReduceSum(df, acc2), ReduceSum(df, acc3)};
        for (size_t i = 0; i < valid_rows; ++i) {
          a.dst[(r + i) * a.n + c] += sums[i];
        }
      }
    }
  }
}

void QuantGemvColumns(const MatmulArgs& a, const QuantizedActivations& x,
                      size_t col_begin, size_t col_end) {
  if (a.weight_type == WeightType::kQ8_0) {
    QuantGemvColumnsT<Q8_0Weights>(a, x, col_begin, col_end);
  } else {
    QuantGemvColumnsT<Q4_0Weights>(a, x, col_begin, col_end);
  }
}

void QuantGemmTile(const MatmulArgs& a, const QuantizedActivations& x,
                   size_t row_begin, size_t row_end, size_t col_begin,
                   size_t col_end) {
  if (a.weight_type == WeightType::kQ8_0) {
    QuantGemmTileT<Q8_0Weights>(a, x, row_begin, row_end, col_begin, col_end);
  } else {
    QuantGemmTileT<Q4_0Weights>(a, x, row_begin, row_end, col_begin, col_end);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::softnpu::compute
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lnpu::softnpu::compute {

namespace {

// The exact int32 dot products of one panel block's 16 weight rows with
// the 32 int8 activations xq: dot[col] = sum_e w[col][e] * xq[e] (Q8_0:
// w = q; Q4_0: w = q - 8). Written for g++ -O2's vectorizer: group g's 64
// bytes (4 quant bytes x 16 rows) times the group's 4 activations repeated
// 16 times, into 64 int32 lanes (lane 4 col + i holds column col's
// products of byte i of its group: Q8_0 k = 4g + i; Q4_0 k = 4g + i (low
// nibble) and 16 + 4g + i (high)); then each column adds its 4 lanes.
// Exact: at most 16 products of |w| <= 128, |x| <= 127 per lane.
template <bool kNibbles>
inline void P16BlockDots(const uint8_t* wq, const int8_t* xq, int32_t (&dot)[lnpu::kP16Rows]) {
  constexpr size_t kGroupBytes = lnpu::kP16GroupBytes;
  constexpr size_t kGroups = kNibbles ? kQuantBlock / 8 : kQuantBlock / 4;
  const auto repeated = [](const int8_t* x4) {
    std::array<int8_t, kGroupBytes> x;
    for (size_t m = 0; m < kGroupBytes; ++m) x[m] = x4[m % 4];
    return x;
  };
  int32_t lanes[kGroupBytes] = {};
  for (size_t g = 0; g < kGroups; ++g) {
    const uint8_t* wg = wq + g * kGroupBytes;
    const std::array<int8_t, kGroupBytes> x = repeated(xq + 4 * g);
    if constexpr (kNibbles) {
      const std::array<int8_t, kGroupBytes> x_high = repeated(xq + kQuantBlock / 2 + 4 * g);
      for (size_t m = 0; m < kGroupBytes; ++m) {
        lanes[m] += (int32_t{wg[m] & 0xF} - 8) * int32_t{x[m]} +
                    (int32_t{wg[m] >> 4} - 8) * int32_t{x_high[m]};
      }
    } else {
      for (size_t m = 0; m < kGroupBytes; ++m) {
        lanes[m] += int32_t{static_cast<int8_t>(wg[m])} * int32_t{x[m]};
      }
    }
  }
  for (size_t col = 0; col < lnpu::kP16Rows; ++col) {
    dot[col] = lanes[4 * col] + lanes[4 * col + 1] + lanes[4 * col + 2] +
               lanes[4 * col + 3];
  }
}

}  // namespace

// The contract's order (quant_matmul.h) in plain C++: per panel, up to
// kRowStep dst rows share each block's 16 converted weight scales and its
// quant bytes (from L1); per row the block's 16 exact int32 dots
// (P16BlockDots) each take one fma into the column's f32 accumulator,
// block after block. The whole panel is computed (the matrix is whole
// panels, so its reads stay inside it) and only the columns in
// [col_begin, col_end) are stored.
void PortableP16Matmul(const MatmulArgs& a, const QuantizedActivations& x,
                       size_t row_begin, size_t row_end, size_t col_begin,
                       size_t col_end) {
  constexpr size_t kP = lnpu::kP16Rows;
  constexpr size_t kRowStep = 4;
  if (row_begin >= row_end || col_begin >= col_end) return;
  const bool nibbles = BlockTypeOf(a.weight_type) == WeightType::kQ4_0;
  const P16Scales layout = PanelScalesOf(a.weight_type);
  const size_t block_bytes = WeightBytes(BlockTypeOf(a.weight_type), kQuantBlock);
  const size_t blocks = a.k / kQuantBlock;
  const size_t panel_bytes = lnpu::P16PanelBytes(block_bytes, blocks);
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  for (size_t p = col_begin / kP; p * kP < col_end; ++p) {
    const uint8_t* panel = weight + p * panel_bytes;
    const size_t c_lo = std::max(col_begin, p * kP) - p * kP;
    const size_t c_hi = std::min(col_end, p * kP + kP) - p * kP;
    for (size_t r0 = row_begin; r0 < row_end; r0 += kRowStep) {
      const size_t rows = std::min(kRowStep, row_end - r0);
      float acc[kRowStep][kP];
      for (auto& row : acc) std::fill(row, row + kP, +0.0f);
      for (size_t b = 0; b < blocks; ++b) {
        const uint8_t* wq = panel + lnpu::P16QuantsOffset(block_bytes, layout, b);
        const uint8_t* scales = panel + lnpu::P16ScalesOffset(block_bytes, layout, blocks, b);
        float dw[kP];
        for (size_t col = 0; col < kP; ++col) {
          uint16_t half;
          std::memcpy(&half, scales + col * 2, sizeof(half));
          dw[col] = Float16ToFloat(half);
        }
        for (size_t i = 0; i < rows; ++i) {
          const int8_t* xq = x.q + (r0 + i) * a.k + b * kQuantBlock;
          int32_t dot[kP];
          if (nibbles) {
            P16BlockDots<true>(wq, xq, dot);
          } else {
            P16BlockDots<false>(wq, xq, dot);
          }
          const float dx = x.scales[(r0 + i) * blocks + b];
          for (size_t col = 0; col < kP; ++col) {
            acc[i][col] = std::fma(static_cast<float>(dot[col]), dw[col] * dx, acc[i][col]);
          }
        }
      }
      for (size_t i = 0; i < rows; ++i) {
        for (size_t col = c_lo; col < c_hi; ++col) {
          const size_t c = p * kP + col;
          a.dst[(r0 + i) * a.n + c] = MatmulOutputBase(a, r0 + i, c) + acc[i][col];
        }
      }
    }
  }
}

HWY_EXPORT(GemvColumns);
HWY_EXPORT(GemmTile);
HWY_EXPORT(QuantizeActivationRows);
HWY_EXPORT(QuantGemvColumns);
HWY_EXPORT(QuantGemmTile);

namespace {

// GEMM tile shape: rows x columns of dst computed by one task.
constexpr size_t kGemmTileRows = 32;
constexpr size_t kGemmTileCols = 64;

// F32 / F16 weights, up to kQuantGemvMaxRows rows: columns of one piece of
// the several-row GEMV (a multiple of 4): 32 columns of a 896-wide F32
// matrix are 112 KiB, in L2.
constexpr size_t kGemvRowsColumnPiece = 32;

void HighwayQuantGemv(const MatmulArgs& a, const QuantizedActivations& x,
                      size_t col_begin, size_t col_end) {
  if (IsPanelType(a.weight_type)) {
    PortableP16Matmul(a, x, 0, a.rows, col_begin, col_end);
    return;
  }
  HWY_DYNAMIC_DISPATCH(QuantGemvColumns)(a, x, col_begin, col_end);
}

void HighwayQuantGemm(const MatmulArgs& a, const QuantizedActivations& x,
                      size_t row_begin, size_t row_end, size_t col_begin,
                      size_t col_end) {
  if (IsPanelType(a.weight_type)) {
    PortableP16Matmul(a, x, row_begin, row_end, col_begin, col_end);
    return;
  }
  HWY_DYNAMIC_DISPATCH(QuantGemmTile)
  (a, x, row_begin, row_end, col_begin, col_end);
}

// Columns of the GEMV's column chunks and pieces are multiples of this:
// the 4-column micro-kernels, or for the panel types whole panels, so that
// no panel is split between chunks (each chunk's kernel would read it all).
size_t GemvColumnGranule(WeightType type) {
  return IsPanelType(type) ? lnpu::kP16Rows : 4;
}

// Columns per piece of the GEMV passes (Matmul, more than
// kQuantGemvMaxRows rows): a multiple of GemvColumnGranule whose weights
// take about 256 KiB, so that they stay in L2 (1-2 MiB per core on the
// AVX-512 CPUs whose path opts in) from the first pass to the last.
size_t GemvPassColumns(const MatmulArgs& a) {
  constexpr size_t kPieceBytes = size_t{256} << 10;
  const size_t row_bytes = WeightBytes(a.weight_type, a.k);
  const size_t granule = GemvColumnGranule(a.weight_type);
  return std::max(granule, kPieceBytes / row_bytes / granule * granule);
}

bool Always() { return true; }

}  // namespace

const QuantMatmulPath kHighwayQuantMatmulPath = {
    .name = "highway",
    .supported = Always,
    .gemv = HighwayQuantGemv,
    .gemm = HighwayQuantGemm,
    .gemm_tile_rows = kGemmTileRows,
    .gemm_tile_cols = kGemmTileCols,
};

namespace {

bool QuantizedWeights(WeightType type) {
  return type == WeightType::kQ8_0 || type == WeightType::kQ4_0 || IsPanelType(type) ||
         type == WeightType::kQ6_K;
}

// Quantizes args.src into the scratch (QuantizedActivations).
QuantizedActivations QuantizeSrc(const MatmulArgs& args, WorkerPool& pool,
                                 KernelScratch* scratch) {
  const size_t blocks = args.k / kQuantBlock;
  scratch->quantized_src.resize(args.rows * args.k);
  scratch->quantized_src_scales.resize(args.rows * blocks);
  ParallelRanges(pool, args.rows, uint64_t{args.rows} * args.k, 1, 1,
                 [&](size_t begin, size_t end) {
                   HWY_DYNAMIC_DISPATCH(QuantizeActivationRows)
                   (args.src, args.k, begin, end, scratch->quantized_src.data(),
                    scratch->quantized_src_scales.data());
                 });
  return {.q = scratch->quantized_src.data(),
          .scales = scratch->quantized_src_scales.data()};
}

// Every row of `a` x columns [begin, end) on the quantized GEMV
// (RunsOnQuantGemv), reading the weights from memory once. Up to
// kQuantGemvMaxRows rows the path's GEMV takes all rows at once; more rows
// run as GEMV passes of up to kQuantGemvMaxRows rows over column pieces
// small enough to stay in L2 for the later passes. Each row's sums are
// exactly those of a call with that row alone.
void QuantGemvRange(const MatmulArgs& a, const QuantizedActivations& x,
                    size_t begin, size_t end) {
  const auto gemv = a.weight_type == WeightType::kQ6_K ? ActiveQ6_KGemv() : ActiveQuantGemv();
  const size_t blocks = a.k / kQuantBlock;
  const size_t piece = a.rows <= kQuantGemvMaxRows ? a.n : GemvPassColumns(a);
  for (size_t c0 = begin; c0 < end; c0 += piece) {
    const size_t c1 = std::min(end, c0 + piece);
    for (size_t r0 = 0; r0 < a.rows; r0 += kQuantGemvMaxRows) {
      MatmulArgs pass = a;
      pass.rows = static_cast<uint32_t>(std::min<size_t>(kQuantGemvMaxRows, a.rows - r0));
      pass.dst = a.dst + r0 * a.n;
      gemv(pass, {.q = x.q + r0 * a.k, .scales = x.scales + r0 * blocks}, c0, c1);
    }
  }
}

// Parallel tasks per thread of the quantized GEMV. Each task is one GEMV
// call whose column streams start cold, and the core's prefetchers take a
// while to run ahead of a new stream: with one task per thread the Zen 5
// VM's decode-step MATMULs streamed 7% (qwen2.5-0.5b) and 4%
// (tinyllama-1.1b) faster than with 4, and 4 tasks as 4 calls each no
// faster than 4 tasks (docs/performance.md, "One GEMV call per thread").
// Where a call reads one stream (Zen 4) its start costs little, and 2
// tasks per thread, which even out the threads, decoded as fast as 8 or
// faster: x86's count is the CPU class's (x86_gemv_walk.h). On mixed
// cores (big.LITTLE, hybrid) a loop of equal halves would wait for its
// slowest core, so there 4 tasks per thread let the fast cores take more
// of the work; 8 and 16 made tinyllama-1.1b decode slower ("Command
// groups").
size_t GemvTasksPerThread() {
  if (!ProcessCpusAreOneKind()) return 4;
#if defined(__x86_64__)
  return GetX86GemvWalk().chunks_per_thread;
#else
  return 1;
#endif
}

// The GEMVs of `group` (each RunsOnQuantGemv, all of x's src, rows and k)
// in one parallel loop: column chunks of about equal weight bytes, each
// within one matrix, of at least 16 columns and a multiple of its
// matrix's column granule (the 4-column micro-kernels, or whole panels).
// A loop that runs on this thread alone takes each matrix as one chunk:
// each chunk is a GEMV call with its own set-up (a 64 x 64 Q8_0_P16S
// MATMUL of stories260K took 160 instead of 210 ns on the Zen 4 VM).
void RunQuantGemvs(absl::Span<const MatmulArgs> group, const QuantizedActivations& x,
                   WorkerPool& pool, KernelScratch* scratch) {
  uint64_t work = 0;
  uint64_t weight_bytes = 0;
  for (const MatmulArgs& a : group) {
    work += uint64_t{a.rows} * a.k * a.n;
    weight_bytes += uint64_t{a.n} * WeightBytes(a.weight_type, a.k);
  }
  const bool caller_alone = RunsOnCallerAlone(pool, work);
  const uint64_t task_bytes =
      caller_alone ? weight_bytes : CeilDiv(weight_bytes, GemvTasksPerThread() * pool.threads());
  std::vector<KernelScratch::ColumnChunk>& chunks = scratch->column_chunks;
  chunks.clear();
  for (uint32_t m = 0; m < group.size(); ++m) {
    const MatmulArgs& a = group[m];
    const size_t granule = GemvColumnGranule(a.weight_type);
    const size_t columns = std::max<size_t>(16, CeilDiv(task_bytes, WeightBytes(a.weight_type, a.k)));
    const size_t chunk = CeilDiv(columns, granule) * granule;
    for (size_t c = 0; c < a.n; c += chunk) {
      chunks.push_back({.matrix = m, .begin = c, .end = std::min(a.n, c + chunk)});
    }
  }
  RunTasksOn(pool, caller_alone, chunks.size(), [&](size_t task, int) {
    const KernelScratch::ColumnChunk& chunk = chunks[task];
    QuantGemvRange(group[chunk.matrix], x, chunk.begin, chunk.end);
  });
}

}  // namespace

bool RunsOnQuantGemv(const MatmulArgs& args) {
  // Q6_K has no GEMM: every row count runs as GEMV passes.
  return args.weight_type == WeightType::kQ6_K ||
         (QuantizedWeights(args.weight_type) &&
          args.rows <= GemvPassesMaxRows(ActiveQuantMatmulPath(), args.weight_type));
}

void MatmulGroup(absl::Span<const MatmulArgs> group, WorkerPool& pool, KernelScratch* scratch) {
  // Rows beyond the GEMV paths (the active path may have changed since the
  // group was formed, SetQuantMatmulPathForTest) run one by one.
  if (!std::all_of(group.begin(), group.end(),
                   [](const MatmulArgs& a) { return RunsOnQuantGemv(a); })) {
    for (const MatmulArgs& a : group) Matmul(a, pool, scratch);
    return;
  }
  RunQuantGemvs(group, QuantizeSrc(group[0], pool, scratch), pool, scratch);
}

void Matmul(const MatmulArgs& args, WorkerPool& pool, KernelScratch* scratch) {
  const uint64_t work = uint64_t{args.rows} * args.k * args.n;
  const bool quantized = QuantizedWeights(args.weight_type);
  const QuantMatmulPath& path = ActiveQuantMatmulPath();
  const QuantizedActivations x =
      quantized ? QuantizeSrc(args, pool, scratch) : QuantizedActivations{};
  if (RunsOnQuantGemv(args)) {
    // Bandwidth-bound: the weights are read from memory once per call.
    RunQuantGemvs({&args, 1}, x, pool, scratch);
    return;
  }
  if (!quantized && args.rows <= kQuantGemvMaxRows) {
    // F32 / F16, bandwidth-bound: each row through the GEMV, over column
    // pieces whose weights stay in cache for the other rows. Each row's
    // sums are exactly those of a call with that row alone.
    ParallelRanges(pool, args.n, work, 16, 4, [&](size_t begin, size_t end) {
      const size_t piece = args.rows == 1 ? end - begin : kGemvRowsColumnPiece;
      for (size_t c0 = begin; c0 < end; c0 += piece) {
        const size_t c1 = std::min(end, c0 + piece);
        for (size_t r = 0; r < args.rows; ++r) {
          MatmulArgs row = args;
          row.src = args.src + r * args.k;
          row.dst = args.dst + r * args.n;
          row.rows = 1;
          HWY_DYNAMIC_DISPATCH(GemvColumns)(row, c0, c1);
        }
      }
    });
    return;
  }
  const size_t tile_rows = quantized ? path.gemm_tile_rows : kGemmTileRows;
  const size_t tile_cols = quantized ? path.gemm_tile_cols : kGemmTileCols;
  const size_t row_tiles = CeilDiv(args.rows, tile_rows);
  const size_t col_tiles = CeilDiv(args.n, tile_cols);
  RunTasks(pool, row_tiles * col_tiles, work, [&](size_t task, int) {
    // Consecutive tasks share a column tile, so its weights are reused
    // from cache across row tiles.
    const size_t row0 = (task % row_tiles) * tile_rows;
    const size_t col0 = (task / row_tiles) * tile_cols;
    const size_t row1 = std::min(args.rows, row0 + tile_rows);
    const size_t col1 = std::min(args.n, col0 + tile_cols);
    if (quantized) {
      path.gemm(args, x, row0, row1, col0, col1);
    } else {
      HWY_DYNAMIC_DISPATCH(GemmTile)(args, row0, row1, col0, col1);
    }
  });
}

}  // namespace lnpu::softnpu::compute
#endif  // HWY_ONCE
