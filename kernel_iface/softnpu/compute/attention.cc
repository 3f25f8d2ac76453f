// ATTENTION (attention.h).
//
// Highway re-includes this file once per enabled SIMD target (see
// foreach_target.h); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target, the HWY_ONCE part once.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel_iface/softnpu/compute/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernel_iface/softnpu/compute/attention.h"
#include "kernel_iface/softnpu/compute/dtype_conversion.h"
#include "kernel_iface/softnpu/compute/kernel_scheduling.h"
#include "kernel_iface/softnpu/compute/simd-inl.h"

// Target-independent constants, defined on the first inclusion only.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_ATTENTION_CONSTANTS_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_ATTENTION_CONSTANTS_
namespace lnpu::softnpu::compute {
// Keys scored per online-softmax step of attention: the running output is
// rescaled at most once per block.
inline constexpr size_t kAttentionBlock = 64;
// Attention scores with keys across vector lanes (transposed) for several
// new rows without a window and for any head_dim up to this one; dot
// products over head_dim otherwise (AttendKeys).
inline constexpr size_t kKeyLanesMaxDim = 16;
// The keys one query row attends: cache slots, then new rows.
struct RowKeys {
  const uint32_t* slots;
  size_t slot_count;
  const uint32_t* new_rows;  // nullptr: new rows 0 .. new_count - 1
  size_t new_count;
};
}  // namespace lnpu::softnpu::compute
#endif

HWY_BEFORE_NAMESPACE();
namespace lnpu::softnpu::compute {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// dst[i] = src[i] * factor (+ 0); dst may equal src.
HWY_INLINE void Scale(const float* src, float factor, float* dst, size_t len) {
  ForEachVector(len, [&](auto d, size_t i) {
    hn::StoreU(hn::Mul(hn::LoadU(d, src + i), hn::Set(d, factor)), d, dst + i);
  });
}

// A task attends the query heads of one GQA group (one kv head) of a tile
// of consecutive rows to their keys: the visible cache slots in slot order,
// then new rows 0..row. Keys are taken in blocks of up to kAttentionBlock,
// whose K and V rows are converted to f32 once for the whole tile. Scores
// come in one of two forms, chosen by the command's shape alone, so that
// how a chunk's rows are grouped into tiles (which follows the thread
// count) does not change any row's result:
// - transposed (several new rows without a window, or head_dim <=
//   kKeyLanesMaxDim): the block's keys are transposed (gathered) once, a
//   vector holds one dimension of many keys, and a score vector is head_dim
//   multiply-adds of a broadcast q element, without horizontal sums; four
//   query heads share each load of keys. A tile's rows all share the
//   transposed block (prefill);
// - dot products over head_dim, four keys at a time (one row: decode, or a
//   window's own keys per row), where a transpose per block would cost more
//   than the horizontal sums it saves.
// Loops over head_dim run in vectors of a tag no wider than head_dim
// (head_dim 8 uses 8 lanes even where vectors have 16). The online softmax
// rescales the output once per block, folded into the block's value
// accumulation.

// AttendKeys and the helpers it calls once per key block or head are
// HWY_NOINLINE: force-inlined, every AttendKeys instance (KV type x tag x
// key order, per target) carried its own copy of them all, and clang's
// sanitizer build spent 160 s on this file alone (22 s now;
// attention_benchmark did not change beyond noise).

// Per-worker memory of a task (sized by Attention()).
struct GroupScratch {
  float* q;       // [tile rows][group][head_dim]: the query heads times scale
  float* keys;    // [kAttentionBlock][head_dim]
  float* keys_t;  // [head_dim][kAttentionBlock]: keys transposed
  float* values;  // [kAttentionBlock][head_dim]
  float* scores;  // [tile rows][group][kAttentionBlock], then softmax weights
};

// Online-softmax state of a task's query heads over the keys seen so far,
// queries * (head_dim + 2) floats for queries = tile rows * group:
// acc[queries][head_dim] (unnormalised output), then max[queries] and
// sum[queries] (-inf and 0 before any key).
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

// Asks for the K and V rows index(first .. first + n) of k_base / v_base
// (`dim` elements of KV each) ahead of their use: the next key block's, so
// that reading a cache from DRAM overlaps the current block's arithmetic
// (the rows of one kv head are `stride` elements apart, too far for the
// hardware prefetchers to follow).
template <typename KV, class IndexFn>
HWY_INLINE void PrefetchKvRows(const KV* k_base, const KV* v_base, size_t stride,
                               size_t first, size_t n, const IndexFn& index, size_t dim) {
  constexpr size_t kLine = 64;
  const size_t bytes = dim * sizeof(KV);
  for (size_t j = 0; j < n; ++j) {
    const size_t offset = index(first + j) * stride;
    const auto* k = reinterpret_cast<const uint8_t*>(k_base + offset);
    const auto* v = reinterpret_cast<const uint8_t*>(v_base + offset);
    for (size_t line = 0; line < bytes; line += kLine) {
      hwy::Prefetch(k + line);
      hwy::Prefetch(v + line);
    }
  }
}

// scores[j] = q . keys[j] for the n key rows of `dim` at keys.
template <class D>
HWY_NOINLINE void BlockScores(D d, const float* q, const float* keys, size_t n,
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
// from n on are zeroed first; keys holds kAttentionBlock rows). Keys of
// head_dim 8 (stories260K) are deinterleaved in registers: the two
// LoadInterleaved4 of a vector's keys give vector r their elements r and
// r + 4 in alternate lanes, which ConcatEven / ConcatOdd separate. Other
// dims are gathered, a vector per element; on the Zen 4 VM the gathers
// were a third of a stories260K attention command (docs/performance.md,
// "Attention and small MATMULs of stories260K").
HWY_NOINLINE void TransposeKeys(float* keys, size_t n, size_t dim,
                                float* keys_t) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const size_t lanes = hn::Lanes(df);
  const size_t padded = (n + lanes - 1) / lanes * lanes;
  std::fill(keys + n * dim, keys + padded * dim, 0.0f);
#if HWY_TARGET != HWY_SCALAR
  if (dim == 8) {
    // (Named vectors, not arrays: SVE's vectors are sizeless.)
    const auto store = [&](hn::Vec<DF> hi, hn::Vec<DF> lo, float* out) {
      hn::StoreU(hn::ConcatEven(df, hi, lo), df, out);
      hn::StoreU(hn::ConcatOdd(df, hi, lo), df, out + 4 * kAttentionBlock);
    };
    for (size_t j = 0; j < padded; j += lanes) {
      const float* rows = keys + j * dim;
      hn::Vec<DF> lo0, lo1, lo2, lo3, hi0, hi1, hi2, hi3;
      hn::LoadInterleaved4(df, rows, lo0, lo1, lo2, lo3);
      hn::LoadInterleaved4(df, rows + 4 * lanes, hi0, hi1, hi2, hi3);
      store(hi0, lo0, keys_t + j);
      store(hi1, lo1, keys_t + kAttentionBlock + j);
      store(hi2, lo2, keys_t + 2 * kAttentionBlock + j);
      store(hi3, lo3, keys_t + 3 * kAttentionBlock + j);
    }
    return;
  }
#endif
  const auto index = hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(dim)));
  for (size_t j = 0; j < padded; j += lanes) {
    for (size_t i = 0; i < dim; ++i) {
      hn::StoreU(hn::GatherIndex(df, keys + j * dim + i, index), df,
                 keys_t + i * kAttentionBlock + j);
    }
  }
}

// scores[h * kAttentionBlock + j] = q[h] . keys[j] for the `queries` query
// heads at q (`dim` apart) and j < n (and the padding up to a whole vector),
// from the transposed keys. Every score is one multiply-add chain over
// i = 0 .. dim - 1, whichever heads share a pass; four heads share each load
// of keys.
HWY_NOINLINE void TransposedScores(const float* q, size_t queries,
                                   const float* keys_t, size_t n, size_t dim,
                                   float* scores) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  constexpr size_t kB = kAttentionBlock;
  size_t h = 0;
  for (; h + 4 <= queries; h += 4) {
    const float* q0 = q + h * dim;
    float* out = scores + h * kB;
    size_t j = 0;
    for (; j + lanes < n; j += 2 * lanes) {
      auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
      auto b0 = hn::Zero(df), b1 = hn::Zero(df), b2 = hn::Zero(df), b3 = hn::Zero(df);
      for (size_t i = 0; i < dim; ++i) {
        const float* k = keys_t + i * kB + j;
        const auto k0 = hn::LoadU(df, k);
        const auto k1 = hn::LoadU(df, k + lanes);
        const auto x0 = hn::Set(df, q0[i]);
        a0 = hn::MulAdd(x0, k0, a0);
        b0 = hn::MulAdd(x0, k1, b0);
        const auto x1 = hn::Set(df, q0[dim + i]);
        a1 = hn::MulAdd(x1, k0, a1);
        b1 = hn::MulAdd(x1, k1, b1);
        const auto x2 = hn::Set(df, q0[2 * dim + i]);
        a2 = hn::MulAdd(x2, k0, a2);
        b2 = hn::MulAdd(x2, k1, b2);
        const auto x3 = hn::Set(df, q0[3 * dim + i]);
        a3 = hn::MulAdd(x3, k0, a3);
        b3 = hn::MulAdd(x3, k1, b3);
      }
      hn::StoreU(a0, df, out + j);
      hn::StoreU(b0, df, out + j + lanes);
      hn::StoreU(a1, df, out + kB + j);
      hn::StoreU(b1, df, out + kB + j + lanes);
      hn::StoreU(a2, df, out + 2 * kB + j);
      hn::StoreU(b2, df, out + 2 * kB + j + lanes);
      hn::StoreU(a3, df, out + 3 * kB + j);
      hn::StoreU(b3, df, out + 3 * kB + j + lanes);
    }
    if (j < n) {
      auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
      for (size_t i = 0; i < dim; ++i) {
        const auto k0 = hn::LoadU(df, keys_t + i * kB + j);
        a0 = hn::MulAdd(hn::Set(df, q0[i]), k0, a0);
        a1 = hn::MulAdd(hn::Set(df, q0[dim + i]), k0, a1);
        a2 = hn::MulAdd(hn::Set(df, q0[2 * dim + i]), k0, a2);
        a3 = hn::MulAdd(hn::Set(df, q0[3 * dim + i]), k0, a3);
      }
      hn::StoreU(a0, df, out + j);
      hn::StoreU(a1, df, out + kB + j);
      hn::StoreU(a2, df, out + 2 * kB + j);
      hn::StoreU(a3, df, out + 3 * kB + j);
    }
  }
  for (; h < queries; ++h) {
    const float* qh = q + h * dim;
    float* out = scores + h * kB;
    size_t j = 0;
    for (; j + lanes < n; j += 2 * lanes) {
      auto s0 = hn::Zero(df), s1 = hn::Zero(df);
      for (size_t i = 0; i < dim; ++i) {
        const auto qi = hn::Set(df, qh[i]);
        const float* k = keys_t + i * kB + j;
        s0 = hn::MulAdd(qi, hn::LoadU(df, k), s0);
        s1 = hn::MulAdd(qi, hn::LoadU(df, k + lanes), s1);
      }
      hn::StoreU(s0, df, out + j);
      hn::StoreU(s1, df, out + j + lanes);
    }
    if (j < n) {
      auto s0 = hn::Zero(df);
      for (size_t i = 0; i < dim; ++i) {
        s0 = hn::MulAdd(hn::Set(df, qh[i]), hn::LoadU(df, keys_t + i * kB + j), s0);
      }
      hn::StoreU(s0, df, out + j);
    }
  }
}

// scores[j] = softcap * tanh(scores[j] / softcap) (Gemma 2's attention
// logit soft cap).
HWY_NOINLINE void SoftcapScores(float* scores, size_t n, float softcap) {
  const float inverse = 1.0f / softcap;
  ForEachVector(n, [&](auto d, size_t j) {
    hn::StoreU(Softcap(d, hn::LoadU(d, scores + j), softcap, inverse), d, scores + j);
  });
}

// Turns the n scores into softmax weights exp(score - new max), folds them
// into max / sum and returns the factor by which the output accumulated so
// far must be rescaled. A NaN score (a NaN in q or in an attended key) gets
// the weight NaN, which makes the row's output NaN: Highway's Exp returns 0
// for NaN, and Max drops NaN on Arm, which would hide the key.
HWY_NOINLINE float SoftmaxBlock(float* scores, size_t n, float& max,
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
    const auto x = hn::Sub(hn::LoadU(d, scores + j), hn::Set(d, max));
    // NaN stays NaN; Exp never sees it (Highway 1.0's EMU128 Exp converts
    // it to int, which is undefined behaviour).
    const auto nan = hn::IsNaN(x);
    const auto p = hn::IfThenElse(nan, x, hn::Exp(d, hn::IfThenZeroElse(nan, x)));
    hn::StoreU(p, d, scores + j);
    block_sum += ReduceSum(d, p);
  });
  sum = sum * alpha + block_sum;
  return alpha;
}

// acc = acc * alpha + sum_j p[j] * values[j] over the n value rows of `dim`:
// keys in the outer loop, so that each p[j] is broadcast once per four
// vectors of its row; even and odd keys add into separate accumulators.
template <class D>
HWY_NOINLINE void AccumulateValues(D d, const float* p, const float* values,
                                   size_t n, size_t dim, float alpha,
                                   float* acc) {
  const size_t lanes = hn::Lanes(d);
  const size_t vector_dim = dim - dim % lanes;
  const auto scale = hn::Set(d, alpha);
  size_t i = 0;
  for (; i + 4 * lanes <= vector_dim; i += 4 * lanes) {
    float* out = acc + i;
    auto a0 = hn::Mul(hn::LoadU(d, out), scale);
    auto a1 = hn::Mul(hn::LoadU(d, out + lanes), scale);
    auto a2 = hn::Mul(hn::LoadU(d, out + 2 * lanes), scale);
    auto a3 = hn::Mul(hn::LoadU(d, out + 3 * lanes), scale);
    auto b0 = hn::Zero(d), b1 = hn::Zero(d), b2 = hn::Zero(d), b3 = hn::Zero(d);
    const float* v = values + i;
    size_t j = 0;
    for (; j + 2 <= n; j += 2, v += 2 * dim) {
      const auto p0 = hn::Set(d, p[j]);
      a0 = hn::MulAdd(p0, hn::LoadU(d, v), a0);
      a1 = hn::MulAdd(p0, hn::LoadU(d, v + lanes), a1);
      a2 = hn::MulAdd(p0, hn::LoadU(d, v + 2 * lanes), a2);
      a3 = hn::MulAdd(p0, hn::LoadU(d, v + 3 * lanes), a3);
      const auto p1 = hn::Set(d, p[j + 1]);
      b0 = hn::MulAdd(p1, hn::LoadU(d, v + dim), b0);
      b1 = hn::MulAdd(p1, hn::LoadU(d, v + dim + lanes), b1);
      b2 = hn::MulAdd(p1, hn::LoadU(d, v + dim + 2 * lanes), b2);
      b3 = hn::MulAdd(p1, hn::LoadU(d, v + dim + 3 * lanes), b3);
    }
    if (j < n) {
      const auto p0 = hn::Set(d, p[j]);
      a0 = hn::MulAdd(p0, hn::LoadU(d, v), a0);
      a1 = hn::MulAdd(p0, hn::LoadU(d, v + lanes), a1);
      a2 = hn::MulAdd(p0, hn::LoadU(d, v + 2 * lanes), a2);
      a3 = hn::MulAdd(p0, hn::LoadU(d, v + 3 * lanes), a3);
    }
    hn::StoreU(hn::Add(a0, b0), d, out);
    hn::StoreU(hn::Add(a1, b1), d, out + lanes);
    hn::StoreU(hn::Add(a2, b2), d, out + 2 * lanes);
    hn::StoreU(hn::Add(a3, b3), d, out + 3 * lanes);
  }
  for (; i < vector_dim; i += lanes) {
    auto a0 = hn::Mul(hn::LoadU(d, acc + i), scale);
    auto b0 = hn::Zero(d);
    const float* v = values + i;
    size_t j = 0;
    for (; j + 2 <= n; j += 2, v += 2 * dim) {
      a0 = hn::MulAdd(hn::Set(d, p[j]), hn::LoadU(d, v), a0);
      b0 = hn::MulAdd(hn::Set(d, p[j + 1]), hn::LoadU(d, v + dim), b0);
    }
    if (j < n) a0 = hn::MulAdd(hn::Set(d, p[j]), hn::LoadU(d, v), a0);
    hn::StoreU(hn::Add(a0, b0), d, acc + i);
  }
  for (; i < dim; ++i) {
    float a = acc[i] * alpha;
    for (size_t j = 0; j < n; ++j) a += p[j] * values[j * dim + i];
    acc[i] = a;
  }
}

// Folds keys/values index(begin .. end) of k_base / v_base into the state
// of the tile's `rows` x `group` query heads at s.q, where row t sees the
// first seen(t, b, n) keys of the block of n keys from b.
template <class D, typename KV, class IndexFn, class SeenFn>
HWY_NOINLINE void AttendKeys(D d, size_t rows, size_t group, size_t dim, const KV* k_base,
                             const KV* v_base, size_t stride, size_t begin, size_t end,
                             const IndexFn& index, const SeenFn& seen, bool transposed,
                             float softcap, const GroupScratch& s, const GroupState& st) {
  // Long heads take fewer keys per block, so that the block's K and V rows
  // (2 * block * dim floats) stay within about 16 KB of L1.
  const size_t block =
      std::clamp<size_t>(2048 / dim, kAttentionBlock / 4, kAttentionBlock);
  for (size_t b = begin; b < end; b += block) {
    const size_t n = std::min(block, end - b);
    PrefetchKvRows(k_base, v_base, stride, b + n, std::min(block, end - b - n), index, dim);
    ConvertKvRows(d, k_base, stride, b, n, index, dim, s.keys);
    ConvertKvRows(d, v_base, stride, b, n, index, dim, s.values);
    if (transposed) {
      TransposeKeys(s.keys, n, dim, s.keys_t);
      TransposedScores(s.q, rows * group, s.keys_t, n, dim, s.scores);
    }
    for (size_t t = 0; t < rows; ++t) {
      const size_t visible = seen(t, b, n);
      if (visible == 0) continue;
      for (size_t h = t * group; h < (t + 1) * group; ++h) {
        float* scores = s.scores + h * kAttentionBlock;
        if (!transposed) BlockScores(d, s.q + h * dim, s.keys, visible, dim, scores);
        if (softcap > 0.0f) SoftcapScores(scores, visible, softcap);
        const float alpha = SoftmaxBlock(scores, visible, st.max[h], st.sum[h]);
        AccumulateValues(d, scores, s.values, visible, dim, alpha, st.acc + h * dim);
      }
    }
  }
}

template <class D, typename KV>
void AttendTileT(D d, const AttentionArgs& a, const KV* k_new, const KV* v_new,
                 const RowKeys& keys, size_t row0, size_t rows, size_t kv_head,
                 size_t key_begin, size_t key_end, bool transposed, const GroupScratch& s,
                 const GroupState& st) {
  const size_t visible_count = keys.slot_count;
  const size_t dim = a.head_dim;
  const size_t group = a.heads / a.kv_heads;
  const size_t stride = a.kv_heads * dim;
  const size_t queries = rows * group;
  for (size_t t = 0; t < rows; ++t) {
    Scale(a.q + ((row0 + t) * a.heads + kv_head * group) * dim, a.scale,
          s.q + t * group * dim, group * dim);
  }
  std::fill(st.acc, st.acc + queries * dim, 0.0f);
  std::fill(st.max, st.max + queries, -std::numeric_limits<float>::infinity());
  std::fill(st.sum, st.sum + queries, 0.0f);
  const auto all = [](size_t, size_t, size_t n) { return n; };
  const size_t cache_end = std::min(key_end, visible_count);
  if (key_begin < cache_end) {
    const auto* k_cache = static_cast<const KV*>(a.k_cache) + kv_head * dim;
    const auto* v_cache = static_cast<const KV*>(a.v_cache) + kv_head * dim;
    AttendKeys(
        d, rows, group, dim, k_cache, v_cache, stride, key_begin, cache_end,
        [&](size_t i) -> size_t { return keys.slots[i]; }, all, transposed, a.softcap, s, st);
  }
  const size_t new_begin = std::max(key_begin, visible_count);
  if (new_begin < key_end && keys.new_rows == nullptr) {
    // Row row0 + t sees new rows 0 .. row0 + t.
    const auto causal = [&](size_t t, size_t b, size_t n) -> size_t {
      const size_t last = row0 + t + 1;
      return last > b ? std::min(n, last - b) : 0;
    };
    AttendKeys(
        d, rows, group, dim, k_new + kv_head * dim, v_new + kv_head * dim, stride,
        new_begin - visible_count, key_end - visible_count, [](size_t i) { return i; }, causal,
        transposed, a.softcap, s, st);
  } else if (new_begin < key_end) {
    AttendKeys(
        d, rows, group, dim, k_new + kv_head * dim, v_new + kv_head * dim, stride,
        new_begin - visible_count, key_end - visible_count,
        [&](size_t i) -> size_t { return keys.new_rows[i]; }, all, transposed, a.softcap, s,
        st);
  }
}

template <typename KV>
void AttendTileKv(const AttentionArgs& a, const KV* k_new, const KV* v_new,
                  const RowKeys& keys, size_t row0, size_t rows, size_t kv_head,
                  size_t key_begin, size_t key_end, bool transposed, const GroupScratch& s,
                  const GroupState& st) {
  // The widest tag with no more lanes than head_dim.
  const auto run = [&](auto d) {
    AttendTileT(d, a, k_new, v_new, keys, row0, rows, kv_head, key_begin, key_end,
                transposed, s, st);
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

// Attends the query heads of kv_head's group in rows row0 .. row0 + rows - 1
// to keys [key_begin, key_end) of `keys` (the slots, then the new rows, that
// the tile's last row sees; an earlier row sees the slots and the new rows
// up to itself), leaving the softmax state in `state` (laid out as
// GroupState; an empty range leaves sums of 0). k_new / v_new are as
// a.kv_type. With `dst` (the command's output) the state is also normalised
// into dst. `scratch`: laid out as GroupScratch. `rows` > 1 only without a
// window.
void AttendTile(const AttentionArgs& a, const void* k_new, const void* v_new,
                const RowKeys& keys, size_t row0, size_t rows, size_t kv_head,
                size_t key_begin, size_t key_end, bool transposed, float* scratch,
                float* state, float* dst) {
  const size_t group = a.heads / a.kv_heads;
  const size_t dim = a.head_dim;
  const size_t queries = rows * group;
  GroupScratch s;
  s.q = scratch;
  s.keys = s.q + queries * dim;
  s.keys_t = s.keys + kAttentionBlock * dim;
  s.values = s.keys_t + kAttentionBlock * dim;
  s.scores = s.values + kAttentionBlock * dim;
  GroupState st;
  st.acc = state;
  st.max = st.acc + queries * dim;
  st.sum = st.max + queries;
  if (a.kv_type == WeightType::kF16) {
    AttendTileKv(a, static_cast<const hwy::float16_t*>(k_new),
                 static_cast<const hwy::float16_t*>(v_new), keys, row0, rows, kv_head,
                 key_begin, key_end, transposed, s, st);
  } else {
    AttendTileKv(a, static_cast<const float*>(k_new), static_cast<const float*>(v_new), keys,
                 row0, rows, kv_head, key_begin, key_end, transposed, s, st);
  }
  if (dst == nullptr) return;
  // The range holds each new row itself (within any window), so every
  // sum >= 1.
  for (size_t t = 0; t < rows; ++t) {
    for (size_t h = 0; h < group; ++h) {
      const size_t query = t * group + h;
      Scale(st.acc + query * dim, 1.0f / st.sum[query],
            dst + ((row0 + t) * a.heads + kv_head * group + h) * dim, dim);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::softnpu::compute
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lnpu::softnpu::compute {

HWY_EXPORT(AttendTile);

namespace {

// Attention: the fewest keys worth a split of one row's keys (flash-decoding).
constexpr size_t kMinKeysPerSplit = 256;
// The most rows of one task in transposed form (prefill): their query heads
// share each transposed key block.
constexpr size_t kMaxTileRows = 16;

}  // namespace

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

  // With a window, each row's own keys: the visible slots and new rows
  // within the window, laid out per row in `windowed` (offsets in
  // row_offsets: slots, then new rows).
  std::vector<uint32_t> windowed;
  std::vector<size_t> row_offsets;
  if (args.window > 0) {
    row_offsets.reserve(2 * args.rows + 1);
    for (size_t r = 0; r < args.rows; ++r) {
      const int64_t position = args.positions[r];
      const auto sees = [&](int32_t other) {
        return position - int64_t{other} < static_cast<int64_t>(args.window);
      };
      row_offsets.push_back(windowed.size());
      for (uint32_t slot : slots) {
        if (sees(args.slot_positions[slot])) windowed.push_back(slot);
      }
      row_offsets.push_back(windowed.size());
      for (size_t j = 0; j <= r; ++j) {
        if (sees(args.positions[j])) windowed.push_back(static_cast<uint32_t>(j));
      }
    }
    row_offsets.push_back(windowed.size());
  }
  const auto keys_of = [&](size_t row) {
    if (args.window == 0) return RowKeys{slots.data(), slots.size(), nullptr, row + 1};
    const size_t* o = row_offsets.data() + 2 * row;
    return RowKeys{windowed.data() + o[0], o[1] - o[0], windowed.data() + o[1], o[2] - o[1]};
  };

  // One task per (tile of rows, kv head, key split): the GQA group's query
  // heads of the tile's rows share every K/V row read. Several new rows
  // without a window take the transposed scores (AttendKeys), in tiles as
  // large as leave a task per thread (up to kMaxTileRows rows): each tile
  // converts and reads every K/V block once, so fewer, larger tiles read
  // less (4 rows over 128-512 slots: a third less time than with four
  // tasks per thread, tests/compute/attention_benchmark.cc). Otherwise a tile
  // is one row; when there are fewer (row, kv head) pairs than two per
  // thread (decode), each row's keys are split into ranges whose partial
  // softmax states are merged at the end (flash-decoding).
  const size_t group = args.heads / args.kv_heads;
  const size_t dim = args.head_dim;
  const size_t threads = static_cast<size_t>(pool.threads());
  const bool tiled = args.window == 0 && args.rows > 1;
  const bool transposed = tiled || dim <= kKeyLanesMaxDim;
  const size_t tile_rows =
      tiled ? std::min({CeilDiv(args.rows * args.kv_heads, threads), kMaxTileRows, args.rows})
            : 1;
  const size_t tiles = CeilDiv(args.rows, tile_rows);
  const size_t pairs = tiles * args.kv_heads;
  const uint64_t keys = slots.size() + args.rows;
  const uint64_t work = uint64_t{args.rows} * args.heads * keys * dim;
  size_t splits = 1;
  if (!tiled && pairs < 2 * threads && work >= kMinParallelWork) {
    splits = std::min(CeilDiv(2 * threads, pairs),
                      std::max<size_t>(1, keys / kMinKeysPerSplit));
  }
  const size_t queries = tile_rows * group;
  const size_t state_floats = queries * (dim + 2);
  const size_t worker_floats =
      queries * dim + 3 * kAttentionBlock * dim + queries * kAttentionBlock;
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
    const size_t row0 = pair / args.kv_heads * tile_rows;
    const size_t rows = std::min(tile_rows, args.rows - row0);
    const size_t kv_head = pair % args.kv_heads;
    float* worker_scratch = f32 + worker * stride;
    const RowKeys keys = keys_of(row0 + rows - 1);
    const size_t row_keys = keys.slot_count + keys.new_count;
    const size_t per_split = CeilDiv(row_keys, splits);
    const size_t begin = std::min(row_keys, split * per_split);
    const size_t end = std::min(row_keys, begin + per_split);
    if (splits == 1) {
      HWY_DYNAMIC_DISPATCH(AttendTile)
      (args, k_new, v_new, keys, row0, rows, kv_head, begin, end, transposed, worker_scratch,
       worker_scratch + worker_floats, args.dst);
    } else {
      HWY_DYNAMIC_DISPATCH(AttendTile)
      (args, k_new, v_new, keys, row0, rows, kv_head, begin, end, transposed, worker_scratch,
       f32 + states_offset + task * state_floats, nullptr);
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
