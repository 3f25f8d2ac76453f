// x86-64 quantized-matmul paths without AMX (quant_matmul.h):
//   "avx512vnni"  AVX-512 F/BW/VL + VNNI: vpdpbusd on 512-bit (GEMM) and
//                 256-bit (GEMV) vectors;
//   "avxvnni"     AVX-VNNI (VEX vpdpbusd, e.g. Alder Lake without AVX-512);
//   "avx2"        AVX2 + FMA + F16C: vpmaddubsw + vpmaddwd.
// The kernels are in quant_matmul_x86-inl.h, compiled once per path with
// that path's instruction sets enabled per function (target attributes), so
// the library runs on any x86-64 CPU; each path's supported() checks CPUID
// and the OS's support of the register state.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/x86_cpu_features.h"
#include "kernel_iface/softnpu/compute/x86_gemv_walk.h"

namespace lnpu::softnpu::compute {
namespace {

// Weight formats of the kernels.
struct Q8_0 {
  static constexpr size_t kBlockBytes = kQ8_0BlockBytes;
  static constexpr bool kNibbles = false;
};
struct Q4_0 {
  static constexpr size_t kBlockBytes = kQ4_0BlockBytes;
  static constexpr bool kNibbles = true;
};

// ---------------------------------------------------------------- Policies
//
// Each policy supplies, for its instruction sets:
//   Dot256<W>(acc, w, x)  acc + per int32 lane the sum of 4 products of
//                         weight operand bytes w (LoadWeightBlock) and int8
//                         activations x; DotN<W> the same on VI;
//   kQ8Offset             the offset of Q8_0 weight operands (0: signed);
//   kPairProducts         whether products come as int16 pair sums
//                         (PairProducts(w, x): vpmaddubsw), which
//                         AddPairs adds and WidenPairs turns into int32
//                         lane sums (quant_matmul_x86-inl.h, BlockDot);
//   VI / VF, kLanes       native int32 / f32 vectors and their lanes, with
//                         ZeroI, Set1I, LoadI, ZeroF, Set1F, LoadF, CvtF,
//                         MulF, FmaF, AddF, StoreF, AddStoreF(p, v,
//                         count): p[i] += v[i] for i < count,
//                         XorByte0x80 (every byte's sign bit flipped),
//                         LowNibbles / HighNibbles (each byte's low / high
//                         4 bits as 0..15), LoadF16(p): kLanes f16 at
//                         p as f32, and LoadIPrefetching(p, ahead): LoadI(p)
//                         followed by a T0 prefetch of `ahead`;
//   kPanelVectors,        the GEMM register tile: kTileRows activation rows
//   kTileRows             x kPanelVectors vectors of columns.

#define LNPU_QM_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#define LNPU_QM_AVX2_INLINE inline __attribute__((always_inline)) LNPU_QM_AVX2_TARGET

// 256-bit native vectors (AVX2 and AVX-VNNI).
struct Vectors256 {
  using VI = __m256i;
  using VF = __m256;
  static constexpr size_t kLanes = 8;
  static LNPU_QM_AVX2_INLINE VI ZeroI() { return _mm256_setzero_si256(); }
  static LNPU_QM_AVX2_INLINE VI Set1I(int32_t v) { return _mm256_set1_epi32(v); }
  static LNPU_QM_AVX2_INLINE VI LoadI(const int32_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static LNPU_QM_AVX2_INLINE VI LoadIPrefetching(const int32_t* p, const void* ahead) {
    VI v;
    // The prefetch operand names its address only: nothing is read there.
    asm("vmovdqu %1, %0\n\tprefetcht0 %2"
        : "=x"(v)
        : "m"(*reinterpret_cast<const VI*>(p)), "m"(*static_cast<const char*>(ahead)));
    return v;
  }
  static LNPU_QM_AVX2_INLINE VF ZeroF() { return _mm256_setzero_ps(); }
  static LNPU_QM_AVX2_INLINE VF Set1F(float v) { return _mm256_set1_ps(v); }
  static LNPU_QM_AVX2_INLINE VF LoadF(const float* p) { return _mm256_loadu_ps(p); }
  static LNPU_QM_AVX2_INLINE VF CvtF(VI v) { return _mm256_cvtepi32_ps(v); }
  static LNPU_QM_AVX2_INLINE VF MulF(VF a, VF b) { return _mm256_mul_ps(a, b); }
  static LNPU_QM_AVX2_INLINE VF FmaF(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
  static LNPU_QM_AVX2_INLINE VF AddF(VF a, VF b) { return _mm256_add_ps(a, b); }
  static LNPU_QM_AVX2_INLINE void StoreF(float* p, VF v) { _mm256_storeu_ps(p, v); }
  static LNPU_QM_AVX2_INLINE VI XorByte0x80(VI v) {
    return _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80)));
  }
  static LNPU_QM_AVX2_INLINE VI LowNibbles(VI v) {
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
  }
  static LNPU_QM_AVX2_INLINE VI HighNibbles(VI v) {
    return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
  }
  static LNPU_QM_AVX2_INLINE VF LoadF16(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static LNPU_QM_AVX2_INLINE void AddStoreF(float* p, VF v, size_t count) {
    if (count == kLanes) {
      _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), v));
      return;
    }
    alignas(32) float lanes[kLanes];
    _mm256_store_ps(lanes, v);
    for (size_t i = 0; i < count; ++i) p[i] += lanes[i];
  }
};

struct Avx2Policy : Vectors256 {
  static constexpr int32_t kQ8Offset = 0;
  static constexpr size_t kPanelVectors = 1;
  static constexpr size_t kTileRows = 4;
  static constexpr bool kPairProducts = true;
  // vpmaddubsw saturates int16 pair sums: safe for nibbles (2 * 15 * 128)
  // and for |w| <= 128 with the sign moved onto x (2 * 128 * 127).
  static LNPU_QM_AVX2_INLINE VI PairProducts(VI w, VI x) { return _mm256_maddubs_epi16(w, x); }
  static LNPU_QM_AVX2_INLINE VI AddPairs(VI a, VI b) { return _mm256_add_epi16(a, b); }
  static LNPU_QM_AVX2_INLINE VI WidenPairs(VI acc, VI pairs) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  template <class W>
  static LNPU_QM_AVX2_INLINE __m256i Dot256(__m256i acc, __m256i w, __m256i x) {
    if constexpr (W::kNibbles) {
      return WidenPairs(acc, PairProducts(w, x));
    } else {
      return WidenPairs(acc, PairProducts(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)));
    }
  }
  template <class W>
  static LNPU_QM_AVX2_INLINE VI DotN(VI acc, VI w, VI x) {
    return Dot256<W>(acc, w, x);
  }
};

#define LNPU_QM_AVXVNNI_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))

struct AvxVnniPolicy : Vectors256 {
  static constexpr int32_t kQ8Offset = 128;
  static constexpr bool kPairProducts = false;
  static constexpr size_t kPanelVectors = 1;
  static constexpr size_t kTileRows = 4;
  template <class W>
  static inline __attribute__((always_inline)) LNPU_QM_AVXVNNI_TARGET __m256i
  Dot256(__m256i acc, __m256i w, __m256i x) {
    return _mm256_dpbusd_avx_epi32(acc, w, x);
  }
  template <class W>
  static inline __attribute__((always_inline)) LNPU_QM_AVXVNNI_TARGET VI
  DotN(VI acc, VI w, VI x) {
    return _mm256_dpbusd_avx_epi32(acc, w, x);
  }
};

#define LNPU_QM_AVX512_TARGET \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define LNPU_QM_AVX512_INLINE inline __attribute__((always_inline)) LNPU_QM_AVX512_TARGET

struct Avx512VnniPolicy {
  using VI = __m512i;
  using VF = __m512;
  static constexpr size_t kLanes = 16;
  static constexpr int32_t kQ8Offset = 128;
  static constexpr bool kPairProducts = false;
  static constexpr size_t kPanelVectors = 2;
  static constexpr size_t kTileRows = 4;
  template <class W>
  static LNPU_QM_AVX512_INLINE __m256i Dot256(__m256i acc, __m256i w, __m256i x) {
    return _mm256_dpbusd_epi32(acc, w, x);
  }
  template <class W>
  static LNPU_QM_AVX512_INLINE VI DotN(VI acc, VI w, VI x) {
    return _mm512_dpbusd_epi32(acc, w, x);
  }
  static LNPU_QM_AVX512_INLINE VI ZeroI() { return _mm512_setzero_si512(); }
  static LNPU_QM_AVX512_INLINE VI Set1I(int32_t v) { return _mm512_set1_epi32(v); }
  static LNPU_QM_AVX512_INLINE VI LoadI(const int32_t* p) { return _mm512_loadu_si512(p); }
  static LNPU_QM_AVX512_INLINE VI LoadIPrefetching(const int32_t* p, const void* ahead) {
    VI v;
    // The prefetch operand names its address only: nothing is read there.
    asm("vmovdqu32 %1, %0\n\tprefetcht0 %2"
        : "=v"(v)
        : "m"(*reinterpret_cast<const VI*>(p)), "m"(*static_cast<const char*>(ahead)));
    return v;
  }
  static LNPU_QM_AVX512_INLINE VF ZeroF() { return _mm512_setzero_ps(); }
  static LNPU_QM_AVX512_INLINE VF Set1F(float v) { return _mm512_set1_ps(v); }
  static LNPU_QM_AVX512_INLINE VF LoadF(const float* p) { return _mm512_loadu_ps(p); }
  static LNPU_QM_AVX512_INLINE VF CvtF(VI v) { return _mm512_cvtepi32_ps(v); }
  static LNPU_QM_AVX512_INLINE VF MulF(VF a, VF b) { return _mm512_mul_ps(a, b); }
  static LNPU_QM_AVX512_INLINE VF FmaF(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
  static LNPU_QM_AVX512_INLINE VF AddF(VF a, VF b) { return _mm512_add_ps(a, b); }
  static LNPU_QM_AVX512_INLINE void StoreF(float* p, VF v) { _mm512_storeu_ps(p, v); }
  static LNPU_QM_AVX512_INLINE VI XorByte0x80(VI v) {
    return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static LNPU_QM_AVX512_INLINE VI LowNibbles(VI v) {
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
  }
  static LNPU_QM_AVX512_INLINE VI HighNibbles(VI v) {
    return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
  }
  static LNPU_QM_AVX512_INLINE VF LoadF16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static LNPU_QM_AVX512_INLINE void AddStoreF(float* p, VF v, size_t count) {
    const __mmask16 mask = static_cast<__mmask16>((uint32_t{1} << count) - 1);
    _mm512_mask_storeu_ps(p, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, p), v));
  }
};

// ---------------------------------------------------------------- Kernels

// GCC 12 reports the deliberate self-initialization of _mm512_undefined_*()
// inside intrinsics such as _mm512_cvtepi32_ps as (maybe-)uninitialized.
// (Clang has no -Wmaybe-uninitialized and would warn about the pragma.)
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
namespace avx512vnni {
using Isa = Avx512VnniPolicy;
#define LNPU_QM_TARGET LNPU_QM_AVX512_TARGET
#include "kernel_iface/softnpu/compute/quant_matmul_x86-inl.h"
#undef LNPU_QM_TARGET

// The Q4_0 GEMV works on groups of consecutive blocks of a weight row, one
// group per 512-bit step: two unaligned 512-bit loads cover the group and
// word permutations (vpermt2w, vpermw) gather its quantized bytes and its
// f16 scales (converted with one vcvtph2ps) into the lanes of the matching
// activation bytes, which are rearranged once per call; one 512-bit
// accumulator per column, halves added at the end. Blocks past the last
// whole group take GemvBlocks. The group format Q4Quads supplies:
//   kBlocks, kBytes      blocks and weight bytes of a group;
//   Activations          one group of one activation row, 64-byte aligned,
//                        with correction[16] (the int32 offset correction
//                        per lane) and scales[16] (d_x of each lane's block);
//   Prepare(x, n, out)   fills out[0..n) from the first n groups of x;
//   Weights, Load(p)     the group at p: unsigned weight operands and the
//                        f32 d_w of each lane's block (`scales`);
//   Dot(acc, w, x)       acc + the per-lane int32 dot products.
// The Q8_0 GEMV takes column pairs instead (Q8ColumnPairsGemv below).

// Q4_0 in quads: 4 blocks (72 bytes); the nibbles of lane group j of the
// 4 blocks' low halves are in `low`, of their high halves in `high`.
struct Q4QuadsIndices {
  alignas(64) uint16_t nibbles[32];  // vpermt2w of (bytes 0..63, bytes 8..71)
  alignas(64) uint16_t scales[32];   // vpermw of bytes 0..63; 16 used
};
constexpr Q4QuadsIndices MakeQ4QuadsIndices() {
  constexpr size_t kWords = kQ4_0BlockBytes / 2;
  Q4QuadsIndices indices{};
  for (size_t o = 0; o < 32; ++o) {
    // Word m of block o / 8's nibbles is word 1 + m of the block.
    const size_t word = (o / 8) * kWords + 1 + o % 8;
    indices.nibbles[o] = static_cast<uint16_t>(word < 32 ? word : 32 + word - 4);
    indices.scales[o] = static_cast<uint16_t>(o < 16 ? (o / 4) * kWords : 0);
  }
  return indices;
}

struct Q4Quads {
  static constexpr size_t kBlocks = 4;
  static constexpr size_t kBytes = kBlocks * kQ4_0BlockBytes;
  struct alignas(64) Activations {
    int8_t low[64];          // elements 0..15 of the 4 blocks
    int8_t high[64];         // elements 16..31
    int32_t correction[16];  // -8 * sum of the 8 activations of each lane
    float scales[16];        // activation scale of each lane's block
  };
  static constexpr Q4QuadsIndices kIndices = MakeQ4QuadsIndices();

  // Whole 512-bit steps: a quad's 128 activation bytes are two vectors,
  // whose 8-byte words go to `low` and `high` by one vpermt2q each; the lane
  // sums are vpdpbusd with unsigned ones (exact in int32).
  static LNPU_QM_AVX512_TARGET void Prepare(const QuantizedActivations& x, size_t count,
                                            Activations* out) {
    const __m512i low_words = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
    const __m512i high_words = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
    const __m512i block_of_lane =
        _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i offset = _mm512_set1_epi32(-kWeightOffset<Q4_0>);
    for (size_t q = 0; q < count; ++q) {
      const int8_t* xs = x.q + 4 * q * kQuantBlock;
      const __m512i z0 = _mm512_loadu_si512(xs);
      const __m512i z1 = _mm512_loadu_si512(xs + 64);
      const __m512i low = _mm512_permutex2var_epi64(z0, low_words, z1);
      const __m512i high = _mm512_permutex2var_epi64(z0, high_words, z1);
      _mm512_store_si512(out[q].low, low);
      _mm512_store_si512(out[q].high, high);
      const __m512i sums = _mm512_dpbusd_epi32(
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, low), ones, high);
      _mm512_store_si512(out[q].correction, _mm512_mullo_epi32(sums, offset));
      _mm512_store_ps(out[q].scales,
                      _mm512_permutexvar_ps(block_of_lane, _mm512_castps128_ps512(
                                                               _mm_loadu_ps(x.scales + 4 * q))));
    }
  }

  struct Weights {
    __m512i low, high;
    __m512 scales;
  };
  static LNPU_QM_AVX512_INLINE Weights Load(const uint8_t* p) {
    const __m512i z0 = _mm512_loadu_si512(p);
    const __m512i z1 = _mm512_loadu_si512(p + 8);
    const __m512i nibbles = _mm512_permutex2var_epi16(
        z0, _mm512_load_si512(kIndices.nibbles), z1);
    const __m512i low_nibble = _mm512_set1_epi8(0x0F);
    return {_mm512_and_si512(nibbles, low_nibble),
            _mm512_and_si512(_mm512_srli_epi16(nibbles, 4), low_nibble),
            _mm512_cvtph_ps(_mm512_castsi512_si256(
                _mm512_permutexvar_epi16(_mm512_load_si512(kIndices.scales), z0)))};
  }
  static LNPU_QM_AVX512_INLINE __m512i Dot(__m512i acc, const Weights& w,
                                           const Activations& x) {
    acc = _mm512_dpbusd_epi32(acc, w.low, _mm512_load_si512(x.low));
    return _mm512_dpbusd_epi32(acc, w.high, _mm512_load_si512(x.high));
  }
};

// Lanes 8..15 of v (AVX-512F; vextractf32x8 would need AVX-512DQ).
LNPU_QM_AVX512_INLINE __m256 UpperHalf(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// dst[r][cols[i]] for the kRows rows and the kCols columns cols of Q4_0
// weights, prefetched prefetch_offset ahead (GemvSteps); groups[r] are row
// r's prepared activations. Each weight group is unpacked once for all
// rows; each row's operations do not depend on kRows or kCols.
template <size_t kRows, size_t kCols>
LNPU_QM_AVX512_TARGET void Q4GroupGemvColumns(const MatmulArgs& a,
                                              const GemvActivations<kRows>& x,
                                              const Q4Quads::Activations* const (&groups)[kRows],
                                              size_t group_count, const size_t (&cols)[kCols],
                                              size_t prefetch_offset) {
  using G = Q4Quads;
  const uint8_t* w[kCols];
  GemvWeightRows<Q4_0, kCols>(a, cols, w);
  const size_t blocks = a.k / kQuantBlock;
  __m512 acc[kRows][kCols];
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (size_t i = 0; i < kCols; ++i) acc[r][i] = _mm512_setzero_ps();
  }
  for (size_t g = 0; g < group_count; ++g) {
#pragma GCC unroll 8
    for (size_t i = 0; i < kCols; ++i) {
      const uint8_t* p = w[i] + g * G::kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch_offset), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch_offset + 64), _MM_HINT_T0);
      const G::Weights weights = G::Load(p);
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) {
        const G::Activations& xg = groups[r][g];
        const __m512 dot =
            _mm512_cvtepi32_ps(G::Dot(_mm512_load_si512(xg.correction), weights, xg));
        acc[r][i] = _mm512_fmadd_ps(
            dot, _mm512_mul_ps(weights.scales, _mm512_load_ps(xg.scales)), acc[r][i]);
      }
    }
  }
  __m256 acc256[kRows][kCols];
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (size_t i = 0; i < kCols; ++i) {
      acc256[r][i] = _mm256_add_ps(_mm512_castps512_ps256(acc[r][i]), UpperHalf(acc[r][i]));
    }
  }
  GemvBlocks<Q4_0, kRows, kCols>(w, x, G::kBlocks * group_count, blocks, prefetch_offset,
                                 acc256);
  GemvStore<kRows, kCols>(a, cols, acc256);
}

template <size_t kRows>
struct Q4GroupGemv {
  static LNPU_QM_AVX512_INLINE void Run(const MatmulArgs& a, const QuantizedActivations& x,
                                        size_t col_begin, size_t col_end) {
    using G = Q4Quads;
    constexpr size_t kCols = kGemvCols<kRows>;
    const size_t group_count = a.k / kQuantBlock / G::kBlocks;
    const GemvActivations<kRows> rows = GemvRowsOf<kRows>(a, x);
    // Grown only: resizing down and up again per call would value-initialize.
    thread_local std::vector<G::Activations> buffer;
    if (buffer.size() < kRows * group_count) buffer.resize(kRows * group_count);
    const G::Activations* groups[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      G::Prepare({.q = rows.q[r], .scales = rows.scales[r]}, group_count,
                 buffer.data() + r * group_count);
      groups[r] = buffer.data() + r * group_count;
    }
    const size_t row_bytes = a.k / kQuantBlock * Q4_0::kBlockBytes;
    const auto columns = [&]<size_t kStepCols>(const size_t (&cols)[kStepCols], size_t group) {
      Q4GroupGemvColumns<kRows, kStepCols>(a, rows, groups, group_count, cols,
                                           group * row_bytes);
    };
    // 8 columns per step with 1-2 rows, as in Q8ColumnPairsGemv (Zen 5:
    // one-row decode 15-17% faster than with 4), in 4 streams of 2.
    size_t c = col_begin;
    if constexpr (kRows <= 2) {
      c = GemvSteps<4, 2>(c, col_end, columns);
    }
    c = GemvSteps<kCols / 2, 2>(c, col_end, columns);
    for (; c < col_end; ++c) columns({c}, 1);
  }
};

// Q8_0 in column pairs: one 512-bit step multiplies one block of two
// weight rows (columns), lanes 0..7 the first column's and 8..15 the
// second's, with the activation block broadcast to both halves. Each half
// adds its column's blocks one after the other with the operations of the
// 256-bit loop (GemvBlocks: fma(cvt(dot), d_w * d_x, acc)), so a column's
// sum is bit for bit that of the avxvnni / avx2 GEMV for any rows and
// column range, and a row costs 4 vector operations per block and column
// pair (against 7 per two blocks and column in block pairs). Two blocks of
// a column pair are unpacked per step from two unaligned 512-bit loads per
// column, like the block groups.
struct Q8ColumnPairIndices {
  // vpermt2w of (column 0 bytes 0..63, column 1 bytes 0..63): block 0's
  // quants, of (bytes 4..67, bytes 4..67): block 1's.
  alignas(64) uint16_t first_block[32];
  alignas(64) uint16_t second_block[32];
  // vpermt2w of (column 0 bytes 0..63, column 1 bytes 0..63): words 0..15
  // the f16 scales of block 0 (8 lanes per column), 16..31 of block 1.
  alignas(64) uint16_t scales[32];
};
constexpr Q8ColumnPairIndices MakeQ8ColumnPairIndices() {
  constexpr size_t kWords = kQ8_0BlockBytes / 2;
  Q8ColumnPairIndices indices{};
  for (size_t o = 0; o < 32; ++o) {
    const size_t column = o / 16 * 32;  // word 32 is the second operand's first
    indices.first_block[o] = static_cast<uint16_t>(column + 1 + o % 16);
    indices.second_block[o] = static_cast<uint16_t>(column + 16 + o % 16);
    indices.scales[o] = static_cast<uint16_t>((o / 8) % 2 * 32 + (o / 16) * kWords);
  }
  return indices;
}
constexpr Q8ColumnPairIndices kQ8ColumnPairIndices = MakeQ8ColumnPairIndices();

// acc[r][p] += block b of column pair p (its unpacked weights quants[p]
// and d_w scales[p]) times row r's block b.
template <size_t kRows, size_t kPairs>
LNPU_QM_AVX512_INLINE void AddColumnPairsBlock(const GemvActivations<kRows>& x,
                                               const int32_t* const (&corrections)[kRows],
                                               size_t b, const __m512i (&quants)[kPairs],
                                               const __m512 (&scales)[kPairs],
                                               __m512 (&acc)[kRows][kPairs]) {
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
    const __m512i xq = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q[r] + b * kQuantBlock)));
    const __m512i correction = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(corrections[r] + 8 * b)));
    const __m512 x_scale = _mm512_set1_ps(x.scales[r][b]);
#pragma GCC unroll 4
    for (size_t p = 0; p < kPairs; ++p) {
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(correction, quants[p], xq));
      acc[r][p] = _mm512_fmadd_ps(dot, _mm512_mul_ps(scales[p], x_scale), acc[r][p]);
    }
  }
}

// dst[r][cols[i]] for the kRows rows and the 2 * kPairs columns cols
// (pair p: cols[2p], cols[2p + 1]), prefetched prefetch_offset ahead
// (GemvSteps); corrections[r] holds OffsetCorrection of each of row r's
// blocks (8 int32 per block).
template <size_t kRows, size_t kPairs>
LNPU_QM_AVX512_TARGET void Q8ColumnPairsGemvColumns(const MatmulArgs& a,
                                                    const GemvActivations<kRows>& x,
                                                    const int32_t* const (&corrections)[kRows],
                                                    const size_t (&cols)[2 * kPairs],
                                                    size_t prefetch_offset) {
  constexpr size_t kCols = 2 * kPairs;
  constexpr size_t kB = kQ8_0BlockBytes;
  const uint8_t* w[kCols];
  GemvWeightRows<Q8_0, kCols>(a, cols, w);
  const size_t blocks = a.k / kQuantBlock;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const Q8ColumnPairIndices& indices = kQ8ColumnPairIndices;
  __m512 acc[kRows][kPairs];
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (size_t p = 0; p < kPairs; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  size_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    __m512i quants[2][kPairs];
    __m512 scales[2][kPairs];
#pragma GCC unroll 4
    for (size_t p = 0; p < kPairs; ++p) {
      const uint8_t* p0 = w[2 * p] + b * kB;
      const uint8_t* p1 = w[2 * p + 1] + b * kB;
      for (const uint8_t* column : {p0, p1}) {
        _mm_prefetch(reinterpret_cast<const char*>(column + prefetch_offset), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(column + prefetch_offset + 64), _MM_HINT_T0);
      }
      const __m512i z0 = _mm512_loadu_si512(p0);
      const __m512i z1 = _mm512_loadu_si512(p1);
      quants[0][p] = _mm512_xor_si512(
          _mm512_permutex2var_epi16(z0, _mm512_load_si512(indices.first_block), z1), flip);
      quants[1][p] = _mm512_xor_si512(
          _mm512_permutex2var_epi16(_mm512_loadu_si512(p0 + 4),
                                    _mm512_load_si512(indices.second_block),
                                    _mm512_loadu_si512(p1 + 4)),
          flip);
      const __m512i halves =
          _mm512_permutex2var_epi16(z0, _mm512_load_si512(indices.scales), z1);
      scales[0][p] = _mm512_cvtph_ps(_mm512_castsi512_si256(halves));
      scales[1][p] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(halves, 1));
    }
    AddColumnPairsBlock<kRows, kPairs>(x, corrections, b, quants[0], scales[0], acc);
    AddColumnPairsBlock<kRows, kPairs>(x, corrections, b + 1, quants[1], scales[1], acc);
  }
  if (b < blocks) {  // an odd last block
    __m512i quants[kPairs];
    __m512 scales[kPairs];
#pragma GCC unroll 4
    for (size_t p = 0; p < kPairs; ++p) {
      const uint8_t* p0 = w[2 * p] + b * kB;
      const uint8_t* p1 = w[2 * p + 1] + b * kB;
      quants[p] = _mm512_xor_si512(
          _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(
                                 reinterpret_cast<const __m256i*>(p0 + 2))),
                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1 + 2)), 1),
          flip);
      scales[p] = _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16(static_cast<short>(LoadU16(p1))),
                                                   _mm_set1_epi16(static_cast<short>(LoadU16(p0)))));
    }
    AddColumnPairsBlock<kRows, kPairs>(x, corrections, b, quants, scales, acc);
  }
  __m256 halves[kRows][kCols];
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (size_t p = 0; p < kPairs; ++p) {
      halves[r][2 * p] = _mm512_castps512_ps256(acc[r][p]);
      halves[r][2 * p + 1] = UpperHalf(acc[r][p]);
    }
  }
  GemvStore<kRows, kCols>(a, cols, halves);
}

template <size_t kRows>
struct Q8ColumnPairsGemv {
  static LNPU_QM_AVX512_INLINE void Run(const MatmulArgs& a, const QuantizedActivations& x,
                                        size_t col_begin, size_t col_end) {
    const size_t blocks = a.k / kQuantBlock;
    const GemvActivations<kRows> rows = GemvRowsOf<kRows>(a, x);
    // Grown only: resizing down and up again per call would value-initialize.
    thread_local std::vector<int32_t> buffer;
    if (buffer.size() < kRows * blocks * 8) buffer.resize(kRows * blocks * 8);
    const int32_t* corrections[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      int32_t* row = buffer.data() + r * blocks * 8;
      for (size_t b = 0; b < blocks; ++b) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 8 * b),
                            OffsetCorrection<Q8_0>(_mm256_loadu_si256(
                                reinterpret_cast<const __m256i*>(rows.q[r] + b * kQuantBlock))));
      }
      corrections[r] = row;
    }
    const size_t row_bytes = blocks * kQ8_0BlockBytes;
    const auto pairs = [&]<size_t kCols>(const size_t (&cols)[kCols], size_t group) {
      Q8ColumnPairsGemvColumns<kRows, kCols / 2>(a, rows, corrections, cols, group * row_bytes);
    };
    // 8 columns per step with 1-2 rows: 8 weight rows stream at once, so
    // more cache misses are in flight while the arithmetic runs (Zen 5:
    // one-row decode 15-20% faster than with 4), each pair its own stream
    // (GemvSteps); with 3-4 rows the accumulators would not fit the 32
    // registers.
    size_t c = col_begin;
    if constexpr (kRows <= 2) {
      c = GemvSteps<4, 2>(c, col_end, pairs);
    }
    c = GemvSteps<2, 2>(c, col_end, pairs);
    c = GemvSteps<1, 2>(c, col_end, pairs);
    if (c < col_end) GemvColumns<Q8_0, kRows, 1>(a, rows, {c}, row_bytes);
  }
};

LNPU_QM_AVX512_TARGET void GroupedGemv(const MatmulArgs& a, const QuantizedActivations& x,
                                       size_t col_begin, size_t col_end) {
  switch (a.weight_type) {
    case WeightType::kQ8_0:
      WithGemvRows<Q8ColumnPairsGemv>(a.rows, a, x, col_begin, col_end);
      return;
    case WeightType::kQ8_0P16:
      WithGemvRows<P16GemvOf<Q8_0, P16Scales::kAfterPanel>::Rows>(a.rows, a, x, col_begin,
                                                                  col_end);
      return;
    case WeightType::kQ4_0P16:
      WithGemvRows<P16GemvOf<Q4_0, P16Scales::kAfterPanel>::Rows>(a.rows, a, x, col_begin,
                                                                  col_end);
      return;
    case WeightType::kQ8_0P16S:
      WithGemvRows<P16GemvOf<Q8_0, P16Scales::kAfterPair>::Rows>(a.rows, a, x, col_begin,
                                                                 col_end);
      return;
    case WeightType::kQ4_0P16S:
      WithGemvRows<P16GemvOf<Q4_0, P16Scales::kAfterPair>::Rows>(a.rows, a, x, col_begin,
                                                                 col_end);
      return;
    default:
      WithGemvRows<Q4GroupGemv>(a.rows, a, x, col_begin, col_end);
      return;
  }
}

}  // namespace avx512vnni
#pragma GCC diagnostic pop

namespace avxvnni {
using Isa = AvxVnniPolicy;
#define LNPU_QM_TARGET LNPU_QM_AVXVNNI_TARGET
#include "kernel_iface/softnpu/compute/quant_matmul_x86-inl.h"
#undef LNPU_QM_TARGET
}  // namespace avxvnni

namespace avx2 {
using Isa = Avx2Policy;
#define LNPU_QM_TARGET LNPU_QM_AVX2_TARGET
#include "kernel_iface/softnpu/compute/quant_matmul_x86-inl.h"
#undef LNPU_QM_TARGET
}  // namespace avx2

// ---------------------------------------------------------------- CPU checks

bool Avx2Supported() { return GetX86CpuFeatures().avx2; }
bool AvxVnniSupported() { return GetX86CpuFeatures().avx_vnni; }
bool Avx512VnniSupported() { return GetX86CpuFeatures().avx512_vnni; }

}  // namespace

const QuantMatmulPath kAvx512VnniQuantMatmulPath = {
    .name = "avx512vnni",
    .supported = Avx512VnniSupported,
    .gemv = avx512vnni::GroupedGemv,
    .gemm = avx512vnni::Gemm,
    .gemm_tile_rows = 128,
    .gemm_tile_cols = 64,
    // Rows 8 and 16 (batched decode, short prefill chunks) on Zen 5: GEMV
    // passes 1.5-3x faster than the GEMM at 8 rows, 0.9-2x at 16.
    .gemv_passes_max_rows = 16,
    .q8_0_p16_kernels = true,
    .q4_0_p16_kernels = true,
};

const QuantMatmulPath kAvxVnniQuantMatmulPath = {
    .name = "avxvnni",
    .supported = AvxVnniSupported,
    .gemv = avxvnni::Gemv,
    .gemm = avxvnni::Gemm,
    .gemm_tile_rows = 64,
    .gemm_tile_cols = 32,
    // 8 rows as GEMV passes: on the Intel VM (its 256-bit loops), 1.06-1.21x
    // faster than this GEMM on the panel types, 0.82-1.30x on Q8_0 / Q4_0
    // (docs/performance.md, "GEMV passes on Intel (AMX)"); 16 rows of the
    // panel types even.
    .gemv_passes_max_rows = 8,
    .q8_0_p16_kernels = true,
    .q4_0_p16_kernels = true,
};

const QuantMatmulPath kAvx2QuantMatmulPath = {
    .name = "avx2",
    .supported = Avx2Supported,
    .gemv = avx2::Gemv,
    .gemm = avx2::Gemm,
    .gemm_tile_rows = 64,
    .gemm_tile_cols = 32,
    // 8 rows as GEMV passes: on the Intel VM 1.00-1.13x faster than this
    // GEMM on the panel types, 0.99-1.76x on Q8_0 / Q4_0; 16 rows of the
    // panel types even.
    .gemv_passes_max_rows = 8,
    .q8_0_p16_kernels = true,
    .q4_0_p16_kernels = true,
};

}  // namespace lnpu::softnpu::compute
