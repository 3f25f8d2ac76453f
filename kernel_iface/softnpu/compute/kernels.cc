// Highway re-includes this file once per enabled SIMD target (see
// foreach_target.h); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target, the HWY_ONCE part once.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel_iface/softnpu/compute/kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/half.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernel_iface/softnpu/compute/kernels.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"

// Target-independent constants, defined on the first inclusion only.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_CONSTANTS_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_CONSTANTS_
namespace lnpu::softnpu::compute {
// Keys scored per online-softmax step of attention: the running output is
// rescaled at most once per block.
inline constexpr size_t kAttentionBlock = 64;
// Attention scores with keys across vector lanes up to this head_dim, dot
// products over head_dim beyond it.
inline constexpr size_t kKeyLanesMaxDim = 16;
}  // namespace lnpu::softnpu::compute
#endif

HWY_BEFORE_NAMESPACE();
namespace lnpu::softnpu::compute {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
// One-lane tag for the ragged end of a loop, so that a body written for
// vectors also serves the last len % Lanes(DF) elements without reading or
// writing past them.
using D1 = hn::CappedTag<float, 1>;

template <class D>
HWY_INLINE float ReduceSum(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// Calls body(d, i) for i stepping through [0, count): full vectors of DF
// first, then single lanes of D1.
template <class Body>
HWY_INLINE void ForEachVector(size_t count, const Body& body) {
  const DF df;
  const D1 d1;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) body(df, i);
  for (; i < count; ++i) body(d1, i);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadWeights(D d, const float* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadWeights(D d, const hwy::float16_t* p) {
  const hn::Rebind<hwy::float16_t, D> dh;
  return hn::PromoteTo(d, hn::LoadU(dh, p));
}

// ---------------------------------------------------------------------------
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

// sums[4 * r + c] += s[r] . w[c] for a 4 x 4 block.
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
  for (size_t r = row_begin; r < row_end; ++r) {
    for (size_t c = col_begin; c < col_end; ++c) {
      a.dst[r * a.n + c] = MatmulOutputBase(a, r, c);
    }
  }
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
      for (size_t j = 0; j < kQuantBlock; j += lanes) {
        vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, x + j)));
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

template <class W>
void QuantGemvColumnsT(const MatmulArgs& a, const QuantizedActivations& x,
                       size_t col_begin, size_t col_end) {
  const DF32 df;
  const size_t blocks = a.k / kQuantBlock;
  const size_t row_bytes = blocks * W::kBlockBytes;
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  for (size_t c = col_begin; c < col_end; ++c) {
    const uint8_t* w = weight + c * row_bytes;
    // Two accumulators halve the dependency chain of the f32 adds.
    auto acc0 = hn::Zero(df);
    auto acc1 = hn::Zero(df);
    size_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
      const uint8_t* w0 = w + b * W::kBlockBytes;
      const uint8_t* w1 = w0 + W::kBlockBytes;
      const auto s0 = hn::ConvertTo(df, BlockDot<W>(w0, x.q + b * kQuantBlock));
      const auto s1 =
          hn::ConvertTo(df, BlockDot<W>(w1, x.q + (b + 1) * kQuantBlock));
      acc0 = hn::MulAdd(s0, hn::Set(df, LoadF16Scale(w0) * x.scales[b]), acc0);
      acc1 = hn::MulAdd(s1, hn::Set(df, LoadF16Scale(w1) * x.scales[b + 1]),
                        acc1);
    }
    if (b < blocks) {
      const uint8_t* w0 = w + b * W::kBlockBytes;
      const auto s0 = hn::ConvertTo(df, BlockDot<W>(w0, x.q + b * kQuantBlock));
      acc0 = hn::MulAdd(s0, hn::Set(df, LoadF16Scale(w0) * x.scales[b]), acc0);
    }
    a.dst[c] = MatmulOutputBase(a, 0, c) + ReduceSum(df, hn::Add(acc0, acc1));
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
  for (size_t r = row_begin; r < row_end; ++r) {
    for (size_t c = col_begin; c < col_end; ++c) {
      a.dst[r * a.n + c] = MatmulOutputBase(a, r, c);
    }
  }
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

// ---------------------------------------------------------------------------
// Vector helpers shared by the remaining kernels.

HWY_INLINE float Dot(const float* a, const float* b, size_t len) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  auto s0 = hn::Zero(df), s1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * lanes <= len; i += 2 * lanes) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, a + i + lanes), hn::LoadU(df, b + i + lanes),
                    s1);
  }
  for (; i + lanes <= len; i += lanes) {
    s0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), s0);
  }
  float sum = ReduceSum(df, hn::Add(s0, s1));
  for (; i < len; ++i) sum += a[i] * b[i];
  return sum;
}

// dst[i] = src[i] * factor (+ 0); dst may equal src.
HWY_INLINE void Scale(const float* src, float factor, float* dst, size_t len) {
  ForEachVector(len, [&](auto d, size_t i) {
    hn::StoreU(hn::Mul(hn::LoadU(d, src + i), hn::Set(d, factor)), d, dst + i);
  });
}

// ---------------------------------------------------------------------------
// Element-wise kernels.

void RmsNormRows(const float* src, const float* weight, float* dst,
                 size_t row_begin, size_t row_end, size_t dim, float eps) {
  for (size_t r = row_begin; r < row_end; ++r) {
    const float* x = src + r * dim;
    float* y = dst + r * dim;
    const float mean_square = Dot(x, x, dim) / static_cast<float>(dim);
    const float inv_rms = 1.0f / std::sqrt(mean_square + eps);
    ForEachVector(dim, [&](auto d, size_t i) {
      const auto v = hn::Mul(hn::LoadU(d, x + i), hn::Set(d, inv_rms));
      hn::StoreU(hn::Mul(v, hn::LoadU(d, weight + i)), d, y + i);
    });
  }
}

void SwigluRange(const float* gate, const float* up, float* dst, size_t begin,
                 size_t end) {
  ForEachVector(end - begin, [&](auto d, size_t j) {
    const size_t i = begin + j;
    const auto g = hn::LoadU(d, gate + i);
    // exp(-g) is clamped below FLT_MAX's exponent, where silu(g) is g / inf
    // = -0 to float precision anyway; Exp is only specified up to +104.
    const auto e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, 88.0f)));
    const auto silu = hn::Div(g, hn::Add(hn::Set(d, 1.0f), e));
    hn::StoreU(hn::Mul(silu, hn::LoadU(d, up + i)), d, dst + i);
  });
}

void AddRange(const float* a, const float* b, float* dst, size_t begin,
              size_t end) {
  ForEachVector(end - begin, [&](auto d, size_t j) {
    const size_t i = begin + j;
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, dst + i);
  });
}

void ConvertF16Range(const uint16_t* src, float* dst, size_t count) {
  const auto* half = reinterpret_cast<const hwy::float16_t*>(src);
  ForEachVector(count, [&](auto d, size_t i) {
    hn::StoreU(LoadWeights(d, half + i), d, dst + i);
  });
}

// ---------------------------------------------------------------------------
// RoPE. `table` holds 2 * rope_dim floats per worker: cos then sin.

void RopeRows(const RopeArgs& a, const double* inv_freq, size_t row_begin,
              size_t row_end, float* table) {
  const size_t half = a.rope_dim / 2;
  float* cos_t = table;
  float* sin_t = table + a.rope_dim;
  for (size_t r = row_begin; r < row_end; ++r) {
    const double pos = static_cast<double>(a.positions[r]);
    // NORM: cos_t[2i] = cos_t[2i+1] = cos(theta_i) and sin_t holds
    // (-sin, +sin), so out = x * cos_t + swap_pairs(x) * sin_t.
    // NEOX: cos_t[i], sin_t[i] for i < half.
    for (size_t i = 0; i < half; ++i) {
      const double theta = pos * inv_freq[i];
      const float c = static_cast<float>(std::cos(theta));
      const float s = static_cast<float>(std::sin(theta));
      if (a.neox) {
        cos_t[i] = c;
        sin_t[i] = s;
      } else {
        cos_t[2 * i] = cos_t[2 * i + 1] = c;
        sin_t[2 * i] = -s;
        sin_t[2 * i + 1] = s;
      }
    }
    for (size_t h = 0; h < a.heads; ++h) {
      const size_t offset = (r * a.heads + h) * a.head_dim;
      const float* x = a.src + offset;
      float* y = a.dst + offset;
      if (a.neox) {
        ForEachVector(half, [&](auto d, size_t i) {
          const auto x0 = hn::LoadU(d, x + i);
          const auto x1 = hn::LoadU(d, x + half + i);
          const auto c = hn::LoadU(d, cos_t + i);
          const auto s = hn::LoadU(d, sin_t + i);
          hn::StoreU(hn::NegMulAdd(x1, s, hn::Mul(x0, c)), d, y + i);
          hn::StoreU(hn::MulAdd(x0, s, hn::Mul(x1, c)), d, y + half + i);
        });
      } else {
        const DF df;
        const size_t lanes = hn::Lanes(df);
        size_t i = 0;
        if (lanes >= 2) {  // pairs never straddle an even lane count
          for (; i + lanes <= a.rope_dim; i += lanes) {
            const auto v = hn::LoadU(df, x + i);
            const auto rotated = hn::MulAdd(
                hn::Reverse2(df, v), hn::LoadU(df, sin_t + i),
                hn::Mul(v, hn::LoadU(df, cos_t + i)));
            hn::StoreU(rotated, df, y + i);
          }
        }
        for (; i < a.rope_dim; i += 2) {
          const float x0 = x[i];
          const float x1 = x[i + 1];
          y[i] = x0 * cos_t[i] + x1 * sin_t[i];
          y[i + 1] = x1 * cos_t[i + 1] + x0 * sin_t[i + 1];
        }
      }
      if (y != x && a.rope_dim < a.head_dim) {
        std::memcpy(y + a.rope_dim, x + a.rope_dim,
                    (a.head_dim - a.rope_dim) * sizeof(float));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Attention.
//
// A task attends the query heads of one GQA group (one row, one kv head) to
// a range of that row's keys: the visible cache slots in slot order, then
// new rows 0..row. Keys are taken in blocks of up to kAttentionBlock, whose
// K and V rows are converted to f32 once for the whole group. Scores: for
// head_dim <= kKeyLanesMaxDim the block's keys are transposed (gathered)
// once so that a vector holds one dimension of many keys, and a score
// vector is head_dim multiply-adds of a broadcast q element, without
// horizontal sums; for longer heads, dot products over head_dim, four keys
// at a time. Loops over head_dim run in vectors of a tag no wider than
// head_dim (head_dim 8 uses 8 lanes even where vectors have 16). The online
// softmax rescales the output once per block, folded into the block's value
// accumulation.

// Per-worker memory of a task (sized by Attention()).
struct GroupScratch {
  float* q;       // [group][head_dim]: the group's query rows times scale
  float* keys;    // [kAttentionBlock][head_dim]
  float* keys_t;  // [head_dim][kAttentionBlock]: keys transposed
  float* values;  // [kAttentionBlock][head_dim]
  float* scores;  // [group][kAttentionBlock], then softmax weights
};

// Online-softmax state of a task's query heads over the keys seen so far,
// group * (head_dim + 2) floats: acc[group][head_dim] (unnormalised
// output), then max[group] and sum[group] (-inf and 0 before any key).
struct GroupState {
  float* acc;
  float* max;
  float* sum;
};

// Converts rows index(first .. first + n) of `base` (rows `stride` elements
// apart) to f32 rows of `dim` at out.
template <class D, typename KV, class IndexFn>
HWY_INLINE void ConvertKvRows(D d, const KV* base, size_t stride,
                              size_t first, size_t n, const IndexFn& index,
                              size_t dim, float* out) {
  const D1 d1;
  const size_t lanes = hn::Lanes(d);
  for (size_t j = 0; j < n; ++j) {
    const KV* row = base + index(first + j) * stride;
    float* o = out + j * dim;
    size_t i = 0;
    for (; i + lanes <= dim; i += lanes) {
      hn::StoreU(LoadWeights(d, row + i), d, o + i);
    }
    for (; i < dim; ++i) hn::StoreU(LoadWeights(d1, row + i), d1, o + i);
  }
}

// scores[j] = q . keys[j] for the n key rows of `dim` at keys.
template <class D>
HWY_INLINE void BlockScores(D d, const float* q, const float* keys, size_t n,
                            size_t dim, float* scores) {
  const size_t lanes = hn::Lanes(d);
  const size_t vector_dim = dim - dim % lanes;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float* k = keys + j * dim;
    auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d),
         s3 = hn::Zero(d);
    for (size_t i = 0; i < vector_dim; i += lanes) {
      const auto qv = hn::LoadU(d, q + i);
      s0 = hn::MulAdd(qv, hn::LoadU(d, k + i), s0);
      s1 = hn::MulAdd(qv, hn::LoadU(d, k + dim + i), s1);
      s2 = hn::MulAdd(qv, hn::LoadU(d, k + 2 * dim + i), s2);
      s3 = hn::MulAdd(qv, hn::LoadU(d, k + 3 * dim + i), s3);
    }
    float t0 = ReduceSum(d, s0), t1 = ReduceSum(d, s1),
          t2 = ReduceSum(d, s2), t3 = ReduceSum(d, s3);
    for (size_t i = vector_dim; i < dim; ++i) {
      t0 += q[i] * k[i];
      t1 += q[i] * k[dim + i];
      t2 += q[i] * k[2 * dim + i];
      t3 += q[i] * k[3 * dim + i];
    }
    scores[j] = t0;
    scores[j + 1] = t1;
    scores[j + 2] = t2;
    scores[j + 3] = t3;
  }
  for (; j < n; ++j) {
    const float* k = keys + j * dim;
    auto s = hn::Zero(d);
    for (size_t i = 0; i < vector_dim; i += lanes) {
      s = hn::MulAdd(hn::LoadU(d, q + i), hn::LoadU(d, k + i), s);
    }
    float t = ReduceSum(d, s);
    for (size_t i = vector_dim; i < dim; ++i) t += q[i] * k[i];
    scores[j] = t;
  }
}

// keys_t[i][j] = keys[j][i] for j < n rounded up to whole vectors (rows
// from n on are zeroed first; keys holds kAttentionBlock rows).
HWY_INLINE void TransposeKeys(float* keys, size_t n, size_t dim,
                              float* keys_t) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const size_t lanes = hn::Lanes(df);
  const size_t padded = (n + lanes - 1) / lanes * lanes;
  std::fill(keys + n * dim, keys + padded * dim, 0.0f);
  const auto index = hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(dim)));
  for (size_t j = 0; j < padded; j += lanes) {
    for (size_t i = 0; i < dim; ++i) {
      hn::StoreU(hn::GatherIndex(df, keys + j * dim + i, index), df,
                 keys_t + i * kAttentionBlock + j);
    }
  }
}

// scores[j] = q . keys[j] for j < n (and for the padding up to a whole
// vector) from the transposed keys.
HWY_INLINE void TransposedScores(const float* q, const float* keys_t,
                                 size_t n, size_t dim, float* scores) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  size_t j = 0;
  for (; j + lanes < n; j += 2 * lanes) {
    auto s0 = hn::Zero(df), s1 = hn::Zero(df);
    for (size_t i = 0; i < dim; ++i) {
      const auto qi = hn::Set(df, q[i]);
      const float* k = keys_t + i * kAttentionBlock + j;
      s0 = hn::MulAdd(qi, hn::LoadU(df, k), s0);
      s1 = hn::MulAdd(qi, hn::LoadU(df, k + lanes), s1);
    }
    hn::StoreU(s0, df, scores + j);
    hn::StoreU(s1, df, scores + j + lanes);
  }
  if (j < n) {
    auto s0 = hn::Zero(df);
    for (size_t i = 0; i < dim; ++i) {
      s0 = hn::MulAdd(hn::Set(df, q[i]),
                      hn::LoadU(df, keys_t + i * kAttentionBlock + j), s0);
    }
    hn::StoreU(s0, df, scores + j);
  }
}

// Turns the n scores into softmax weights exp(score - new max), folds them
// into max / sum and returns the factor by which the output accumulated so
// far must be rescaled.
HWY_INLINE float SoftmaxBlock(float* scores, size_t n, float& max,
                              float& sum) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  float block_max = -std::numeric_limits<float>::infinity();
  size_t i = 0;
  if (n >= lanes) {
    auto m = hn::LoadU(df, scores);
    for (i = lanes; i + lanes <= n; i += lanes) {
      m = hn::Max(m, hn::LoadU(df, scores + i));
    }
    block_max = hn::GetLane(hn::MaxOfLanes(df, m));
  }
  for (; i < n; ++i) block_max = std::max(block_max, scores[i]);
  float alpha = 1.0f;
  if (block_max > max) {
    alpha = sum > 0.0f ? std::exp(max - block_max) : 0.0f;
    max = block_max;
  }
  float block_sum = 0.0f;
  ForEachVector(n, [&](auto d, size_t j) {
    const auto p = hn::Exp(d, hn::Sub(hn::LoadU(d, scores + j), hn::Set(d, max)));
    hn::StoreU(p, d, scores + j);
    block_sum += ReduceSum(d, p);
  });
  sum = sum * alpha + block_sum;
  return alpha;
}

// acc = acc * alpha + sum_j p[j] * values[j] over the n value rows of `dim`.
template <class D>
HWY_INLINE void AccumulateValues(D d, const float* p, const float* values,
                                 size_t n, size_t dim, float alpha,
                                 float* acc) {
  const size_t lanes = hn::Lanes(d);
  const size_t vector_dim = dim - dim % lanes;
  for (size_t i = 0; i < vector_dim; i += lanes) {
    auto a0 = hn::Mul(hn::LoadU(d, acc + i), hn::Set(d, alpha));
    auto a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    const float* v = values + i;
    size_t j = 0;
    for (; j + 4 <= n; j += 4, v += 4 * dim) {
      a0 = hn::MulAdd(hn::Set(d, p[j]), hn::LoadU(d, v), a0);
      a1 = hn::MulAdd(hn::Set(d, p[j + 1]), hn::LoadU(d, v + dim), a1);
      a2 = hn::MulAdd(hn::Set(d, p[j + 2]), hn::LoadU(d, v + 2 * dim), a2);
      a3 = hn::MulAdd(hn::Set(d, p[j + 3]), hn::LoadU(d, v + 3 * dim), a3);
    }
    for (; j < n; ++j, v += dim) {
      a0 = hn::MulAdd(hn::Set(d, p[j]), hn::LoadU(d, v), a0);
    }
    hn::StoreU(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), d, acc + i);
  }
  for (size_t i = vector_dim; i < dim; ++i) {
    float a = acc[i] * alpha;
    for (size_t j = 0; j < n; ++j) a += p[j] * values[j * dim + i];
    acc[i] = a;
  }
}

// Folds keys/values index(begin .. end) of k_base / v_base into the state
// of the `group` query heads at s.q.
template <class D, typename KV, class IndexFn>
HWY_INLINE void AttendKeys(D d, size_t group, size_t dim, const KV* k_base,
                           const KV* v_base, size_t stride, size_t begin,
                           size_t end, const IndexFn& index,
                           const GroupScratch& s, const GroupState& st) {
  // Long heads take fewer keys per block, so that the block's K and V rows
  // (2 * block * dim floats) stay within about 16 KB of L1.
  const size_t block =
      std::clamp<size_t>(2048 / dim, kAttentionBlock / 4, kAttentionBlock);
  for (size_t b = begin; b < end; b += block) {
    const size_t n = std::min(block, end - b);
    ConvertKvRows(d, k_base, stride, b, n, index, dim, s.keys);
    ConvertKvRows(d, v_base, stride, b, n, index, dim, s.values);
    const bool transposed = dim <= kKeyLanesMaxDim;
    if (transposed) TransposeKeys(s.keys, n, dim, s.keys_t);
    for (size_t h = 0; h < group; ++h) {
      float* scores = s.scores + h * kAttentionBlock;
      if (transposed) {
        TransposedScores(s.q + h * dim, s.keys_t, n, dim, scores);
      } else {
        BlockScores(d, s.q + h * dim, s.keys, n, dim, scores);
      }
      const float alpha = SoftmaxBlock(scores, n, st.max[h], st.sum[h]);
      AccumulateValues(d, scores, s.values, n, dim, alpha, st.acc + h * dim);
    }
  }
}

template <class D, typename KV>
void AttendRangeT(D d, const AttentionArgs& a, const KV* k_new,
                  const KV* v_new, const uint32_t* visible_slots,
                  size_t visible_count, size_t row, size_t kv_head,
                  size_t key_begin, size_t key_end, const GroupScratch& s,
                  const GroupState& st) {
  const size_t dim = a.head_dim;
  const size_t group = a.heads / a.kv_heads;
  const size_t stride = a.kv_heads * dim;
  Scale(a.q + (row * a.heads + kv_head * group) * dim, a.scale, s.q,
        group * dim);
  std::fill(st.acc, st.acc + group * dim, 0.0f);
  std::fill(st.max, st.max + group, -std::numeric_limits<float>::infinity());
  std::fill(st.sum, st.sum + group, 0.0f);
  const size_t cache_end = std::min(key_end, visible_count);
  if (key_begin < cache_end) {
    const auto* k_cache = static_cast<const KV*>(a.k_cache) + kv_head * dim;
    const auto* v_cache = static_cast<const KV*>(a.v_cache) + kv_head * dim;
    AttendKeys(
        d, group, dim, k_cache, v_cache, stride, key_begin, cache_end,
        [&](size_t i) -> size_t { return visible_slots[i]; }, s, st);
  }
  const size_t new_begin = std::max(key_begin, visible_count);
  if (new_begin < key_end) {
    AttendKeys(
        d, group, dim, k_new + kv_head * dim, v_new + kv_head * dim, stride,
        new_begin - visible_count, key_end - visible_count,
        [](size_t i) { return i; }, s, st);
  }
}

template <typename KV>
void AttendRangeKv(const AttentionArgs& a, const KV* k_new, const KV* v_new,
                   const uint32_t* visible_slots, size_t visible_count,
                   size_t row, size_t kv_head, size_t key_begin,
                   size_t key_end, const GroupScratch& s,
                   const GroupState& st) {
  // The widest tag with no more lanes than head_dim.
  const auto run = [&](auto d) {
    AttendRangeT(d, a, k_new, v_new, visible_slots, visible_count, row,
                 kv_head, key_begin, key_end, s, st);
  };
  const DF df;
  const hn::CappedTag<float, 8> d8;
  const hn::CappedTag<float, 4> d4;
  if (a.head_dim >= hn::Lanes(df)) {
    run(df);
  } else if (a.head_dim >= hn::Lanes(d8)) {
    run(d8);
  } else if (a.head_dim >= hn::Lanes(d4)) {
    run(d4);
  } else {
    run(D1());
  }
}

// Attends the query heads of kv_head's group in row `row` to keys
// [key_begin, key_end) of the row's keys (visible_slots, then new rows
// 0..row; k_new / v_new as a.kv_type), leaving the softmax state in `state`
// (laid out as GroupState; an empty range leaves sums of 0). With `dst`
// (the row's [heads][head_dim] output) the state is also normalised into
// dst. `scratch`: laid out as GroupScratch.
void AttendRange(const AttentionArgs& a, const void* k_new, const void* v_new,
                 const uint32_t* visible_slots, size_t visible_count,
                 size_t row, size_t kv_head, size_t key_begin, size_t key_end,
                 float* scratch, float* state, float* dst) {
  const size_t group = a.heads / a.kv_heads;
  const size_t dim = a.head_dim;
  GroupScratch s;
  s.q = scratch;
  s.keys = s.q + group * dim;
  s.keys_t = s.keys + kAttentionBlock * dim;
  s.values = s.keys_t + kAttentionBlock * dim;
  s.scores = s.values + kAttentionBlock * dim;
  GroupState st;
  st.acc = state;
  st.max = st.acc + group * dim;
  st.sum = st.max + group;
  if (a.kv_type == WeightType::kF16) {
    AttendRangeKv(a, static_cast<const hwy::float16_t*>(k_new),
                  static_cast<const hwy::float16_t*>(v_new), visible_slots,
                  visible_count, row, kv_head, key_begin, key_end, s, st);
  } else {
    AttendRangeKv(a, static_cast<const float*>(k_new),
                  static_cast<const float*>(v_new), visible_slots,
                  visible_count, row, kv_head, key_begin, key_end, s, st);
  }
  if (dst == nullptr) return;
  // The range holds new row `row` itself, so every sum >= 1.
  for (size_t h = 0; h < group; ++h) {
    Scale(st.acc + h * dim, 1.0f / st.sum[h],
          dst + (kv_head * group + h) * dim, dim);
  }
}

// Round to nearest even on every target: hardware conversions (F16C on
// x86, fcvt on Arm) where Highway uses them, else the exact scalar one
// (Highway's emulated DemoteTo truncates).
void ConvertF32ToF16Range(const float* src, uint16_t* dst, size_t count) {
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)) || \
    (HWY_ARCH_ARM && HWY_TARGET != HWY_EMU128)
  auto* half = reinterpret_cast<hwy::float16_t*>(dst);
  ForEachVector(count, [&](auto d, size_t i) {
    const hn::Rebind<hwy::float16_t, decltype(d)> dh;
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(d, src + i)), dh, half + i);
  });
#else
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToFloat16(src[i]);
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::softnpu::compute
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lnpu::softnpu::compute {

HWY_EXPORT(GemvColumns);
HWY_EXPORT(GemmTile);
HWY_EXPORT(QuantizeActivationRows);
HWY_EXPORT(QuantGemvColumns);
HWY_EXPORT(QuantGemmTile);
HWY_EXPORT(ConvertF32ToF16Range);
HWY_EXPORT(RmsNormRows);
HWY_EXPORT(SwigluRange);
HWY_EXPORT(AddRange);
HWY_EXPORT(ConvertF16Range);
HWY_EXPORT(RopeRows);
HWY_EXPORT(AttendRange);

namespace {

// Below this many multiply-adds (or elements) a loop runs on the calling
// thread: waking the workers would cost more than it saves.
constexpr uint64_t kMinParallelWork = uint64_t{1} << 15;

size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

// Runs fn over `tasks` tasks, on the pool if `work` justifies it.
void RunTasks(WorkerPool& pool, size_t tasks, uint64_t work,
              WorkerPool::TaskFn fn) {
  if (work < kMinParallelWork || pool.threads() == 1) {
    for (size_t task = 0; task < tasks; ++task) fn(task, 0);
  } else {
    pool.ParallelFor(tasks, fn);
  }
}

// Splits [0, count) into chunks of at least `min_chunk` elements, about
// `per_thread` chunks per thread for load balance; chunk sizes are
// multiples of `granule`.
size_t ChunkSize(size_t count, const WorkerPool& pool, size_t per_thread,
                 size_t min_chunk, size_t granule) {
  const size_t target = CeilDiv(count, pool.threads() * per_thread);
  const size_t chunk = std::max(target, min_chunk);
  return CeilDiv(chunk, granule) * granule;
}

// Runs range_fn(begin, end) over [0, count) in parallel chunks.
template <class RangeFn>
void ParallelRanges(WorkerPool& pool, size_t count, uint64_t work,
                    size_t min_chunk, size_t granule, const RangeFn& range_fn) {
  const size_t chunk = ChunkSize(count, pool, 4, min_chunk, granule);
  RunTasks(pool, CeilDiv(count, chunk), work, [&](size_t task, int) {
    const size_t begin = task * chunk;
    range_fn(begin, std::min(count, begin + chunk));
  });
}

// Attention: the fewest keys worth a split of one row's keys (flash-decoding).
constexpr size_t kMinKeysPerSplit = 256;

// GEMM tile shape: rows x columns of dst computed by one task.
constexpr size_t kGemmTileRows = 32;
constexpr size_t kGemmTileCols = 64;

}  // namespace

size_t WeightBytes(WeightType type, size_t elements) {
  switch (type) {
    case WeightType::kF32: return elements * sizeof(float);
    case WeightType::kF16: return elements * sizeof(uint16_t);
    case WeightType::kQ8_0: return elements / kQuantBlock * kQ8_0BlockBytes;
    case WeightType::kQ4_0: return elements / kQuantBlock * kQ4_0BlockBytes;
  }
  return 0;
}

namespace {

void HighwayQuantGemv(const MatmulArgs& a, const QuantizedActivations& x,
                      size_t col_begin, size_t col_end) {
  HWY_DYNAMIC_DISPATCH(QuantGemvColumns)(a, x, col_begin, col_end);
}

void HighwayQuantGemm(const MatmulArgs& a, const QuantizedActivations& x,
                      size_t row_begin, size_t row_end, size_t col_begin,
                      size_t col_end) {
  HWY_DYNAMIC_DISPATCH(QuantGemmTile)
  (a, x, row_begin, row_end, col_begin, col_end);
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

void Matmul(const MatmulArgs& args, WorkerPool& pool, KernelScratch* scratch) {
  const uint64_t work = uint64_t{args.rows} * args.k * args.n;
  const bool quantized = args.weight_type == WeightType::kQ8_0 ||
                         args.weight_type == WeightType::kQ4_0;
  const QuantMatmulPath& path = ActiveQuantMatmulPath();
  QuantizedActivations x;
  if (quantized) {
    const size_t blocks = args.k / kQuantBlock;
    scratch->quantized_src.resize(args.rows * args.k);
    scratch->quantized_src_scales.resize(args.rows * blocks);
    x.q = scratch->quantized_src.data();
    x.scales = scratch->quantized_src_scales.data();
    ParallelRanges(pool, args.rows, uint64_t{args.rows} * args.k, 1, 1,
                   [&](size_t begin, size_t end) {
                     HWY_DYNAMIC_DISPATCH(QuantizeActivationRows)
                     (args.src, args.k, begin, end, scratch->quantized_src.data(),
                      scratch->quantized_src_scales.data());
                   });
  }
  if (args.rows == 1) {
    const auto gemv = ActiveQuantGemv();
    // Column chunks (multiples of the 4-row micro-kernel) of >= 16 columns.
    ParallelRanges(pool, args.n, work, 16, 4, [&](size_t begin, size_t end) {
      if (quantized) {
        gemv(args, x, begin, end);
      } else {
        HWY_DYNAMIC_DISPATCH(GemvColumns)(args, begin, end);
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

void RmsNorm(const float* src, const float* weight, float* dst, size_t rows,
             size_t dim, float eps, WorkerPool& pool) {
  ParallelRanges(pool, rows, uint64_t{rows} * dim, 1, 1,
                 [&](size_t begin, size_t end) {
                   HWY_DYNAMIC_DISPATCH(RmsNormRows)
                   (src, weight, dst, begin, end, dim, eps);
                 });
}

void Swiglu(const float* gate, const float* up, float* dst, size_t count,
            WorkerPool& pool) {
  // Chunks are whole cache lines so that workers never share one in dst.
  ParallelRanges(pool, count, count, 4096, 16, [&](size_t begin, size_t end) {
    HWY_DYNAMIC_DISPATCH(SwigluRange)(gate, up, dst, begin, end);
  });
}

void Add(const float* a, const float* b, float* dst, size_t count,
         WorkerPool& pool) {
  ParallelRanges(pool, count, count, 4096, 16, [&](size_t begin, size_t end) {
    HWY_DYNAMIC_DISPATCH(AddRange)(a, b, dst, begin, end);
  });
}

void ConvertToF32(WeightType type, const void* src, float* dst,
                  size_t count) {
  switch (type) {
    case WeightType::kF32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case WeightType::kF16:
      HWY_DYNAMIC_DISPATCH(ConvertF16Range)
      (static_cast<const uint16_t*>(src), dst, count);
      return;
    case WeightType::kQ8_0:
    case WeightType::kQ4_0: {
      // Embedding rows: a few per command, so plain scalar code.
      const bool q8 = type == WeightType::kQ8_0;
      const size_t block_bytes = q8 ? kQ8_0BlockBytes : kQ4_0BlockBytes;
      const auto* bytes = static_cast<const uint8_t*>(src);
      for (size_t b = 0; b < count / kQuantBlock; ++b) {
        const uint8_t* block = bytes + b * block_bytes;
        uint16_t half;
        std::memcpy(&half, block, sizeof(half));
        const float d = Float16ToFloat(half);
        float* out = dst + b * kQuantBlock;
        for (size_t j = 0; j < kQuantBlock; ++j) {
          const int q = q8 ? static_cast<int8_t>(block[2 + j])
                           : (j < kQuantBlock / 2
                                  ? block[2 + j] & 0xF
                                  : block[2 + j - kQuantBlock / 2] >> 4) - 8;
          out[j] = static_cast<float>(q) * d;
        }
      }
      return;
    }
  }
}

void ConvertF32ToF16(const float* src, uint16_t* dst, size_t count) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToF16Range)(src, dst, count);
}

void QuantizeToI8Groups(const float* src, uint8_t* dst, size_t groups,
                        size_t group_len) {
  for (size_t g = 0; g < groups; ++g) {
    const float* x = src + g * group_len;
    uint8_t* out = dst + g * I8GroupBytes(group_len);
    float amax = 0.0f;
    for (size_t i = 0; i < group_len; ++i) {
      amax = std::max(amax, std::fabs(x[i]));  // ignores NaN
    }
    const float d = amax / 127.0f;
    std::memcpy(out, &d, sizeof(d));
    for (size_t i = 0; i < group_len; ++i) {
      // Non-finite quotients (d = 0, infinite d) become 0.
      const float r = d > 0.0f ? std::nearbyint(x[i] / d) : 0.0f;
      const int q = r >= 127.0f    ? 127
                    : r <= -127.0f ? -127
                    : r == r       ? static_cast<int>(r)
                                   : 0;
      out[sizeof(d) + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

void DequantizeI8Groups(const uint8_t* src, float* dst, size_t groups,
                        size_t group_len) {
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t* in = src + g * I8GroupBytes(group_len);
    float d;
    std::memcpy(&d, in, sizeof(d));
    for (size_t i = 0; i < group_len; ++i) {
      dst[g * group_len + i] =
          d * static_cast<float>(static_cast<int8_t>(in[sizeof(d) + i]));
    }
  }
}

namespace {

// Per-worker float scratch of `floats` each, padded to whole cache lines so
// that workers do not share one.
float* WorkerScratch(std::vector<float>& scratch, size_t floats, int threads,
                     size_t* stride) {
  *stride = CeilDiv(floats, 16) * 16;
  const size_t needed = *stride * static_cast<size_t>(threads);
  if (scratch.size() < needed) scratch.resize(needed);
  return scratch.data();
}

}  // namespace

void Rope(const RopeArgs& args, WorkerPool& pool, KernelScratch* scratch) {
  const size_t half = args.rope_dim / 2;
  std::vector<double>& inv_freq = scratch->f64;
  inv_freq.resize(half);
  for (size_t i = 0; i < half; ++i) {
    inv_freq[i] = static_cast<double>(args.freq_scale) *
                  std::pow(static_cast<double>(args.theta_base),
                           -2.0 * static_cast<double>(i) /
                               static_cast<double>(args.rope_dim));
    if (args.freq_factors != nullptr) inv_freq[i] /= args.freq_factors[i];
  }
  size_t stride = 0;
  float* tables =
      WorkerScratch(scratch->f32, 2 * args.rope_dim, pool.threads(), &stride);
  RunTasks(pool, args.rows, uint64_t{args.rows} * args.heads * args.head_dim,
           [&](size_t row, int worker) {
             HWY_DYNAMIC_DISPATCH(RopeRows)
             (args, inv_freq.data(), row, row + 1, tables + worker * stride);
           });
}

void Attention(const AttentionArgs& args, WorkerPool& pool,
               KernelScratch* scratch) {
  std::vector<uint32_t>& slots = scratch->u32;
  slots.clear();
  size_t s = 0;
  for (; s + sizeof(uint64_t) <= args.capacity; s += sizeof(uint64_t)) {
    uint64_t word;
    std::memcpy(&word, args.mask + s, sizeof(word));
    if (word == 0) continue;
    for (size_t i = 0; i < sizeof(word); ++i) {
      if (args.mask[s + i] != 0) slots.push_back(static_cast<uint32_t>(s + i));
    }
  }
  for (; s < args.capacity; ++s) {
    if (args.mask[s] != 0) slots.push_back(static_cast<uint32_t>(s));
  }

  // With an F16 cache the new rows are read rounded to f16, as SCATTER_ROWS
  // will store them, so that results do not depend on how a prompt is split
  // into chunks.
  const void* k_new = args.k_new;
  const void* v_new = args.v_new;
  if (args.kv_type == WeightType::kF16) {
    const size_t elements = args.rows * args.kv_heads * args.head_dim;
    std::vector<uint16_t>& half = scratch->u16;
    half.resize(2 * elements);
    ConvertF32ToF16(args.k_new, half.data(), elements);
    ConvertF32ToF16(args.v_new, half.data() + elements, elements);
    k_new = half.data();
    v_new = half.data() + elements;
  }

  // One task per (row, kv head, key split): the GQA group's query heads
  // share every K/V row read. When there are fewer (row, kv head) pairs
  // than two per thread (decode), each row's keys are split into ranges
  // whose partial softmax states are merged at the end (flash-decoding).
  const size_t group = args.heads / args.kv_heads;
  const size_t dim = args.head_dim;
  const size_t pairs = args.rows * args.kv_heads;
  const size_t threads = static_cast<size_t>(pool.threads());
  const uint64_t keys = slots.size() + args.rows;
  const uint64_t work = uint64_t{args.rows} * args.heads * keys * dim;
  size_t splits = 1;
  if (pairs < 2 * threads && work >= kMinParallelWork) {
    splits = std::min(CeilDiv(2 * threads, pairs),
                      std::max<size_t>(1, keys / kMinKeysPerSplit));
  }
  const size_t state_floats = group * (dim + 2);
  const size_t worker_floats =
      group * dim + 3 * kAttentionBlock * dim + group * kAttentionBlock;
  size_t stride = 0;
  // Per worker its scratch (and, without splits, its state), then with
  // splits one state per task.
  const size_t per_worker_floats = worker_floats + state_floats;
  WorkerScratch(scratch->f32, per_worker_floats, pool.threads(), &stride);
  const size_t states_offset = stride * threads;
  if (splits > 1) {
    scratch->f32.resize(states_offset + pairs * splits * state_floats);
  }
  float* const f32 = scratch->f32.data();
  RunTasks(pool, pairs * splits, work, [&](size_t task, int worker) {
    const size_t pair = task / splits;
    const size_t split = task % splits;
    const size_t row = pair / args.kv_heads;
    const size_t kv_head = pair % args.kv_heads;
    float* worker_scratch = f32 + worker * stride;
    const size_t row_keys = slots.size() + row + 1;
    const size_t per_split = CeilDiv(row_keys, splits);
    const size_t begin = std::min(row_keys, split * per_split);
    const size_t end = std::min(row_keys, begin + per_split);
    float* const row_dst = args.dst + row * args.heads * dim;
    if (splits == 1) {
      HWY_DYNAMIC_DISPATCH(AttendRange)
      (args, k_new, v_new, slots.data(), slots.size(), row, kv_head, begin,
       end, worker_scratch, worker_scratch + worker_floats, row_dst);
    } else {
      HWY_DYNAMIC_DISPATCH(AttendRange)
      (args, k_new, v_new, slots.data(), slots.size(), row, kv_head, begin,
       end, worker_scratch, f32 + states_offset + task * state_floats,
       nullptr);
    }
  });
  if (splits == 1) return;
  // Merge: out = sum_s acc_s * e^(max_s - max) / sum_s sum_s * e^(max_s - max).
  for (size_t pair = 0; pair < pairs; ++pair) {
    const float* states = f32 + states_offset + pair * splits * state_floats;
    float* dst = args.dst + pair * group * dim;
    for (size_t h = 0; h < group; ++h) {
      float max = -std::numeric_limits<float>::infinity();
      for (size_t i = 0; i < splits; ++i) {
        max = std::max(max, states[i * state_floats + group * dim + h]);
      }
      float sum = 0.0f;
      std::fill(dst + h * dim, dst + (h + 1) * dim, 0.0f);
      for (size_t i = 0; i < splits; ++i) {
        const float* state = states + i * state_floats;
        const float split_sum = state[group * dim + group + h];
        if (split_sum == 0.0f) continue;  // empty range
        const float weight = std::exp(state[group * dim + h] - max);
        sum += split_sum * weight;
        for (size_t j = 0; j < dim; ++j) {
          dst[h * dim + j] += state[h * dim + j] * weight;
        }
      }
      for (size_t j = 0; j < dim; ++j) dst[h * dim + j] /= sum;
    }
  }
}

}  // namespace lnpu::softnpu::compute
#endif  // HWY_ONCE
