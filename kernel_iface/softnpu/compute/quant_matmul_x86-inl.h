// The x86 quantized-matmul kernels, written once against an instruction-set
// policy. quant_matmul_x86.cc includes this file once per path, inside that
// path's namespace, after defining
//   LNPU_QM_TARGET  the __attribute__((target(...))) of the path: every
//                   function here carries it, so the intrinsics compile
//                   without global -m flags;
//   struct Isa      the policy: native-width vector types and operations,
//                   the int8 block dot product and the Q8_0 weight offset
//                   (quant_matmul_x86.cc, "Policies").
// It must not include anything itself; no include guard on purpose.
//
// Integer arithmetic (both loops): a block's dot product sum_i w_i x_i is
// computed with unsigned weight bytes u_i = w_i + c (Q4_0: the nibble, c = 8;
// Q8_0 on VNNI: w_i + 128, c = 128) as sum_i u_i x_i - c * sum_i x_i, all
// exact in int32 (|sum| < 2^20); the correction -c * sum_i x_i depends only
// on the activations, so it is computed once per activation block and
// serves every weight column. Without VNNI (Isa::kQ8Offset == 0) Q8_0 uses
// signed weights directly (Isa::Dot256 / DotN). Each block's int32 lanes are
// converted to f32 and scaled by d_w * d_x into f32 accumulators.

#define LNPU_QM_INLINE inline __attribute__((always_inline)) LNPU_QM_TARGET

// Offset c added to the weights of type W (see above).
template <class W>
constexpr int32_t kWeightOffset = W::kNibbles ? 8 : Isa::kQ8Offset;

// The 32 weight values of a block in element order as the dot product's
// weight operand: Q4_0 nibbles (bytes 0..15 low, then high) as 0..15, Q8_0
// as int8 shifted by kWeightOffset<Q8_0>.
template <class W>
LNPU_QM_INLINE __m256i LoadWeightBlock(const uint8_t* block) {
  if constexpr (W::kNibbles) {
    const __m256i bytes = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2)));
    const __m256i nibbles =
        _mm256_srlv_epi64(bytes, _mm256_setr_epi64x(0, 0, 4, 4));
    return _mm256_and_si256(nibbles, _mm256_set1_epi8(0x0F));
  } else {
    const __m256i q =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
    if constexpr (Isa::kQ8Offset != 0) {
      return _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
    } else {
      return q;
    }
  }
}

// -c * (sum of 4 consecutive activations) per int32 lane: the correction
// term of the block dot product, as the initial value of its accumulator.
template <class W>
LNPU_QM_INLINE __m256i OffsetCorrection(__m256i x) {
  if constexpr (kWeightOffset<W> == 0) {
    return _mm256_setzero_si256();
  } else {
    const __m256i sums = Isa::Dot256<Q4_0>(
        _mm256_setzero_si256(),
        _mm256_set1_epi8(static_cast<char>(kWeightOffset<W>)), x);
    return _mm256_sub_epi32(_mm256_setzero_si256(), sums);
  }
}

// A block's int32 dot product, built operand by operand: BlockDot<W>
// dot(start); dot.Add(w, x) for each of the block's 8 operands (4 products
// per int32 lane each, DotN); dot.Sum() is start plus every product, lane
// by lane. Where the policy's products come as int16 pair sums
// (Isa::kPairProducts: AVX2 without VNNI), nibble weights keep those sums
// in int16 and widen them once per block: 8 operands add at most
// 8 * 2 * 15 * 128 = 30720 to a lane, exact, and the block takes one
// vpmaddwd instead of eight. The integer sum is the same either way.
// (P is Isa, a parameter so that the pair functions, which only policies
// with kPairProducts have, are looked up when used.)
template <class W, class P = Isa>
class BlockDot {
  using VI = typename P::VI;
  static constexpr bool kPairs = W::kNibbles && P::kPairProducts;

 public:
  BlockDot() = default;  // unset: assign BlockDot(start) before Add
  LNPU_QM_INLINE explicit BlockDot(VI start) : start_(start), sum_(kPairs ? P::ZeroI() : start) {}
  LNPU_QM_INLINE void Add(VI w, VI x) {
    if constexpr (kPairs) {
      sum_ = P::AddPairs(sum_, P::PairProducts(w, x));
    } else {
      sum_ = P::template DotN<W>(sum_, w, x);
    }
  }
  LNPU_QM_INLINE VI Sum() const {
    if constexpr (kPairs) {
      return P::WidenPairs(start_, sum_);
    } else {
      return sum_;
    }
  }

 private:
  VI start_;
  VI sum_;
};

LNPU_QM_INLINE float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

LNPU_QM_INLINE int32_t HorizontalSum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v),
                            _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

LNPU_QM_INLINE uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

// ---------------------------------------------------------------- GEMV
//
// One to kQuantGemvMaxRows activation rows times kCols weight rows
// (columns of dst) per step: each weight block is loaded (and unpacked)
// once and multiplied with every activation row. Per row, the sequence of
// operations does not depend on how many rows share the call, so each
// row's result is bit-identical to a one-row call's (quant_matmul.h).
//
// The GEMV prefetches each weight row at the same block of its stream's
// next row (GemvSteps), one step (several hundred ns) ahead of its use,
// which covers the DRAM latency; a fixed distance of a few hundred bytes
// per row does not.

// The activation rows of one GEMV call.
template <size_t kRows>
struct GemvActivations {
  const int8_t* q[kRows];
  const float* scales[kRows];
};

template <size_t kRows>
LNPU_QM_INLINE GemvActivations<kRows> GemvRowsOf(const MatmulArgs& a,
                                                 const QuantizedActivations& x) {
  GemvActivations<kRows> rows;
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
    rows.q[r] = x.q + r * a.k;
    rows.scales[r] = x.scales + r * (a.k / kQuantBlock);
  }
  return rows;
}

// The f32 values of the f16 scales of the `count` (1..8) blocks starting at
// `block`, converted 8 at a time with F16C (lanes past count are 0).
template <class W>
LNPU_QM_INLINE __m256 WeightScales8(const uint8_t* block, size_t count) {
  constexpr size_t kB = W::kBlockBytes;
  if (count == 8) {
    return _mm256_cvtph_ps(_mm_setr_epi16(
        LoadU16(block), LoadU16(block + kB), LoadU16(block + 2 * kB),
        LoadU16(block + 3 * kB), LoadU16(block + 4 * kB), LoadU16(block + 5 * kB),
        LoadU16(block + 6 * kB), LoadU16(block + 7 * kB)));
  }
  alignas(16) uint16_t half[8] = {};
  for (size_t i = 0; i < count; ++i) half[i] = LoadU16(block + i * kB);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(half)));
}

// The activation scales of the `count` (1..8) blocks at `scales` (lanes past
// count are 0).
LNPU_QM_INLINE __m256 ActivationScales8(const float* scales, size_t count) {
  if (count == 8) return _mm256_loadu_ps(scales);
  alignas(32) float xs[8] = {};
  for (size_t i = 0; i < count; ++i) xs[i] = scales[i];
  return _mm256_load_ps(xs);
}

// acc[r][i] += blocks [b_begin, b_end) of the weight rows w[i] times
// activation row r: all rows share each weight block's load, the kCols
// columns each activation block's load and its offset correction; block
// scales are converted 8 blocks at a time.
template <class W, size_t kRows, size_t kCols>
LNPU_QM_INLINE void GemvBlocks(const uint8_t* const* w, const GemvActivations<kRows>& x,
                               size_t b_begin, size_t b_end, size_t prefetch_offset,
                               __m256 (&acc)[kRows][kCols]) {
  constexpr size_t kB = W::kBlockBytes;
  alignas(32) float scales[kRows][kCols][8];
  for (size_t b0 = b_begin; b0 < b_end; b0 += 8) {
    const size_t count = std::min<size_t>(8, b_end - b0);
    __m256 x_scales[kRows];
#pragma GCC unroll 4
    for (size_t r = 0; r < kRows; ++r) x_scales[r] = ActivationScales8(x.scales[r] + b0, count);
#pragma GCC unroll 8
    for (size_t i = 0; i < kCols; ++i) {
      const __m256 w_scales = WeightScales8<W>(w[i] + b0 * kB, count);
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) {
        _mm256_store_ps(scales[r][i], _mm256_mul_ps(w_scales, x_scales[r]));
      }
    }
    for (size_t t = 0; t < count; ++t) {
      const size_t b = b0 + t;
      __m256i xq[kRows], correction[kRows];
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) {
        xq[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q[r] + b * kQuantBlock));
        correction[r] = OffsetCorrection<W>(xq[r]);
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < kCols; ++i) {
        const uint8_t* block = w[i] + b * kB;
        _mm_prefetch(reinterpret_cast<const char*>(block + prefetch_offset),
                     _MM_HINT_T0);
        const __m256i wq = LoadWeightBlock<W>(block);
#pragma GCC unroll 4
        for (size_t r = 0; r < kRows; ++r) {
          const __m256i dot = Isa::template Dot256<W>(correction[r], wq, xq[r]);
          acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                                      _mm256_set1_ps(scales[r][i][t]), acc[r][i]);
        }
      }
    }
  }
}

// dst[r][cols[i]] = MatmulOutputBase + the lanes of acc[r][i].
template <size_t kRows, size_t kCols>
LNPU_QM_INLINE void GemvStore(const MatmulArgs& a, const size_t (&cols)[kCols],
                              const __m256 (&acc)[kRows][kCols]) {
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (size_t i = 0; i < kCols; ++i) {
      a.dst[r * a.n + cols[i]] = MatmulOutputBase(a, r, cols[i]) + HorizontalSum(acc[r][i]);
    }
  }
}

// Weight rows of the columns cols.
template <class W, size_t kCols>
LNPU_QM_INLINE void GemvWeightRows(const MatmulArgs& a, const size_t (&cols)[kCols],
                                   const uint8_t** w) {
  const size_t row_bytes = a.k / kQuantBlock * W::kBlockBytes;
#pragma GCC unroll 8
  for (size_t i = 0; i < kCols; ++i) {
    w[i] = static_cast<const uint8_t*>(a.weight) + cols[i] * row_bytes;
  }
}

// dst[r][cols[i]] for the kRows rows and the kCols columns cols, each weight
// row prefetched prefetch_offset bytes ahead (GemvSteps).
template <class W, size_t kRows, size_t kCols>
LNPU_QM_TARGET void GemvColumns(const MatmulArgs& a, const GemvActivations<kRows>& x,
                                const size_t (&cols)[kCols], size_t prefetch_offset) {
  const uint8_t* w[kCols];
  GemvWeightRows<W, kCols>(a, cols, w);
  __m256 acc[kRows][kCols];
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 8
    for (size_t i = 0; i < kCols; ++i) acc[r][i] = _mm256_setzero_ps();
  }
  GemvBlocks<W, kRows, kCols>(w, x, 0, a.k / kQuantBlock, prefetch_offset, acc);
  GemvStore<kRows, kCols>(a, cols, acc);
}

// Column order. A GEMV step streams the weight rows of its columns
// together. Adjacent columns' rows are one run of memory; columns taken
// from kStreams parts of the range far apart are kStreams runs, and the
// core's prefetchers then keep several times more cache misses in flight
// (on a 2-vCPU Xeon VM, one-row Q8_0 decode of qwen2.5-0.5b ran 1.4x faster
// with 4 streams of 2 columns than with 8 adjacent columns;
// docs/performance.md, "Column streams"). A column's arithmetic is the
// same in any step, so the order changes no result.
//
// GemvSteps calls step(cols, kGroup) over a prefix of [begin, end) cut
// into kStreams equal spans of whole groups of kGroup adjacent columns:
// call i gets group i of every span, span by span (kStreams * kGroup
// columns). Each stream's next rows are kGroup rows on, so a step
// prefetches at kGroup * row_bytes. Returns the end of the prefix; fewer
// than kStreams * kGroup columns follow it.
template <size_t kStreams, size_t kGroup, class Step>
LNPU_QM_INLINE size_t GemvSteps(size_t begin, size_t end, const Step& step) {
  constexpr size_t kCols = kStreams * kGroup;
  const size_t span = (end - begin) / kCols * kGroup;
  for (size_t i = 0; i < span; i += kGroup) {
    size_t cols[kCols];
#pragma GCC unroll 8
    for (size_t s = 0; s < kStreams; ++s) {
#pragma GCC unroll 8
      for (size_t j = 0; j < kGroup; ++j) cols[s * kGroup + j] = begin + s * span + i + j;
    }
    step(cols, kGroup);
  }
  return begin + kStreams * span;
}

// Columns per GEMV step, weight rows streamed together: 4, or with 3 or 4
// activation rows on 16-register ISAs 2, so that the accumulators stay in
// registers.
template <size_t kRows>
constexpr size_t kGemvCols = kRows <= 2 || sizeof(typename Isa::VI) == 64 ? 4 : 2;

// Each column of a step is its own stream (GemvSteps); the last few
// columns go one by one.
template <class W, size_t kRows>
LNPU_QM_TARGET void GemvRange(const MatmulArgs& a, const QuantizedActivations& x,
                              size_t col_begin, size_t col_end) {
  constexpr size_t kCols = kGemvCols<kRows>;
  const size_t row_bytes = a.k / kQuantBlock * W::kBlockBytes;
  const GemvActivations<kRows> rows = GemvRowsOf<kRows>(a, x);
  size_t c = GemvSteps<kCols, 1>(col_begin, col_end,
                                 [&](const size_t (&cols)[kCols], size_t group) {
                                   GemvColumns<W, kRows, kCols>(a, rows, cols, group * row_bytes);
                                 });
  for (; c < col_end; ++c) GemvColumns<W, kRows, 1>(a, rows, {c}, row_bytes);
}

// Calls F<kRows>::Run(args...) for kRows = a.rows (1..kQuantGemvMaxRows).
template <template <size_t> class F, class... Args>
LNPU_QM_INLINE void WithGemvRows(size_t rows, Args&&... args) {
  static_assert(kQuantGemvMaxRows == 4);
  switch (rows) {
    case 1: F<1>::Run(args...); break;
    case 2: F<2>::Run(args...); break;
    case 3: F<3>::Run(args...); break;
    default: F<4>::Run(args...); break;
  }
}

template <size_t kRows>
struct GemvOfRows {
  static LNPU_QM_INLINE void Run(const MatmulArgs& a, const QuantizedActivations& x,
                                 size_t col_begin, size_t col_end) {
    if (a.weight_type == WeightType::kQ8_0) {
      GemvRange<Q8_0, kRows>(a, x, col_begin, col_end);
    } else {
      GemvRange<Q4_0, kRows>(a, x, col_begin, col_end);
    }
  }
};

// ---------------------------------------------------------------- Panels
//
// Panel weights (Q8_0P16, Q4_0P16, Q8_0P16S, Q4_0P16S: base/quant_blocks.h):
// each of a panel block's groups holds 4 quant bytes of 16 columns side by
// side, so one DotN of a group operand with 4 broadcast activation bytes
// adds 4 products to each of its columns' int32 sums; no horizontal sums. A Q8_0 group is one
// operand (activation word g); a Q4_0 group is two, its low nibbles (word
// g) and its high nibbles (word g + 4), unpacked with two vector ANDs and a
// shift. The f32 steps follow the one order of quant_matmul.h's contract,
// so every path, GEMV and GEMM, gives the same bits. 512-bit vectors take a
// panel's 16 columns at once, 256-bit ones in two passes of 8: one
// activation row both passes in one walk over the blocks, several rows
// one pass after the other (the second reading the panel from cache;
// P16Panels). W is Q8_0 or Q4_0, the panels' block type;
// kLayout where the panels keep their scales (the _P16 or _P16S format).

// Panel columns per vector, and passes over a panel.
constexpr size_t kP16Lanes = Isa::kLanes;
constexpr size_t kP16Passes = kP16Rows / kP16Lanes;

// Groups per block, and operands per group (activation words 4 apart).
template <class W>
constexpr size_t kP16Groups = (W::kBlockBytes - 2) / 4;
template <class W>
constexpr size_t kP16GroupOperands = W::kNibbles ? 2 : 1;

// The activation rows of a panel call and, where kWeightOffset<W> is not 0,
// each block's offset correction -c * sum_i x_i.
template <size_t kRows>
struct P16Activations {
  const int8_t* q[kRows];
  const float* scales[kRows];
  const int32_t* correction[kRows];
};

// The offset corrections of activation rows [row_begin, row_end) of x, per
// row and block, into `buffer` (resized; nothing when kWeightOffset<W> is 0).
template <class W>
LNPU_QM_INLINE void P16Corrections(const MatmulArgs& a, const QuantizedActivations& x,
                                   size_t row_begin, size_t row_end,
                                   std::vector<int32_t>& buffer) {
  if constexpr (kWeightOffset<W> != 0) {
    const size_t blocks = a.k / kQuantBlock;
    if (buffer.size() < (row_end - row_begin) * blocks) {
      buffer.resize((row_end - row_begin) * blocks);
    }
    for (size_t r = row_begin; r < row_end; ++r) {
      for (size_t b = 0; b < blocks; ++b) {
        buffer[(r - row_begin) * blocks + b] = HorizontalSum(OffsetCorrection<W>(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + r * a.k + b * kQuantBlock))));
      }
    }
  }
}

// Activation rows first .. first + kRows - 1 of x; `corrections` holds
// P16Corrections<W> from row `first` on.
template <class W, size_t kRows>
LNPU_QM_INLINE P16Activations<kRows> P16RowsOf(const MatmulArgs& a, const QuantizedActivations& x,
                                               size_t first, const int32_t* corrections) {
  const size_t blocks = a.k / kQuantBlock;
  P16Activations<kRows> rows;
  for (size_t r = 0; r < kRows; ++r) {
    rows.q[r] = x.q + (first + r) * a.k;
    rows.scales[r] = x.scales + (first + r) * blocks;
    rows.correction[r] = kWeightOffset<W> != 0 ? corrections + r * blocks : nullptr;
  }
  return rows;
}

// The operands of one panel group (an array of vectors in a struct:
// std::array would drop the vector type's attributes).
template <class W>
struct P16Operands {
  typename Isa::VI v[kP16GroupOperands<W>];
};

// The operands of group g of block b of a panel (first byte `panel`) for
// pass `pass`: Q8_0 shifted by kWeightOffset<Q8_0>; Q4_0 low then high
// nibbles (0..15). Pass 0 prefetches the group prefetch_offset ahead; with
// kTied in one instruction pair with the load (Isa::LoadIPrefetching).
// Separate _mm_prefetch calls let the compiler issue a block's prefetches
// in bursts: on the Intel (AMX) VM the 1-row GEMVs then read up to 9% less
// from DRAM, while the pairs cost the 4-row GEMV, which computes more per
// byte, 10% in cache (docs/performance.md, "Panel prefetches").
template <class W, P16Scales kLayout, bool kTied>
LNPU_QM_INLINE P16Operands<W> P16GroupOperands(const uint8_t* panel, size_t b, size_t g,
                                               size_t pass, size_t prefetch_offset) {
  const uint8_t* group =
      panel + P16QuantsOffset(W::kBlockBytes, kLayout, b) + g * kP16GroupBytes;
  const auto* at = reinterpret_cast<const int32_t*>(group + pass * 4 * kP16Lanes);
  if (pass == 0 && !kTied) {
    _mm_prefetch(reinterpret_cast<const char*>(group + prefetch_offset), _MM_HINT_T0);
  }
  const auto w =
      pass == 0 && kTied ? Isa::LoadIPrefetching(at, group + prefetch_offset) : Isa::LoadI(at);
  if constexpr (W::kNibbles) {
    return {{Isa::LowNibbles(w), Isa::HighNibbles(w)}};
  } else if constexpr (kWeightOffset<Q8_0> == 0) {
    return {{w}};
  } else {
    return {{Isa::XorByte0x80(w)}};
  }
}

// How far ahead P16Sums prefetches: `quants` bytes from each quant group
// (P16GroupOperands), `scales` bytes from each block's scales where they
// follow all of the panel's quants (P16Scales::kAfterPanel): prefetched
// only a few KiB ahead they would be read before their prefetch (at the
// start of each panel), so the GEMV prefetches them from the same stream's
// next panel instead. Scales in the quant stream (kAfterPair) are
// prefetched `quants` ahead like the quants around them.
struct P16PrefetchAhead {
  size_t quants;
  size_t scales;
  // Bytes ahead in each activation row, or 0 (P16PrefetchActivations).
  size_t activations = 0;
};

// How far ahead a GEMV step that reads more than ActivationReuseLimitBytes()
// between two reads of an activation line prefetches the activation rows:
// 6 blocks. Without the prefetches the step finds the line gone from L1
// when it comes back to it. With them, on the Zen 4 VM, the 1-row Q4_0
// GEMVs of k = 3072 .. 8192 (panels of 27-72 KiB) read 2-7% faster from
// DRAM on one thread, and 2048 x 5632 5-10% faster on two in a fast
// minute; Q8_0 of k = 4864 read as fast as without. 3 blocks ahead read
// as fast as 6, 12 or 16 blocks 6-9% slower (docs/performance.md,
// "Activation prefetches on Zen 4").
inline constexpr size_t kP16ActivationPrefetchBytes = 6 * kQuantBlock;

// Prefetches, for block b of `blocks`, what block b + ahead / kQuantBlock
// of each activation row reads (on even blocks: one line holds two blocks'
// quants) and, every 16 blocks, the line of the next 16 blocks' scales and
// offset corrections.
template <size_t kRows>
LNPU_QM_INLINE void P16PrefetchActivations(const P16Activations<kRows>& x, size_t blocks, size_t b,
                                           size_t ahead) {
  const size_t target = b + ahead / kQuantBlock;
  if (b % 2 == 0 && target < blocks) {
#pragma GCC unroll 4
    for (size_t r = 0; r < kRows; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(x.q[r] + target * kQuantBlock), _MM_HINT_T0);
    }
  }
  if (b % 16 == 0 && b + 16 < blocks) {
#pragma GCC unroll 4
    for (size_t r = 0; r < kRows; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(x.scales[r] + b + 16), _MM_HINT_T0);
      if (x.correction[r] != nullptr) {
        _mm_prefetch(reinterpret_cast<const char*>(x.correction[r] + b + 16), _MM_HINT_T0);
      }
    }
  }
}

// The f32 weight scales of pass `pass`'s columns of block b of a panel
// (first byte `panel`) of `blocks` blocks, with kLone the last block of an
// odd count in the kAfterPair layout (alone in its pair); pass 0 prefetches
// them `ahead` (every second block: two blocks' scales are one cache line).
template <class W, P16Scales kLayout, bool kLone>
LNPU_QM_INLINE typename Isa::VF P16ScalesOfBlock(const uint8_t* panel, size_t blocks, size_t b,
                                                 size_t pass, P16PrefetchAhead ahead) {
  // (The pair's size known at compile time: no test per block.)
  const uint8_t* block =
      panel + (kLayout == P16Scales::kAfterPanel
                   ? P16ScalesOffset(W::kBlockBytes, kLayout, blocks, b)
                   : P16PairScalesOffset(W::kBlockBytes, b, kLone ? 1 : 2));
  if (pass == 0 && b % 2 == 0) {
    const size_t offset = kLayout == P16Scales::kAfterPanel ? ahead.scales : ahead.quants;
    _mm_prefetch(reinterpret_cast<const char*>(block + offset), _MM_HINT_T0);
  }
  return Isa::LoadF16(block + pass * 2 * kP16Lanes);
}

// Row r's int32 sum of block b before its products: 0, or the offset
// correction.
template <class W, size_t kRows>
LNPU_QM_INLINE typename Isa::VI P16DotStart(const P16Activations<kRows>& x, size_t r, size_t b) {
  return kWeightOffset<W> == 0 ? Isa::ZeroI() : Isa::Set1I(x.correction[r][b]);
}

// Row r's activation bytes 4j .. 4j + 3 of block b in every int32 lane.
template <size_t kRows>
LNPU_QM_INLINE typename Isa::VI P16Word(const P16Activations<kRows>& x, size_t r, size_t b,
                                        size_t j) {
  int32_t word;
  __builtin_memcpy(&word, x.q[r] + b * kQuantBlock + 4 * j, sizeof(word));
  return Isa::Set1I(word);
}

// The activation word of operand o of group g (kP16GroupOperands).
constexpr size_t P16WordOf(size_t g, size_t o) { return g + o * (kQuantBlock / 8); }

// acc += f32(dot) * (d_w * d_x of row r's block b): a block's one f32 step.
template <size_t kRows>
LNPU_QM_INLINE void P16AddBlock(typename Isa::VI dot, typename Isa::VF dw,
                                const P16Activations<kRows>& x, size_t r, size_t b,
                                typename Isa::VF& acc) {
  acc = Isa::FmaF(Isa::CvtF(dot), Isa::MulF(dw, Isa::Set1F(x.scales[r][b])), acc);
}

// Whether P16BlockSums takes a block group by group across its panels, one
// broadcast of a row's word serving every panel (several panels of 3-4
// rows on 512-bit vectors: the 4-row Q8_0 GEMV 15% faster in cache on Zen
// 5, where the compiler had spilled the per-panel broadcasts), or panel by
// panel (fewer live sums, for 16 registers; as fast for 1-2 rows and for
// the GEMM's single panels).
template <size_t kRows, size_t kPanels>
constexpr bool kP16WordsAcrossPanels =
    sizeof(typename Isa::VI) == 64 && kRows >= 3 && kPanels >= 2;

// acc[s][r] += the sums of pass pass[s]'s columns of block b of panels[s]
// (first bytes of the kPanels panels) for the kRows rows (kLone:
// P16ScalesOfBlock); each quant group and the block's scales are
// prefetched `ahead`. The integer sums are exact in any order, so both
// loop orders give the same bits.
template <class W, P16Scales kLayout, bool kLone, size_t kRows, size_t kPanels>
LNPU_QM_INLINE void P16BlockSums(const uint8_t* const (&panels)[kPanels], size_t blocks, size_t b,
                                 const std::array<size_t, kPanels>& pass,
                                 const P16Activations<kRows>& x, P16PrefetchAhead ahead,
                                 typename Isa::VF (&acc)[kPanels][kRows]) {
  using VI = typename Isa::VI;
  constexpr size_t kOperands = kP16GroupOperands<W>;
  constexpr bool kTied = kRows <= 2;  // P16GroupOperands
  if (ahead.activations != 0 && pass[0] == 0) {
    P16PrefetchActivations(x, blocks, b, ahead.activations);
  }
  if constexpr (kP16WordsAcrossPanels<kRows, kPanels>) {
    BlockDot<W> dot[kPanels][kRows];
#pragma GCC unroll 4
    for (size_t s = 0; s < kPanels; ++s) {
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) dot[s][r] = BlockDot<W>(P16DotStart<W>(x, r, b));
    }
#pragma GCC unroll 8
    for (size_t g = 0; g < kP16Groups<W>; ++g) {
      VI words[kOperands][kRows];
#pragma GCC unroll 2
      for (size_t o = 0; o < kOperands; ++o) {
#pragma GCC unroll 4
        for (size_t r = 0; r < kRows; ++r) words[o][r] = P16Word(x, r, b, P16WordOf(g, o));
      }
#pragma GCC unroll 4
      for (size_t s = 0; s < kPanels; ++s) {
        const auto w = P16GroupOperands<W, kLayout, kTied>(panels[s], b, g, pass[s], ahead.quants);
#pragma GCC unroll 2
        for (size_t o = 0; o < kOperands; ++o) {
#pragma GCC unroll 4
          for (size_t r = 0; r < kRows; ++r) {
            dot[s][r].Add(w.v[o], words[o][r]);
          }
        }
      }
    }
#pragma GCC unroll 4
    for (size_t s = 0; s < kPanels; ++s) {
      const auto dw = P16ScalesOfBlock<W, kLayout, kLone>(panels[s], blocks, b, pass[s], ahead);
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) P16AddBlock(dot[s][r].Sum(), dw, x, r, b, acc[s][r]);
    }
  } else {
#pragma GCC unroll 4
    for (size_t s = 0; s < kPanels; ++s) {
      BlockDot<W> dot[kRows];
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) dot[r] = BlockDot<W>(P16DotStart<W>(x, r, b));
#pragma GCC unroll 8
      for (size_t g = 0; g < kP16Groups<W>; ++g) {
        const auto w = P16GroupOperands<W, kLayout, kTied>(panels[s], b, g, pass[s], ahead.quants);
#pragma GCC unroll 2
        for (size_t o = 0; o < kOperands; ++o) {
#pragma GCC unroll 4
          for (size_t r = 0; r < kRows; ++r) {
            dot[r].Add(w.v[o], P16Word(x, r, b, P16WordOf(g, o)));
          }
        }
      }
      const auto dw = P16ScalesOfBlock<W, kLayout, kLone>(panels[s], blocks, b, pass[s], ahead);
#pragma GCC unroll 4
      for (size_t r = 0; r < kRows; ++r) P16AddBlock(dot[r].Sum(), dw, x, r, b, acc[s][r]);
    }
  }
}

// acc[s][r] = the sums of pass pass[s]'s columns of panels[s] for the kRows
// rows, over all blocks in order (P16BlockSums).
template <class W, P16Scales kLayout, size_t kRows, size_t kPanels>
LNPU_QM_INLINE void P16Sums(const uint8_t* const (&panels)[kPanels], size_t blocks,
                            const std::array<size_t, kPanels>& pass, const P16Activations<kRows>& x,
                            P16PrefetchAhead ahead, typename Isa::VF (&acc)[kPanels][kRows]) {
  // kAfterPair: the blocks of whole pairs, then a last odd block alone.
  const size_t paired = kLayout == P16Scales::kAfterPair ? blocks / 2 * 2 : blocks;
  for (size_t b = 0; b < paired; ++b) {
    P16BlockSums<W, kLayout, false, kRows, kPanels>(panels, blocks, b, pass, x, ahead, acc);
  }
  if (paired < blocks) {
    P16BlockSums<W, kLayout, true, kRows, kPanels>(panels, blocks, paired, pass, x, ahead, acc);
  }
}

// dst[r][c] = MatmulOutputBase(a, r, c) + acc[r] lane c - first for the
// columns c of [first, first + kP16Lanes) inside [col_begin, col_end), with
// MatmulOutputBase's operations (so that the bits equal the scalar order).
template <size_t kRows>
LNPU_QM_INLINE void P16Store(const MatmulArgs& a, size_t first, size_t col_begin,
                             size_t col_end, const typename Isa::VF (&acc)[kRows]) {
  const size_t begin = std::max(first, col_begin);
  const size_t end = std::min(first + kP16Lanes, col_end);
  if (begin >= end) return;
  if (begin == first && end == first + kP16Lanes) {
#pragma GCC unroll 4
    for (size_t r = 0; r < kRows; ++r) {
      float* out = a.dst + r * a.n + first;
      auto base = a.accumulate ? Isa::LoadF(out) : Isa::ZeroF();
      if (a.bias != nullptr) base = Isa::AddF(base, Isa::LoadF(a.bias + first));
      Isa::StoreF(out, Isa::AddF(base, acc[r]));
    }
    return;
  }
  for (size_t r = 0; r < kRows; ++r) {
    alignas(64) float lanes[kP16Lanes];
    Isa::StoreF(lanes, acc[r]);
    for (size_t c = begin; c < end; ++c) {
      a.dst[r * a.n + c] = MatmulOutputBase(a, r, c) + lanes[c - first];
    }
  }
}

// Pass kPass in each of kSlots slots, and passes 0, 1, 0, 1, ...
template <size_t kSlots, size_t kPass>
inline constexpr std::array<size_t, kSlots> kP16SamePass = [] {
  std::array<size_t, kSlots> pass{};
  pass.fill(kPass);
  return pass;
}();
template <size_t kSlots>
inline constexpr std::array<size_t, kSlots> kP16BothPasses = [] {
  std::array<size_t, kSlots> pass{};
  for (size_t s = 0; s < kSlots; ++s) pass[s] = s % 2;
  return pass;
}();

// Rows [0, kRows) x the columns of [col_begin, col_end) in kSlots panel
// passes, all in one walk over the blocks: slot s the kP16Lanes columns
// from pass[s] * kP16Lanes on of the panel panels[s] (index
// panel_index[s]).
template <class W, P16Scales kLayout, size_t kRows, size_t kSlots>
LNPU_QM_INLINE void P16PanelSlots(const MatmulArgs& a, const P16Activations<kRows>& x,
                                  const uint8_t* const (&panels)[kSlots],
                                  const size_t (&panel_index)[kSlots],
                                  const std::array<size_t, kSlots>& pass, size_t col_begin,
                                  size_t col_end, P16PrefetchAhead ahead) {
  typename Isa::VF acc[kSlots][kRows];
#pragma GCC unroll 8
  for (size_t s = 0; s < kSlots; ++s) {
#pragma GCC unroll 4
    for (size_t r = 0; r < kRows; ++r) acc[s][r] = Isa::ZeroF();
  }
  P16Sums<W, kLayout, kRows, kSlots>(panels, a.k / kQuantBlock, pass, x, ahead, acc);
#pragma GCC unroll 8
  for (size_t s = 0; s < kSlots; ++s) {
    P16Store<kRows>(a, panel_index[s] * kP16Rows + pass[s] * kP16Lanes, col_begin, col_end, acc[s]);
  }
}

// Rows [0, kRows) x the columns of [col_begin, col_end) in the kPanels
// panels panel_index[s]. On 256-bit vectors one row takes both passes of
// its panels in one walk over the blocks, so that each activation word is
// broadcast once for 16 columns and each weight line read once; several
// rows take the passes one after another, which keeps their sums in
// registers. (The passes written out: clang at -O1 declined to unroll a
// loop over them once the block loops held two steps.)
template <class W, P16Scales kLayout, size_t kRows, size_t kPanels>
LNPU_QM_TARGET void P16Panels(const MatmulArgs& a, const P16Activations<kRows>& x,
                              const size_t (&panel_index)[kPanels], size_t col_begin,
                              size_t col_end, P16PrefetchAhead ahead) {
  static_assert(kP16Passes == 1 || kP16Passes == 2);
  const size_t panel_bytes = P16PanelBytes(W::kBlockBytes, a.k / kQuantBlock);
  const uint8_t* panels[kPanels];
#pragma GCC unroll 4
  for (size_t s = 0; s < kPanels; ++s) {
    panels[s] = static_cast<const uint8_t*>(a.weight) + panel_index[s] * panel_bytes;
  }
  if constexpr (kP16Passes == 2 && kRows == 1) {
    const uint8_t* slots[2 * kPanels];
    size_t slot_index[2 * kPanels];
#pragma GCC unroll 8
    for (size_t s = 0; s < 2 * kPanels; ++s) {
      slots[s] = panels[s / 2];
      slot_index[s] = panel_index[s / 2];
    }
    P16PanelSlots<W, kLayout, kRows, 2 * kPanels>(
        a, x, slots, slot_index, kP16BothPasses<2 * kPanels>, col_begin, col_end, ahead);
    return;
  }
  P16PanelSlots<W, kLayout, kRows, kPanels>(a, x, panels, panel_index, kP16SamePass<kPanels, 0>,
                                            col_begin, col_end, ahead);
  if constexpr (kP16Passes == 2) {
    P16PanelSlots<W, kLayout, kRows, kPanels>(a, x, panels, panel_index, kP16SamePass<kPanels, 1>,
                                              col_begin, col_end, ahead);
  }
}

// Panels per GEMV step, each its own memory stream (GemvSteps), at most:
// 4 for one row and for 2 rows of Q4_0; 2 for 3-4 rows, whose sums (and,
// across panels, their words: kP16WordsAcrossPanels) then fit the
// registers (3 panels were no faster; 8 for one row were 4-10% slower on
// the Intel VM), and for 2 rows of Q8_0, whose 2-lane decode step took
// 5-19% less time with 2 streams on the Zen 5 VM (one row and Q4_0 no
// faster or slower; docs/performance.md, "One GEMV call per thread"). The
// CPU's walk (X86GemvWalk) may lower it for 1-2 rows. A 4-stream GEMV
// takes a range's last 1-3 panels in one step too, not one panel (one
// stream) after another: qwen2.5-0.5b's down and attention-output tasks
// were 7 panels each ("Tail panels").
template <class W, size_t kRows>
constexpr size_t kP16Streams = kRows == 1 || (kRows == 2 && W::kNibbles) ? 4 : 2;

// The panel GEMV over [p, p_end) in steps of kStreams panels, then the
// last ones in fewer (a 4-stream walk: 3, 2 and 1; a 2-stream walk: 1).
template <size_t kStreams, class Step>
LNPU_QM_INLINE void P16GemvWalk(size_t p, size_t p_end, const Step& step) {
  p = GemvSteps<kStreams, 1>(p, p_end, step);
  if constexpr (kStreams == 4) {
    p = GemvSteps<3, 1>(p, p_end, step);
    p = GemvSteps<2, 1>(p, p_end, step);
  }
  if constexpr (kStreams > 1) GemvSteps<1, 1>(p, p_end, step);
}

template <class W, P16Scales kLayout>
struct P16GemvOf {
  template <size_t kRows>
  struct Rows {
    static LNPU_QM_INLINE void Run(const MatmulArgs& a, const QuantizedActivations& x,
                                   size_t col_begin, size_t col_end) {
      thread_local std::vector<int32_t> corrections;
      P16Corrections<W>(a, x, 0, kRows, corrections);
      const P16Activations<kRows> rows = P16RowsOf<W, kRows>(a, x, 0, corrections.data());
      const size_t panel_bytes = P16PanelBytes(W::kBlockBytes, a.k / kQuantBlock);
      const X86GemvWalk& walk = GetX86GemvWalk();
      // Each stream prefetches the CPU's distance ahead, at most to the
      // start of its next panel (`group` panels on). A step of kPanels
      // panels reads kPanels * panel_bytes between two reads of an
      // activation line.
      const size_t reuse_limit = ActivationReuseLimitBytes();
      const auto step = [&]<size_t kPanels>(const size_t (&panels)[kPanels], size_t group) {
        P16Panels<W, kLayout, kRows, kPanels>(
            a, rows, panels, col_begin, col_end,
            {.quants = std::min(group * panel_bytes, walk.prefetch_bytes),
             .scales = group * panel_bytes,
             .activations = kPanels * panel_bytes > reuse_limit ? kP16ActivationPrefetchBytes : 0});
      };
      const size_t p = col_begin / kP16Rows;
      const size_t p_end = (col_end + kP16Rows - 1) / kP16Rows;
      constexpr size_t kStreams = kP16Streams<W, kRows>;
      if (kRows <= 2 && walk.streams < kStreams) {
        if (walk.streams == 1) {
          P16GemvWalk<1>(p, p_end, step);
        } else {
          P16GemvWalk<2>(p, p_end, step);
        }
        return;
      }
      P16GemvWalk<kStreams>(p, p_end, step);
    }
  };
};

// Rows row .. row + kRows - 1 of one panel (P16Gemm: each panel once for
// all row tiles, so that it stays in L2 between them; the next panel is
// prefetched meanwhile).
template <class W, P16Scales kLayout>
struct P16GemmOf {
  template <size_t kRows>
  struct Rows {
    static LNPU_QM_INLINE void Run(const MatmulArgs& a, const QuantizedActivations& x,
                                   size_t row, size_t panel, size_t col_begin, size_t col_end,
                                   const int32_t* corrections) {
      const P16Activations<kRows> rows = P16RowsOf<W, kRows>(a, x, row, corrections);
      MatmulArgs tile = a;
      tile.dst = a.dst + row * a.n;
      const size_t panel_bytes = P16PanelBytes(W::kBlockBytes, a.k / kQuantBlock);
      P16Panels<W, kLayout, kRows, 1>(tile, rows, {panel}, col_begin, col_end,
                             {.quants = panel_bytes, .scales = panel_bytes});
    }
  };
};

template <class W, P16Scales kLayout>
LNPU_QM_TARGET void P16Gemm(const MatmulArgs& a, const QuantizedActivations& x,
                            size_t row_begin, size_t row_end, size_t col_begin,
                            size_t col_end) {
  thread_local std::vector<int32_t> corrections;
  P16Corrections<W>(a, x, row_begin, row_end, corrections);
  const size_t blocks = a.k / kQuantBlock;
  const size_t p_end = (col_end + kP16Rows - 1) / kP16Rows;
  for (size_t p = col_begin / kP16Rows; p < p_end; ++p) {
    for (size_t r = row_begin; r < row_end; r += kQuantGemvMaxRows) {
      // (No corrections without an offset: P16RowsOf then ignores the pointer.)
      const int32_t* rows_corrections =
          kWeightOffset<W> != 0 ? corrections.data() + (r - row_begin) * blocks : nullptr;
      WithGemvRows<P16GemmOf<W, kLayout>::template Rows>(std::min(kQuantGemvMaxRows, row_end - r),
                                                         a, x, r, p, col_begin, col_end,
                                                         rows_corrections);
    }
  }
}

// ---------------------------------------------------------------- GEMM
//
// A task's columns are processed in panels of kPanel = Isa::kPanelVectors
// vectors of int32 lanes, k in chunks of kGemmKBlocks blocks. Each chunk of
// a panel is repacked once (PackPanel) so that one vector load gives the
// same 4 weight bytes of kPanel columns; the micro-kernel then broadcasts 4
// activation bytes of each of Isa::kTileRows rows and accumulates
// kTileRows x kPanelVectors int32 vectors per block.

constexpr size_t kPanel = Isa::kPanelVectors * Isa::kLanes;
constexpr size_t kTileRows = Isa::kTileRows;
// Blocks per k chunk: the packed chunk (8 KiB per 16 columns) stays in L1.
constexpr size_t kGemmKBlocks = 16;

// Repacked weights of one panel chunk: for block t and 4-byte group j,
// the words of the panel's columns, `packed[(t * 8 + j) * kPanel + column]`;
// `scales[t * kPanel + column]` = f32 weight scales. Columns past `columns`
// are zero.
struct PackedPanel {
  int32_t* packed;
  float* scales;
};

template <class W>
LNPU_QM_TARGET void PackPanel(const uint8_t* weight, size_t row_bytes,
                              size_t columns, size_t b0, size_t count,
                              const PackedPanel& out) {
  constexpr size_t kB = W::kBlockBytes;
  constexpr size_t kWords = kQuantBlock / 4;
  for (size_t col = 0; col < kPanel; ++col) {
    const uint8_t* row = weight + col * row_bytes + b0 * kB;
    for (size_t t = 0; t < count; ++t) {
      alignas(32) int32_t words[kWords];
      float scale = 0.0f;
      if (col < columns) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(words),
                           LoadWeightBlock<W>(row + t * kB));
        scale = _cvtsh_ss(LoadU16(row + t * kB));
      } else {
        _mm256_store_si256(reinterpret_cast<__m256i*>(words),
                           _mm256_setzero_si256());
      }
      for (size_t j = 0; j < kWords; ++j) {
        out.packed[(t * kWords + j) * kPanel + col] = words[j];
      }
      out.scales[t * kPanel + col] = scale;
    }
  }
}

// Activation rows of one micro-kernel call.
struct TileRows {
  const int8_t* q[kTileRows];
  const float* scales[kTileRows];
  const int32_t* correction[kTileRows];  // nullptr if kWeightOffset == 0
};

// acc[r][v] += the panel chunk's blocks [b0, b0 + count) for the rows.
template <class W>
LNPU_QM_INLINE void GemmMicroKernel(const PackedPanel& panel, const TileRows& rows,
                                    size_t b0, size_t count,
                                    typename Isa::VF (&acc)[kTileRows][Isa::kPanelVectors]) {
  using VI = typename Isa::VI;
  using VF = typename Isa::VF;
  constexpr size_t kNV = Isa::kPanelVectors;
  constexpr size_t kL = Isa::kLanes;
  for (size_t t = 0; t < count; ++t) {
    const size_t b = b0 + t;
    BlockDot<W> dot[kTileRows][kNV];
#pragma GCC unroll 8
    for (size_t r = 0; r < kTileRows; ++r) {
      const VI init = kWeightOffset<W> == 0 ? Isa::ZeroI()
                                            : Isa::Set1I(rows.correction[r][b]);
#pragma GCC unroll 4
      for (size_t v = 0; v < kNV; ++v) dot[r][v] = BlockDot<W>(init);
    }
    const int32_t* packed = panel.packed + t * 8 * kPanel;
#pragma GCC unroll 8
    for (size_t j = 0; j < 8; ++j) {
      VI wv[kNV];
#pragma GCC unroll 4
      for (size_t v = 0; v < kNV; ++v) wv[v] = Isa::LoadI(packed + j * kPanel + v * kL);
#pragma GCC unroll 8
      for (size_t r = 0; r < kTileRows; ++r) {
        int32_t word;
        __builtin_memcpy(&word, rows.q[r] + b * kQuantBlock + 4 * j, sizeof(word));
        const VI xv = Isa::Set1I(word);
#pragma GCC unroll 4
        for (size_t v = 0; v < kNV; ++v) {
          dot[r][v].Add(wv[v], xv);
        }
      }
    }
    VF scale[kNV];
#pragma GCC unroll 4
    for (size_t v = 0; v < kNV; ++v) scale[v] = Isa::LoadF(panel.scales + t * kPanel + v * kL);
#pragma GCC unroll 8
    for (size_t r = 0; r < kTileRows; ++r) {
      const VF dx = Isa::Set1F(rows.scales[r][b]);
#pragma GCC unroll 4
      for (size_t v = 0; v < kNV; ++v) {
        acc[r][v] = Isa::FmaF(Isa::CvtF(dot[r][v].Sum()), Isa::MulF(scale[v], dx), acc[r][v]);
      }
    }
  }
}

// Per-thread buffers of the GEMM (thread_local: tasks run concurrently).
struct GemmScratch {
  std::vector<int32_t> packed;
  std::vector<float> scales;
  std::vector<int32_t> correction;
};

template <class W>
LNPU_QM_TARGET void GemmRange(const MatmulArgs& a, const QuantizedActivations& x,
                              size_t row_begin, size_t row_end, size_t col_begin,
                              size_t col_end) {
  constexpr size_t kNV = Isa::kPanelVectors;
  constexpr size_t kL = Isa::kLanes;
  const size_t blocks = a.k / kQuantBlock;
  const size_t row_bytes = blocks * W::kBlockBytes;
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  InitMatmulOutputTile(a, row_begin, row_end, col_begin, col_end);
  thread_local GemmScratch scratch;
  scratch.packed.resize(kGemmKBlocks * 8 * kPanel);
  scratch.scales.resize(kGemmKBlocks * kPanel);
  const PackedPanel panel{scratch.packed.data(), scratch.scales.data()};
  if constexpr (kWeightOffset<W> != 0) {
    scratch.correction.resize((row_end - row_begin) * blocks);
    for (size_t r = row_begin; r < row_end; ++r) {
      for (size_t b = 0; b < blocks; ++b) {
        const __m256i xq = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(x.q + r * a.k + b * kQuantBlock));
        scratch.correction[(r - row_begin) * blocks + b] =
            HorizontalSum(OffsetCorrection<W>(xq));
      }
    }
  }
  for (size_t p = col_begin; p < col_end; p += kPanel) {
    const size_t columns = std::min(kPanel, col_end - p);
    for (size_t b0 = 0; b0 < blocks; b0 += kGemmKBlocks) {
      const size_t count = std::min(kGemmKBlocks, blocks - b0);
      PackPanel<W>(weight + p * row_bytes, row_bytes, columns, b0, count, panel);
      for (size_t r = row_begin; r < row_end; r += kTileRows) {
        // Rows past the end repeat the last one; their sums are discarded.
        TileRows rows;
#pragma GCC unroll 8
        for (size_t i = 0; i < kTileRows; ++i) {
          const size_t row = std::min(r + i, row_end - 1);
          rows.q[i] = x.q + row * a.k;
          rows.scales[i] = x.scales + row * blocks;
          rows.correction[i] = kWeightOffset<W> == 0
                                   ? nullptr
                                   : scratch.correction.data() + (row - row_begin) * blocks;
        }
        typename Isa::VF acc[kTileRows][kNV];
#pragma GCC unroll 8
        for (size_t i = 0; i < kTileRows; ++i) {
#pragma GCC unroll 4
          for (size_t v = 0; v < kNV; ++v) acc[i][v] = Isa::ZeroF();
        }
        GemmMicroKernel<W>(panel, rows, b0, count, acc);
        const size_t valid_rows = std::min(kTileRows, row_end - r);
        for (size_t i = 0; i < valid_rows; ++i) {
          float* out = a.dst + (r + i) * a.n + p;
#pragma GCC unroll 4
          for (size_t v = 0; v < kNV; ++v) {
            if (v * kL >= columns) break;
            Isa::AddStoreF(out + v * kL, acc[i][v], std::min(kL, columns - v * kL));
          }
        }
      }
    }
  }
}

LNPU_QM_TARGET void Gemm(const MatmulArgs& a, const QuantizedActivations& x,
                         size_t row_begin, size_t row_end, size_t col_begin,
                         size_t col_end) {
  switch (a.weight_type) {
    case WeightType::kQ8_0:
      GemmRange<Q8_0>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ8_0P16:
      P16Gemm<Q8_0, P16Scales::kAfterPanel>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ4_0P16:
      P16Gemm<Q4_0, P16Scales::kAfterPanel>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ8_0P16S:
      P16Gemm<Q8_0, P16Scales::kAfterPair>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ4_0P16S:
      P16Gemm<Q4_0, P16Scales::kAfterPair>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    default:
      GemmRange<Q4_0>(a, x, row_begin, row_end, col_begin, col_end);
      return;
  }
}

// The GEMV of the 256-bit paths (Q8_0 / Q4_0: GemvRange); the avx512vnni
// path has its own for Q8_0 / Q4_0 (quant_matmul_x86.cc) and shares the
// panel ones.
template <size_t kRows>
struct GemvOfType {
  static LNPU_QM_INLINE void Run(const MatmulArgs& a, const QuantizedActivations& x,
                                 size_t col_begin, size_t col_end) {
    if (a.weight_type == WeightType::kQ8_0P16) {
      P16GemvOf<Q8_0, P16Scales::kAfterPanel>::Rows<kRows>::Run(a, x, col_begin, col_end);
    } else if (a.weight_type == WeightType::kQ4_0P16) {
      P16GemvOf<Q4_0, P16Scales::kAfterPanel>::Rows<kRows>::Run(a, x, col_begin, col_end);
    } else if (a.weight_type == WeightType::kQ8_0P16S) {
      P16GemvOf<Q8_0, P16Scales::kAfterPair>::Rows<kRows>::Run(a, x, col_begin, col_end);
    } else if (a.weight_type == WeightType::kQ4_0P16S) {
      P16GemvOf<Q4_0, P16Scales::kAfterPair>::Rows<kRows>::Run(a, x, col_begin, col_end);
    } else {
      GemvOfRows<kRows>::Run(a, x, col_begin, col_end);
    }
  }
};

[[maybe_unused]] LNPU_QM_TARGET void Gemv(const MatmulArgs& a, const QuantizedActivations& x,
                                          size_t col_begin, size_t col_end) {
  WithGemvRows<GemvOfType>(a.rows, a, x, col_begin, col_end);
}

#undef LNPU_QM_INLINE
