#include "kernel_iface/softnpu/compute/quant_matmul_q6_k.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "base/quant_blocks.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "kernel_iface/softnpu/compute/x86_cpu_features.h"
#elif defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>
#endif

namespace lnpu::softnpu::compute {
namespace {

using ::lnpu::kQ6_KBlock;
using ::lnpu::kQ6_KBlockBytes;
using ::lnpu::kQ6_KDOffset;
using ::lnpu::kQ6_KScalesOffset;
using ::lnpu::kQ6_KSubBlock;

// Activation blocks per weight block, int32 lanes per activation block
// (each the sum of 4 products), and f32 lanes of the order (two blocks).
constexpr size_t kActBlocks = kQ6_KBlock / kQuantBlock;
constexpr size_t kBlockLanes = 8;
constexpr size_t kLanes = 2 * kBlockLanes;

float BlockScale(const uint8_t* block) {
  uint16_t half;
  std::memcpy(&half, block + kQ6_KDOffset, sizeof half);
  return Float16ToFloat(half);
}

// The order's final sum of the 16 lanes.
float SumLanes(const float (&acc)[kLanes]) {
  float t[kBlockLanes];
  for (size_t i = 0; i < kBlockLanes; ++i) t[i] = acc[i] + acc[i + kBlockLanes];
  return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
}

// Prefetches the bytes of the block kPrefetchBytes after `block` of a
// column (a column's blocks are one sequential stream).
constexpr size_t kPrefetchBytes = 2048;
inline __attribute__((always_inline)) void PrefetchAhead(const uint8_t* block) {
  for (size_t line = 0; line < kQ6_KBlockBytes; line += 64) {
    __builtin_prefetch(block + kPrefetchBytes + line);
  }
}

// run.template operator()<kRows>() for kRows = rows (1 .. kQuantGemvMaxRows).
template <class Run>
inline __attribute__((always_inline)) void ForRows(size_t rows, const Run& run) {
  static_assert(kQuantGemvMaxRows == 4);
  switch (rows) {
    case 1: run.template operator()<1>(); return;
    case 2: run.template operator()<2>(); return;
    case 3: run.template operator()<3>(); return;
    default: run.template operator()<4>(); return;
  }
}

// Columns [col_begin, col_end) as kStreams equal parts walked in lockstep,
// then the rest one by one: run(cols) for each step's columns (each part
// is its own memory stream, so that more cache misses are in flight). The
// ISA loops pass a lambda compiled for their target, called, not inlined.
template <size_t kStreams, class Run>
inline __attribute__((always_inline)) void InLockstep(size_t col_begin, size_t col_end,
                                                      const Run& run) {
  const size_t part = (col_end - col_begin) / kStreams;
  size_t cols[kStreams];
  for (size_t i = 0; i < part; ++i) {
    for (size_t j = 0; j < kStreams; ++j) cols[j] = col_begin + j * part + i;
    run(cols);
  }
  for (size_t c = col_begin + kStreams * part; c < col_end; ++c) {
    const size_t one[1] = {c};
    run(one);
  }
}

// Streams per lockstep step: 4 for 1-2 rows, 2 for 3-4 (whose sums would
// not fit the registers).
template <size_t kRows>
constexpr size_t kStreams = kRows <= 2 ? 4 : 2;

}  // namespace

void PortableQ6_KGemv(const MatmulArgs& a, const QuantizedActivations& x, size_t col_begin,
                      size_t col_end) {
  const size_t blocks = a.k / kQ6_KBlock;
  const size_t row_bytes = blocks * kQ6_KBlockBytes;
  const auto* weights = static_cast<const uint8_t*>(a.weight);
  uint8_t q[kQ6_KBlock];
  for (size_t c = col_begin; c < col_end; ++c) {
    for (size_t r = 0; r < a.rows; ++r) {
      const int8_t* xq = x.q + r * a.k;
      const float* xs = x.scales + r * (a.k / kQuantBlock);
      float acc[kLanes] = {};
      for (size_t s = 0; s < blocks; ++s) {
        const uint8_t* block = weights + c * row_bytes + s * kQ6_KBlockBytes;
        Q6_KBlockQuants(block, q);
        const auto* sc = reinterpret_cast<const int8_t*>(block + kQ6_KScalesOffset);
        float part[kLanes] = {};
        for (size_t b = 0; b < kActBlocks; ++b) {
          for (size_t i = 0; i < kBlockLanes; ++i) {
            int32_t dot = 0;
            for (size_t e = 4 * i; e < 4 * i + 4; ++e) {
              const size_t element = b * kQuantBlock + e;
              dot += (int32_t{q[element]} - 32) * xq[s * kQ6_KBlock + element];
            }
            const int32_t v = sc[(b * kQuantBlock + 4 * i) / kQ6_KSubBlock] * dot;
            float& lane = part[kBlockLanes * (b % 2) + i];
            lane = std::fma(static_cast<float>(v), xs[s * kActBlocks + b], lane);
          }
        }
        const float d = BlockScale(block);
        for (size_t i = 0; i < kLanes; ++i) acc[i] = std::fma(part[i], d, acc[i]);
      }
      a.dst[r * a.n + c] = MatmulOutputBase(a, r, c) + SumLanes(acc);
    }
  }
}

#if defined(__x86_64__)
namespace {

#define LNPU_Q6K_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#define LNPU_Q6K_AVX2_INLINE inline __attribute__((always_inline)) LNPU_Q6K_AVX2_TARGET

// Row r's activations prepared for a loop: q and block scales, and for the
// AVX2 loop per pair of activations 32 * (x[2m] + x[2m + 1]) (subtracted
// from maddubs's pair sums, it turns q into q - 32), for the AVX-512 loop
// per 4 activations -32 * (x[4m] + .. + x[4m + 3]) (vpdpbusd's starting
// value, likewise) and the block scales of each two blocks as its 16 f32
// lanes (d_x[b] x 8, d_x[b + 1] x 8).
struct PreparedRows {
  const int8_t* q[kQuantGemvMaxRows];
  const float* scales[kQuantGemvMaxRows];
  const int16_t* offset[kQuantGemvMaxRows];
  const int32_t* correction[kQuantGemvMaxRows];
  const float* lane_scales[kQuantGemvMaxRows];
};

enum class RowsFor { kAvx2, kAvx512 };

// Fills the thread's scratch for rows [0, a.rows) of x.
PreparedRows PrepareRows(const MatmulArgs& a, const QuantizedActivations& x, RowsFor loop) {
  // Grown only: the GEMV runs every decode step.
  thread_local std::vector<int16_t> offsets;
  thread_local std::vector<int32_t> corrections;
  thread_local std::vector<float> scales;
  const size_t act_blocks = a.k / kQuantBlock;
  PreparedRows rows{};
  for (size_t r = 0; r < a.rows; ++r) {
    rows.q[r] = x.q + r * a.k;
    rows.scales[r] = x.scales + r * act_blocks;
  }
  if (loop == RowsFor::kAvx2) {
    const size_t pairs = a.k / 2;
    if (offsets.size() < a.rows * pairs) offsets.resize(a.rows * pairs);
    for (size_t r = 0; r < a.rows; ++r) {
      const int8_t* xq = rows.q[r];
      int16_t* offset = offsets.data() + r * pairs;
      for (size_t m = 0; m < pairs; ++m) {
        offset[m] = static_cast<int16_t>(32 * (xq[2 * m] + xq[2 * m + 1]));
      }
      rows.offset[r] = offset;
    }
    return rows;
  }
  const size_t quads = a.k / 4;
  if (corrections.size() < a.rows * quads) corrections.resize(a.rows * quads);
  if (scales.size() < a.rows * act_blocks * kBlockLanes) {
    scales.resize(a.rows * act_blocks * kBlockLanes);
  }
  for (size_t r = 0; r < a.rows; ++r) {
    const int8_t* xq = rows.q[r];
    int32_t* correction = corrections.data() + r * quads;
    for (size_t m = 0; m < quads; ++m) {
      correction[m] = -32 * (xq[4 * m] + xq[4 * m + 1] + xq[4 * m + 2] + xq[4 * m + 3]);
    }
    rows.correction[r] = correction;
    float* lanes = scales.data() + r * act_blocks * kBlockLanes;
    for (size_t b = 0; b < act_blocks; ++b) {
      std::fill_n(lanes + b * kBlockLanes, kBlockLanes, rows.scales[r][b]);
    }
    rows.lane_scales[r] = lanes;
  }
  return rows;
}

// The block's scale d by the F16C instruction (the same value as
// BlockScale's arithmetic).
LNPU_Q6K_AVX2_INLINE float BlockScaleF16c(const uint8_t* block) {
  uint16_t half;
  std::memcpy(&half, block + kQ6_KDOffset, sizeof half);
  return _cvtsh_ss(half);
}

// Within each 128-bit half, sc[j] as the int16 pair of 32-bit lane j of
// (lo, hi) = unpack{lo,hi}_epi16(sc16, sc16): lo holds j = 0..3 | 8..11, hi
// j = 4..7 | 12..15. For activation block b the vector of lanes
// [sc[2b] x 8 int16, sc[2b + 1] x 8 int16] is one permute of lo or hi.
LNPU_Q6K_AVX2_INLINE void SubBlockScales(const uint8_t* block, __m256i (&scales)[kActBlocks]) {
  const __m256i sc16 = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + kQ6_KScalesOffset)));
  const __m256i lo = _mm256_unpacklo_epi16(sc16, sc16);
  const __m256i hi = _mm256_unpackhi_epi16(sc16, sc16);
  const __m256i first = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const __m256i second = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
  const __m256i third = _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5);
  const __m256i fourth = _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7);
  scales[0] = _mm256_permutevar8x32_epi32(lo, first);    // sc 0, 1
  scales[1] = _mm256_permutevar8x32_epi32(lo, second);   // sc 2, 3
  scales[2] = _mm256_permutevar8x32_epi32(hi, first);    // sc 4, 5
  scales[3] = _mm256_permutevar8x32_epi32(hi, second);   // sc 6, 7
  scales[4] = _mm256_permutevar8x32_epi32(lo, third);    // sc 8, 9
  scales[5] = _mm256_permutevar8x32_epi32(lo, fourth);   // sc 10, 11
  scales[6] = _mm256_permutevar8x32_epi32(hi, third);    // sc 12, 13
  scales[7] = _mm256_permutevar8x32_epi32(hi, fourth);   // sc 14, 15
}

// The q (0 .. 63) of a block's activation blocks b = 0 .. 7 (32 each).
LNPU_Q6K_AVX2_INLINE void UnpackQuants(const uint8_t* block, __m256i (&q)[kActBlocks]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i high2 = _mm256_set1_epi8(0x30);
  for (size_t h = 0; h < 2; ++h) {
    const uint8_t* ql = block + 64 * h;
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
    const __m256i qh = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(block + kQ6_KBlock / 2 + 32 * h));
    // 16-bit shifts: the bits that cross into a neighbouring byte are
    // masked off.
    q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, low4),
                                   _mm256_and_si256(_mm256_slli_epi16(qh, 4), high2));
    q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, low4),
                                   _mm256_and_si256(_mm256_slli_epi16(qh, 2), high2));
    q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                                   _mm256_and_si256(qh, high2));
    q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                                   _mm256_and_si256(_mm256_srli_epi16(qh, 2), high2));
  }
}

// The order's final sum of t (t[i] = acc[i] + acc[i + 8]).
LNPU_Q6K_AVX2_INLINE float SumLanesAvx2(__m256 t) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  const __m128 u = _mm_add_ps(h, _mm_movehl_ps(h, h));  // t0 + t4 + (t2 + t6), ...
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_movehdup_ps(u)));
}

// Columns cols[0 .. kCols) of rows [0, kRows), their blocks taken in
// lockstep; lanes 0..7 (even activation blocks) and 8..15 (odd ones) of
// the order as two 256-bit halves.
template <size_t kRows, size_t kCols>
LNPU_Q6K_AVX2_INLINE void Avx2Columns(const MatmulArgs& a, const PreparedRows& x,
                                      const size_t (&cols)[kCols]) {
  const size_t blocks = a.k / kQ6_KBlock;
  const size_t row_bytes = blocks * kQ6_KBlockBytes;
  const auto* weights = static_cast<const uint8_t*>(a.weight);
  __m256 acc[kCols][kRows][2];
  for (size_t j = 0; j < kCols; ++j) {
    for (size_t r = 0; r < kRows; ++r) acc[j][r][0] = acc[j][r][1] = _mm256_setzero_ps();
  }
  for (size_t s = 0; s < blocks; ++s) {
#pragma GCC unroll 4
    for (size_t j = 0; j < kCols; ++j) {
      const uint8_t* block = weights + cols[j] * row_bytes + s * kQ6_KBlockBytes;
      PrefetchAhead(block);
      __m256i q[kActBlocks];
      __m256i scales[kActBlocks];
      UnpackQuants(block, q);
      SubBlockScales(block, scales);
      const __m256 d = _mm256_set1_ps(BlockScaleF16c(block));
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) {
        const int8_t* xq = x.q[r] + s * kQ6_KBlock;
        const int16_t* offset = x.offset[r] + s * kQ6_KBlock / 2;
        const float* xs = x.scales[r] + s * kActBlocks;
        __m256 part[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
#pragma GCC unroll 8
        for (size_t b = 0; b < kActBlocks; ++b) {
          const __m256i xv =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + b * kQuantBlock));
          const __m256i pairs = _mm256_sub_epi16(
              _mm256_maddubs_epi16(q[b], xv),
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + b * kQuantBlock / 2)));
          const __m256i v = _mm256_madd_epi16(pairs, scales[b]);
          part[b % 2] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_broadcast_ss(xs + b), part[b % 2]);
        }
        acc[j][r][0] = _mm256_fmadd_ps(part[0], d, acc[j][r][0]);
        acc[j][r][1] = _mm256_fmadd_ps(part[1], d, acc[j][r][1]);
      }
    }
  }
  for (size_t j = 0; j < kCols; ++j) {
    for (size_t r = 0; r < kRows; ++r) {
      a.dst[r * a.n + cols[j]] = MatmulOutputBase(a, r, cols[j]) +
                                 SumLanesAvx2(_mm256_add_ps(acc[j][r][0], acc[j][r][1]));
    }
  }
}

LNPU_Q6K_AVX2_TARGET void Avx2Gemv(const MatmulArgs& a, const QuantizedActivations& x,
                                   size_t col_begin, size_t col_end) {
  const PreparedRows rows = PrepareRows(a, x, RowsFor::kAvx2);
  ForRows(a.rows, [&]<size_t kRows>() LNPU_Q6K_AVX2_TARGET {
    InLockstep<kStreams<kRows>>(
        col_begin, col_end, [&]<size_t kCols>(const size_t (&cols)[kCols]) LNPU_Q6K_AVX2_TARGET {
          Avx2Columns<kRows, kCols>(a, rows, cols);
        });
  });
}

// GCC 12 reports the deliberate self-initialization of _mm512_undefined_*()
// inside intrinsics such as _mm512_inserti64x4 as (maybe-)uninitialized
// once inlined (GCC bug 105593). (Clang has no -Wmaybe-uninitialized and
// would warn about the pragma.)
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define LNPU_Q6K_AVX512_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define LNPU_Q6K_AVX512_INLINE inline __attribute__((always_inline)) LNPU_Q6K_AVX512_TARGET

// The q (0 .. 63) of a block's activation blocks as 4 vectors of two
// blocks each (2p, 2p + 1); a half h of the block gives p = 2h (its ql
// bytes 0..63 low nibbles with qh bits 0-1 and 2-3) and p = 2h + 1 (the
// high nibbles with qh bits 4-5 and 6-7): one variable 16-bit shift puts
// each 256-bit half's qh bits in place (the bits that cross into a
// neighbouring byte are masked off).
LNPU_Q6K_AVX512_INLINE void UnpackQuantPairs(const uint8_t* block, __m512i (&q)[4]) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i high2 = _mm512_set1_epi8(0x30);
  const __m512i left = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i right = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  for (size_t h = 0; h < 2; ++h) {
    const __m512i ql = _mm512_loadu_si512(block + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kQ6_KBlock / 2 + 32 * h)));
    q[2 * h] = _mm512_ternarylogic_epi64(_mm512_and_si512(ql, low4),
                                         _mm512_sllv_epi16(qh, left), high2, 0xF8);
    q[2 * h + 1] = _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                             _mm512_srlv_epi16(qh, right), high2, 0xF8);
  }
}

// The sub-block scales of the int32 lanes of q[p], as f32: lane m of
// activation blocks (2p, 2p + 1) takes sc[4p + m / 4], so 128-bit lane L
// of scales[p] is sc[4p + L] four times. The bytes are transposed first
// (128-bit lane L of the vector: sc[L], sc[4 + L], sc[8 + L], sc[12 + L]),
// so that each scales[p] is an in-lane broadcast: four cross-lane
// permutes of the scales took about a fifth of the loop's time in cache
// on Zen 4 (docs/performance.md, "Q6_K loop on Zen 4").
LNPU_Q6K_AVX512_INLINE void SubBlockScalePairs(const uint8_t* block, __m512 (&scales)[4]) {
  const __m128i transpose = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_shuffle_epi8(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + kQ6_KScalesOffset)), transpose)));
  scales[0] = _mm512_permute_ps(sc, 0x00);
  scales[1] = _mm512_permute_ps(sc, 0x55);
  scales[2] = _mm512_permute_ps(sc, 0xAA);
  scales[3] = _mm512_permute_ps(sc, 0xFF);
}

// Columns cols[0 .. kCols) of rows [0, kRows), their blocks taken in
// lockstep (InLockstep). Per row and p, vpdpbusd gives each lane's 4-product
// sum of (q - 32) * x exactly (started at the row's correction), and f32
// of it times f32(sc) is f32(v) exactly (|v| < 2^21).
template <size_t kRows, size_t kCols>
LNPU_Q6K_AVX512_INLINE void Avx512Columns(const MatmulArgs& a, const PreparedRows& x,
                                          const size_t (&cols)[kCols]) {
  const size_t blocks = a.k / kQ6_KBlock;
  const size_t row_bytes = blocks * kQ6_KBlockBytes;
  const auto* weights = static_cast<const uint8_t*>(a.weight);
  __m512 acc[kCols][kRows];
  for (size_t j = 0; j < kCols; ++j) {
    for (size_t r = 0; r < kRows; ++r) acc[j][r] = _mm512_setzero_ps();
  }
  for (size_t s = 0; s < blocks; ++s) {
#pragma GCC unroll 4
    for (size_t j = 0; j < kCols; ++j) {
      const uint8_t* block = weights + cols[j] * row_bytes + s * kQ6_KBlockBytes;
      PrefetchAhead(block);
      __m512i q[4];
      __m512 scales[4];
      UnpackQuantPairs(block, q);
      SubBlockScalePairs(block, scales);
      const __m512 d = _mm512_set1_ps(BlockScaleF16c(block));
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) {
        const int8_t* xq = x.q[r] + s * kQ6_KBlock;
        const int32_t* correction = x.correction[r] + s * kQ6_KBlock / 4;
        const float* lanes = x.lane_scales[r] + s * kActBlocks * kBlockLanes;
        __m512 part = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (size_t p = 0; p < 4; ++p) {
          const __m512i dot = _mm512_dpbusd_epi32(_mm512_loadu_si512(correction + 16 * p), q[p],
                                                  _mm512_loadu_si512(xq + 64 * p));
          part = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), scales[p]),
                                 _mm512_loadu_ps(lanes + 16 * p), part);
        }
        acc[j][r] = _mm512_fmadd_ps(part, d, acc[j][r]);
      }
    }
  }
  for (size_t j = 0; j < kCols; ++j) {
    for (size_t r = 0; r < kRows; ++r) {
      const __m256 t = _mm256_add_ps(_mm512_castps512_ps256(acc[j][r]),
                                     _mm512_extractf32x8_ps(acc[j][r], 1));
      a.dst[r * a.n + cols[j]] = MatmulOutputBase(a, r, cols[j]) + SumLanesAvx2(t);
    }
  }
}

LNPU_Q6K_AVX512_TARGET void Avx512Gemv(const MatmulArgs& a, const QuantizedActivations& x,
                                       size_t col_begin, size_t col_end) {
  const PreparedRows rows = PrepareRows(a, x, RowsFor::kAvx512);
  ForRows(a.rows, [&]<size_t kRows>() LNPU_Q6K_AVX512_TARGET {
    InLockstep<kStreams<kRows>>(
        col_begin, col_end, [&]<size_t kCols>(const size_t (&cols)[kCols]) LNPU_Q6K_AVX512_TARGET {
          Avx512Columns<kRows, kCols>(a, rows, cols);
        });
  });
}

#pragma GCC diagnostic pop

}  // namespace

Q6_KGemvFn Avx512Q6_KGemv() { return GetX86CpuFeatures().avx512_vnni ? Avx512Gemv : nullptr; }
Q6_KGemvFn Avx2Q6_KGemv() { return GetX86CpuFeatures().avx2 ? Avx2Gemv : nullptr; }

#else

Q6_KGemvFn Avx512Q6_KGemv() { return nullptr; }
Q6_KGemvFn Avx2Q6_KGemv() { return nullptr; }

#endif  // defined(__x86_64__)

#if defined(__aarch64__)
namespace {

namespace neon {
// Widening multiplies and pairwise adds: any Armv8-A CPU.
inline int32x4_t Dot4(int8x16_t q, int8x16_t x) {
  const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(q), vget_low_s8(x)));
  const int32x4_t hi = vpaddlq_s16(vmull_high_s8(q, x));
  return vpaddq_s32(lo, hi);
}
#include "kernel_iface/softnpu/compute/quant_matmul_q6_k_neon-inl.h"
}  // namespace neon

// SDOT (FEAT_DotProd). GCC 12's arm_neon.h defines vdotq_s32 under this
// architecture level (a plain "+dotprod" does not reach it).
namespace dotprod {
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
inline int32x4_t Dot4(int8x16_t q, int8x16_t x) { return vdotq_s32(vdupq_n_s32(0), q, x); }
#include "kernel_iface/softnpu/compute/quant_matmul_q6_k_neon-inl.h"
#pragma GCC pop_options
}  // namespace dotprod

}  // namespace

Q6_KGemvFn NeonDotprodQ6_KGemv() {
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0 ? dotprod::Gemv : nullptr;
}
Q6_KGemvFn NeonQ6_KGemv() { return neon::Gemv; }

#else

Q6_KGemvFn NeonDotprodQ6_KGemv() { return nullptr; }
Q6_KGemvFn NeonQ6_KGemv() { return nullptr; }

#endif  // defined(__aarch64__)

Q6_KGemvFn ActiveQ6_KGemv() {
  static const Q6_KGemvFn active = [] {
    for (const Q6_KGemvFn loop :
         {Avx512Q6_KGemv(), Avx2Q6_KGemv(), NeonDotprodQ6_KGemv(), NeonQ6_KGemv()}) {
      if (loop != nullptr) return loop;
    }
    return PortableQ6_KGemv;
  }();
  return active;
}

bool Q6_KGemvPreferred() {
  // (ActiveQ6_KGemv() is never null, so a loop this CPU lacks never matches.)
  const Q6_KGemvFn active = ActiveQ6_KGemv();
  return active == Avx512Q6_KGemv() || active == Avx2Q6_KGemv();
}

}  // namespace lnpu::softnpu::compute
