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

#include "compiler_artifacts/gguf/half.h"
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
  return gguf::Float16ToFloat(half);
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

// A K or V row as f32: the row itself for F32, else converted into `buffer`.
HWY_INLINE const float* KvRowF32(const float* row, float*, size_t) {
  return row;
}
HWY_INLINE const float* KvRowF32(const hwy::float16_t* row, float* buffer,
                                 size_t dim) {
  ForEachVector(dim, [&](auto d, size_t i) {
    hn::StoreU(LoadWeights(d, row + i), d, buffer + i);
  });
  return buffer;
}

// Per-worker memory of one GQA group's attention (sized by Attention()):
// per query head its unnormalised output, block scores and the running
// maximum and sum of its streaming softmax; one converted K/V row.
struct GroupScratch {
  float* acc;     // [group][head_dim]
  float* scores;  // [group][kAttentionBlock]
  float* max;     // [group]
  float* sum;     // [group]
  float* row;     // [head_dim]
};

// Folds keys/values index(0..count) (rows of `stride` elements from k_base /
// v_base) into the softmax states and unnormalised outputs of the `group`
// query heads at q ([group][head_dim]). Each K and V row is read once for
// the whole group.
template <typename KV, class IndexFn>
HWY_INLINE void AttendKeys(const AttentionArgs& a, const float* q,
                           size_t group, const KV* k_base, const KV* v_base,
                           size_t stride, size_t count, const IndexFn& index,
                           const GroupScratch& s) {
  const size_t dim = a.head_dim;
  for (size_t b = 0; b < count; b += kAttentionBlock) {
    const size_t n = std::min(kAttentionBlock, count - b);
    for (size_t i = 0; i < n; ++i) {
      const float* k = KvRowF32(k_base + index(b + i) * stride, s.row, dim);
      for (size_t h = 0; h < group; ++h) {
        s.scores[h * kAttentionBlock + i] = a.scale * Dot(q + h * dim, k, dim);
      }
    }
    for (size_t h = 0; h < group; ++h) {
      float* scores = s.scores + h * kAttentionBlock;
      float* acc = s.acc + h * dim;
      float& max = s.max[h];
      float& sum = s.sum[h];
      const float block_max = *std::max_element(scores, scores + n);
      if (block_max > max) {
        if (sum > 0.0f) {
          const float alpha = std::exp(max - block_max);
          Scale(acc, alpha, acc, dim);
          sum *= alpha;
        }
        max = block_max;
      }
      float block_sum = 0.0f;
      ForEachVector(n, [&](auto d, size_t i) {
        const auto p =
            hn::Exp(d, hn::Sub(hn::LoadU(d, scores + i), hn::Set(d, max)));
        hn::StoreU(p, d, scores + i);
        block_sum += ReduceSum(d, p);
      });
      sum += block_sum;
    }
    for (size_t i = 0; i < n; ++i) {
      const float* v = KvRowF32(v_base + index(b + i) * stride, s.row, dim);
      for (size_t h = 0; h < group; ++h) {
        const float p = s.scores[h * kAttentionBlock + i];
        float* acc = s.acc + h * dim;
        ForEachVector(dim, [&](auto d, size_t j) {
          hn::StoreU(hn::MulAdd(hn::Set(d, p), hn::LoadU(d, v + j),
                                hn::LoadU(d, acc + j)),
                     d, acc + j);
        });
      }
    }
  }
}

// k_new / v_new: the new rows as KV ([rows][kv_heads][head_dim]).
template <typename KV>
void AttendGroupT(const AttentionArgs& a, const KV* k_new, const KV* v_new,
                  const uint32_t* visible_slots, size_t visible_count,
                  size_t row, size_t kv_head, const GroupScratch& s) {
  const size_t dim = a.head_dim;
  const size_t group = a.heads / a.kv_heads;
  const size_t stride = a.kv_heads * dim;
  const size_t first = (row * a.heads + kv_head * group) * dim;
  const float* q = a.q + first;
  std::fill(s.acc, s.acc + group * dim, 0.0f);
  std::fill(s.max, s.max + group, -std::numeric_limits<float>::infinity());
  std::fill(s.sum, s.sum + group, 0.0f);
  const auto* k_cache = static_cast<const KV*>(a.k_cache) + kv_head * dim;
  const auto* v_cache = static_cast<const KV*>(a.v_cache) + kv_head * dim;
  AttendKeys(
      a, q, group, k_cache, v_cache, stride, visible_count,
      [&](size_t i) -> size_t { return visible_slots[i]; }, s);
  AttendKeys(
      a, q, group, k_new + kv_head * dim, v_new + kv_head * dim, stride,
      row + 1, [](size_t i) { return i; }, s);
  // New row `row` itself is always visible, so every sum >= 1.
  for (size_t h = 0; h < group; ++h) {
    Scale(s.acc + h * dim, 1.0f / s.sum[h], a.dst + first + h * dim, dim);
  }
}

// dst[row][heads of kv_head's group]; `scratch` is laid out as GroupScratch.
// k_new / v_new: the new rows as a.kv_type.
void AttendGroup(const AttentionArgs& a, const void* k_new, const void* v_new,
                 const uint32_t* visible_slots, size_t visible_count,
                 size_t row, size_t kv_head, float* scratch) {
  const size_t group = a.heads / a.kv_heads;
  GroupScratch s;
  s.acc = scratch;
  s.scores = s.acc + group * a.head_dim;
  s.max = s.scores + group * kAttentionBlock;
  s.sum = s.max + group;
  s.row = s.sum + group;
  if (a.kv_type == WeightType::kF16) {
    AttendGroupT(a, static_cast<const hwy::float16_t*>(k_new),
                 static_cast<const hwy::float16_t*>(v_new), visible_slots,
                 visible_count, row, kv_head, s);
  } else {
    AttendGroupT(a, static_cast<const float*>(k_new),
                 static_cast<const float*>(v_new), visible_slots,
                 visible_count, row, kv_head, s);
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
  for (size_t i = 0; i < count; ++i) dst[i] = gguf::FloatToFloat16(src[i]);
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
HWY_EXPORT(AttendGroup);

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
        const float d = gguf::Float16ToFloat(half);
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

  // One task per (row, kv head): the GQA group's query heads share every
  // K/V row read. Scratch per worker: see GroupScratch.
  const size_t group = args.heads / args.kv_heads;
  const size_t group_floats =
      group * (args.head_dim + kAttentionBlock + 2) + args.head_dim;
  size_t stride = 0;
  float* per_worker =
      WorkerScratch(scratch->f32, group_floats, pool.threads(), &stride);
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
  const uint64_t keys = slots.size() + args.rows;
  const uint64_t work = uint64_t{args.rows} * args.heads * keys * args.head_dim;
  RunTasks(pool, args.rows * args.kv_heads, work, [&](size_t task, int worker) {
    HWY_DYNAMIC_DISPATCH(AttendGroup)
    (args, k_new, v_new, slots.data(), slots.size(), task / args.kv_heads,
     task % args.kv_heads, per_worker + worker * stride);
  });
}

}  // namespace lnpu::softnpu::compute
#endif  // HWY_ONCE
