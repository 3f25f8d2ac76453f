// The "amx" quantized-matmul path: GEMM with Intel AMX (TDPBSSD on int8
// tiles), one TDPBSSD per 32-element block so that each block's exact int32
// dot products can be scaled by d_x * d_w into f32 accumulators (AVX-512),
// as llama.cpp's AMX backend does for Q8_0 / Q4_0. No GEMV of its own: a
// single row would use one sixteenth of each tile.
//
// Tiles: C (int32, 16 rows x 16 columns of dst) += A (16 activation rows x
// 32 int8 of one block, read in place from QuantizedActivations) times B
// (the block's 32 k x 16 weight columns in the VNNI layout: 8 rows of 16
// columns x 4 consecutive k). Q8_0 / Q4_0 weights stay in their GGUF block
// format; each task repacks its column panel (Q4_0: nibbles minus 8) into a
// thread_local buffer once and reuses it for all of its row tiles. Q8_0
// panels (Q8_0P16, Q8_0P16S) are B tiles in place (only their scales are
// converted); Q4_0 panels are unpacked per task without gathers (a group's
// low nibbles are a B tile row, its high nibbles the row 4 further). For
// the panel types the order of the f32 steps is quant_matmul.h's.
//
// Only the functions marked LNPU_AMX_TARGET use AMX / AVX-512 instructions,
// and they run only after Supported() has checked the CPU and obtained the
// kernel's permission for the tile registers: the binary runs on any x86-64.
#include <asm/prctl.h>
// GCC 12 reports the deliberately undefined vectors inside its AVX-512
// intrinsics as (maybe-)uninitialized once inlined (GCC bug 105593).
// (Clang has no -Wmaybe-uninitialized and would warn about the pragma.)
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/x86_cpu_features.h"

#define LNPU_AMX_TARGET \
  __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512dq,avx512vl,f16c,fma")))

namespace lnpu::softnpu::compute {
namespace {

// Linux: the tile data state component, enabled per process on request.
constexpr int kXfeatureXtileData = 18;

// Rows of the A and C tiles, columns of the B and C tiles.
constexpr size_t kTile = 16;
// One B tile: 32 k x 16 columns of int8 (8 rows of 64 bytes).
constexpr size_t kPackedBlockBytes = kQuantBlock * kTile;

// Task tile (Matmul's unit of parallel work). 256 rows amortize the weight
// repack over 16 row tiles in prefill chunks of 256; 64 columns give 14
// tasks at dim 896 for two threads to share.
constexpr size_t kAmxTileRows = 256;
constexpr size_t kAmxTileCols = 64;

// The tile registers of the kernel below (literal numbers: the AMX
// intrinsics paste them into register names).
#define LNPU_TMM_C0 0
#define LNPU_TMM_C1 1
#define LNPU_TMM_A0 2
#define LNPU_TMM_A1 3
#define LNPU_TMM_B0 4
#define LNPU_TMM_B1 5

// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette_id = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row
  uint8_t rows[16] = {};
};

constexpr TileConfig MakeTileConfig() {
  TileConfig config;
  config.palette_id = 1;
  for (int c : {LNPU_TMM_C0, LNPU_TMM_C1}) {
    config.rows[c] = kTile;
    config.colsb[c] = kTile * sizeof(int32_t);
  }
  for (int a : {LNPU_TMM_A0, LNPU_TMM_A1}) {
    config.rows[a] = kTile;
    config.colsb[a] = kQuantBlock;
  }
  for (int b : {LNPU_TMM_B0, LNPU_TMM_B1}) {
    config.rows[b] = kQuantBlock / 4;
    config.colsb[b] = kTile * 4;
  }
  return config;
}

constexpr TileConfig kTileConfig = MakeTileConfig();

bool CpuAndOsSupportAmx() {
  // The AVX-512 part scales the int32 tiles and converts the f16 scales.
  const X86CpuFeatures& cpu = GetX86CpuFeatures();
  // AVX-512 VNNI (every AMX CPU has it): the GEMV and the Q8_0P16 columns
  // of cut panels run the avx512vnni path's loops.
  if (!cpu.amx_int8 || !cpu.avx512 || !cpu.avx512_vnni) return false;
  // Fails on kernels older than 5.16 or without AMX support (the tile
  // registers are then unusable: any tile instruction raises SIGILL).
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, kXfeatureXtileData) == 0;
}

bool Supported() {
  static const bool supported = CpuAndOsSupportAmx();
  return supported;
}

// Per-thread buffers, grown as needed and reused across calls.
struct AmxScratch {
  // The task's weight panel: [column group][block] B tiles and the 16
  // columns' f32 scales of each block (0 for columns past the end).
  std::vector<int8_t> packed;
  std::vector<float> packed_scales;
  // A ragged row tile (< 16 rows) copied and padded with zero rows.
  std::vector<int8_t> rows_q;
  // The current row tile's activation scales, [block][16 rows].
  std::vector<float> tile_scales;
};

thread_local AmxScratch scratch;

// Compiler barrier: the AMX intrinsics of GCC 12 are asm statements that
// do not declare the memory they read.
inline void MemoryBarrier() { asm volatile("" ::: "memory"); }

// Rows j and j + 4 of a Q4_0 block's B tile (`tile`: its 8 rows of 64
// bytes) from `bytes`, nibble bytes 4j .. 4j + 3 of its 16 columns side by
// side: byte i of a block holds element i (low nibble) and element i + 16
// (high), so the low nibbles are k = 4j .. 4j + 3 and the high ones k = 16
// + 4j .., each stored minus 8.
LNPU_AMX_TARGET __attribute__((always_inline)) inline void StoreQ4_0TileRows(
    __m512i bytes, size_t j, int8_t* tile) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  const __m512i eight = _mm512_set1_epi8(8);
  const __m512i lo = _mm512_and_si512(bytes, low_nibbles);
  const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles);
  _mm512_storeu_si512(tile + j * 64, _mm512_sub_epi8(lo, eight));
  _mm512_storeu_si512(tile + (j + 4) * 64, _mm512_sub_epi8(hi, eight));
}

// Repacks weight columns [col_begin, col_end) into s.packed /
// s.packed_scales.
template <bool kQ4>
LNPU_AMX_TARGET void PackWeights(const MatmulArgs& a, size_t col_begin,
                                 size_t col_end, AmxScratch& s) {
  const size_t blocks = a.k / kQuantBlock;
  const size_t block_bytes = kQ4 ? kQ4_0BlockBytes : kQ8_0BlockBytes;
  const size_t row_bytes = blocks * block_bytes;
  const size_t groups = (col_end - col_begin + kTile - 1) / kTile;
  s.packed.resize(groups * blocks * kPackedBlockBytes);
  s.packed_scales.resize(groups * blocks * kTile);
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5,
                                        4, 3, 2, 1, 0);
  for (size_t g = 0; g < groups; ++g) {
    const size_t c0 = col_begin + g * kTile;
    const size_t valid = std::min(kTile, col_end - c0);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
    // Byte offset of each column's row; lanes past the end are masked off.
    const __m512i offsets = _mm512_mullo_epi32(
        lane, _mm512_set1_epi32(static_cast<int>(row_bytes)));
    const uint8_t* panel = weight + c0 * row_bytes;
    for (size_t b = 0; b < blocks; ++b) {
      const uint8_t* block = panel + b * block_bytes;
      int8_t* out = s.packed.data() + (g * blocks + b) * kPackedBlockBytes;
      // The f16 scale is the low half of each column's first dword.
      const __m512i halves = _mm512_mask_i32gather_epi32(
          _mm512_setzero_si512(), mask, offsets, block, 1);
      _mm512_storeu_ps(s.packed_scales.data() + (g * blocks + b) * kTile,
                       _mm512_cvtph_ps(_mm512_cvtepi32_epi16(halves)));
      // Row j of the B tile: dword j (k = 4j .. 4j + 3) of every column.
      if constexpr (kQ4) {
        for (size_t j = 0; j < 4; ++j) {
          StoreQ4_0TileRows(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, offsets,
                                                        block + 2 + 4 * j, 1),
                            j, out);
        }
      } else {
        for (size_t j = 0; j < kQuantBlock / 4; ++j) {
          _mm512_storeu_si512(
              out + j * 64,
              _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask,
                                          offsets, block + 2 + 4 * j, 1));
        }
      }
    }
  }
}

// acc[r] += float(c[r]) * (d_w * d_x[r]) for the 16 rows of one block's C
// tile; w_scales / x_scales are the block's 16 column / row scales.
LNPU_AMX_TARGET __attribute__((always_inline)) inline void ScaleAndAdd(
    const int32_t* c, const float* w_scales, const float* x_scales,
    __m512 (&acc)[kTile]) {
  const __m512 dw = _mm512_loadu_ps(w_scales);
#pragma GCC unroll 16
  for (size_t r = 0; r < kTile; ++r) {
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x_scales[r]));
    acc[r] = _mm512_fmadd_ps(
        _mm512_cvtepi32_ps(_mm512_load_si512(c + r * kTile)), scale, acc[r]);
  }
}

// dst rows [row, row + valid_rows) x columns [col, col + valid_cols) =
// MatmulOutputBase + acc.
LNPU_AMX_TARGET __attribute__((always_inline)) inline void StoreRows(
    const MatmulArgs& a, size_t row, size_t valid_rows, size_t col,
    size_t valid_cols, const __m512 (&acc)[kTile]) {
  const __mmask16 mask = static_cast<__mmask16>((1u << valid_cols) - 1);
  const __m512 bias = a.bias != nullptr
                          ? _mm512_maskz_loadu_ps(mask, a.bias + col)
                          : _mm512_setzero_ps();
  // Constant indices into acc (full unrolling) keep it in registers.
#pragma GCC unroll 16
  for (size_t r = 0; r < kTile; ++r) {
    if (r >= valid_rows) break;
    float* out = a.dst + (row + r) * a.n + col;
    const __m512 old =
        a.accumulate ? _mm512_maskz_loadu_ps(mask, out) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(out, mask,
                          _mm512_add_ps(_mm512_add_ps(old, bias), acc[r]));
  }
}

// Starts block `block`'s int32 products in tile C from tiles A and B
// (literal tile numbers). B tiles lie in pairs `pair_bytes` apart.
#define LNPU_AMX_START_BLOCK(C, A, B, block)                                     \
  do {                                                                           \
    _tile_zero(C);                                                               \
    _tile_loadd(A, x_q + (block) * kQuantBlock, k);                              \
    _tile_loadd(B, packed + (block) / 2 * pair_bytes + (block) % 2 * kPackedBlockBytes, \
                kTile * 4);                                                      \
    _tile_dpbssd(C, A, B);                                                       \
  } while (0)

// Scales the stored C tiles of blocks [block, min(block + 2, blocks)).
LNPU_AMX_TARGET __attribute__((always_inline)) inline void ScaleBlockPair(
    const int32_t (&c)[2][kTile * kTile], size_t block, size_t blocks,
    const float* x_scales, const float* packed_scales, __m512 (&acc)[kTile]) {
  ScaleAndAdd(c[0], packed_scales + block * kTile, x_scales + block * kTile,
              acc);
  if (block + 1 < blocks) {
    ScaleAndAdd(c[1], packed_scales + (block + 1) * kTile,
                x_scales + (block + 1) * kTile, acc);
  }
}

// dst rows [row, row + valid_rows) x columns [col, col + valid_cols), at
// most one 16 x 16 tile, over all of k. x_q points at the tile's first
// activation row (row stride k; 16 readable rows), x_scales at its scales
// as [block][16 rows], packed / packed_scales at the column group's first
// block; the B tiles of blocks 2j and 2j + 1 are at packed + j * pair_bytes
// and kPackedBlockBytes further (2 * kPackedBlockBytes apart when packed,
// P16PairBytes in a Q8_0P16S panel).
//
// Software-pipelined in pairs of blocks: while the tiles compute pair p + 1,
// AVX-512 scales pair p - 1, whose C tiles were stored one step earlier
// (tile stores do not forward to vector loads: reading them back at once
// would stall). The accumulators stay in registers: their address never
// escapes (the tile stores clobber memory).
LNPU_AMX_TARGET void DstTile(const MatmulArgs& a, size_t row, size_t valid_rows,
                             size_t col, size_t valid_cols, const int8_t* x_q,
                             const float* x_scales, const int8_t* packed, size_t pair_bytes,
                             const float* packed_scales) {
  const size_t k = a.k;
  const size_t blocks = k / kQuantBlock;
  __m512 acc[kTile];
#pragma GCC unroll 16
  for (size_t r = 0; r < kTile; ++r) acc[r] = _mm512_setzero_ps();
  // [pair parity][block of the pair]
  alignas(64) int32_t c[2][2][kTile * kTile];
  LNPU_AMX_START_BLOCK(LNPU_TMM_C0, LNPU_TMM_A0, LNPU_TMM_B0, 0);
  if (blocks > 1) LNPU_AMX_START_BLOCK(LNPU_TMM_C1, LNPU_TMM_A1, LNPU_TMM_B1, 1);
  size_t parity = 0;
  for (size_t b = 0; b < blocks; b += 2, parity ^= 1) {
    _tile_stored(LNPU_TMM_C0, c[parity][0], kTile * sizeof(int32_t));
    if (b + 1 < blocks) {
      _tile_stored(LNPU_TMM_C1, c[parity][1], kTile * sizeof(int32_t));
    }
    if (b + 2 < blocks) {
      LNPU_AMX_START_BLOCK(LNPU_TMM_C0, LNPU_TMM_A0, LNPU_TMM_B0, b + 2);
    }
    if (b + 3 < blocks) {
      LNPU_AMX_START_BLOCK(LNPU_TMM_C1, LNPU_TMM_A1, LNPU_TMM_B1, b + 3);
    }
    if (b >= 2) {
      ScaleBlockPair(c[parity ^ 1], b - 2, blocks, x_scales, packed_scales,
                     acc);
    }
  }
  ScaleBlockPair(c[parity ^ 1], (blocks - 1) & ~size_t{1}, blocks, x_scales,
                 packed_scales, acc);
  StoreRows(a, row, valid_rows, col, valid_cols, acc);
}

#undef LNPU_AMX_START_BLOCK

// Prefetches (for writing) the dst lines of the tile after (row, col) in
// GemmT's order, so that their misses overlap the current tile's
// arithmetic: large outputs (e.g. 256 x 4864 floats) do not fit in L2.
void PrefetchNextDstTile(const MatmulArgs& a, size_t row, size_t col,
                         size_t row_end, size_t col_begin, size_t col_end) {
  col += kTile;
  if (col >= col_end) {
    col = col_begin;
    row += kTile;
  }
  for (size_t r = row; r < std::min(row + kTile, row_end); ++r) {
    __builtin_prefetch(a.dst + r * a.n + col, /*rw=*/1, /*locality=*/3);
  }
}

// The f16 scales of the panels of columns [col_begin, col_end) (col_begin a
// multiple of 16) of a panel-type matrix (blocks of block_bytes, scales
// where `layout` keeps them), converted to f32 into s.packed_scales as
// [panel][block][16 columns]; returns the first byte of column col_begin's
// panel.
LNPU_AMX_TARGET const uint8_t* PanelScales(const MatmulArgs& a, size_t block_bytes,
                                           P16Scales layout, size_t col_begin, size_t col_end,
                                           AmxScratch& s) {
  const size_t blocks = a.k / kQuantBlock;
  const size_t panel_bytes = P16PanelBytes(block_bytes, blocks);
  const size_t groups = (col_end - col_begin + kTile - 1) / kTile;
  s.packed_scales.resize(groups * blocks * kTile);
  const auto* first = static_cast<const uint8_t*>(a.weight) + col_begin / kTile * panel_bytes;
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t* panel = first + g * panel_bytes;
    for (size_t b = 0; b < blocks; ++b) {
      const uint8_t* scales = panel + P16ScalesOffset(block_bytes, layout, blocks, b);
      _mm512_storeu_ps(s.packed_scales.data() + (g * blocks + b) * kTile,
                       _mm512_cvtph_ps(_mm256_loadu_si256(
                           reinterpret_cast<const __m256i*>(scales))));
    }
  }
  return first;
}

// Q4_0 panel quants (Q4_0P16, Q4_0P16S: `layout`) of the panels of columns
// [col_begin, col_end) (col_begin a multiple of 16) as B tiles in s.packed,
// [panel][block]: group j of a block is StoreQ4_0TileRows' `bytes` as
// stored. `first` is PanelScales' return value. The panels are read side by
// side, each its own memory stream.
LNPU_AMX_TARGET void UnpackQ4_0Panels(const MatmulArgs& a, P16Scales layout,
                                      const uint8_t* first, size_t col_begin, size_t col_end,
                                      AmxScratch& s) {
  const size_t blocks = a.k / kQuantBlock;
  const size_t groups = (col_end - col_begin + kTile - 1) / kTile;
  const size_t panel_bytes = P16PanelBytes(kQ4_0BlockBytes, blocks);
  s.packed.resize(groups * blocks * kPackedBlockBytes);
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t j = 0; j < 4; ++j) {
      for (size_t g = 0; g < groups; ++g) {
        const uint8_t* group = first + g * panel_bytes +
                               P16QuantsOffset(kQ4_0BlockBytes, layout, b) + j * kP16GroupBytes;
        StoreQ4_0TileRows(_mm512_loadu_si512(group), j,
                          s.packed.data() + (g * blocks + b) * kPackedBlockBytes);
      }
    }
  }
}

template <WeightType kType>
LNPU_AMX_TARGET void GemmT(const MatmulArgs& a, const QuantizedActivations& x,
                           size_t row_begin, size_t row_end, size_t col_begin,
                           size_t col_end) {
  AmxScratch& s = scratch;
  const size_t blocks = a.k / kQuantBlock;
  // The weight panel of group g (16 columns from col_begin) and its f32
  // scales: repacked into scratch, or in place for the Q8_0 panels.
  const int8_t* panel = nullptr;
  size_t group_bytes = blocks * kPackedBlockBytes;
  size_t pair_bytes = 2 * kPackedBlockBytes;
  constexpr P16Scales kLayout = PanelScalesOf(kType);
  if constexpr (kType == WeightType::kQ8_0P16 || kType == WeightType::kQ8_0P16S) {
    panel = reinterpret_cast<const int8_t*>(
        PanelScales(a, kQ8_0BlockBytes, kLayout, col_begin, col_end, s));
    group_bytes = P16PanelBytes(kQ8_0BlockBytes, blocks);
    if constexpr (kLayout == P16Scales::kAfterPair) pair_bytes = P16PairBytes(kQ8_0BlockBytes);
  } else if constexpr (kType == WeightType::kQ4_0P16 || kType == WeightType::kQ4_0P16S) {
    UnpackQ4_0Panels(a, kLayout,
                     PanelScales(a, kQ4_0BlockBytes, kLayout, col_begin, col_end, s),
                     col_begin, col_end, s);
    panel = s.packed.data();
  } else {
    PackWeights<kType == WeightType::kQ4_0>(a, col_begin, col_end, s);
    panel = s.packed.data();
  }
  _tile_loadconfig(&kTileConfig);
  for (size_t r = row_begin; r < row_end; r += kTile) {
    const size_t valid_rows = std::min(kTile, row_end - r);
    const int8_t* x_q = x.q + r * a.k;
    if (valid_rows < kTile) {
      // TILELOADD reads all 16 rows: pad with zero rows.
      s.rows_q.assign(kTile * a.k, 0);
      std::memcpy(s.rows_q.data(), x_q, valid_rows * a.k);
      x_q = s.rows_q.data();
    }
    // The tile's activation scales as [block][16 rows] (0 past the end).
    s.tile_scales.resize(blocks * kTile);
    const __mmask16 row_mask = static_cast<__mmask16>((1u << valid_rows) - 1);
    const __m512i row_offsets = _mm512_mullo_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
        _mm512_set1_epi32(static_cast<int>(blocks)));
    for (size_t b = 0; b < blocks; ++b) {
      _mm512_storeu_ps(s.tile_scales.data() + b * kTile,
                       _mm512_mask_i32gather_ps(_mm512_setzero_ps(), row_mask,
                                                row_offsets,
                                                x.scales + r * blocks + b, 4));
    }
    MemoryBarrier();
    for (size_t c = col_begin; c < col_end; c += kTile) {
      const size_t g = (c - col_begin) / kTile;
      PrefetchNextDstTile(a, r, c, row_end, col_begin, col_end);
      DstTile(a, r, valid_rows, c, std::min(kTile, col_end - c), x_q,
              s.tile_scales.data(), panel + g * group_bytes, pair_bytes,
              s.packed_scales.data() + g * blocks * kTile);
    }
  }
}

// The panel types: the whole panels of the range on the tiles (a last
// partial one only where the matrix ends: its padding columns are in
// memory); columns of a panel cut by the range go to the avx512vnni GEMM,
// which gives the same bits (quant_matmul.h).
template <WeightType kType>
void PanelGemm(const MatmulArgs& a, const QuantizedActivations& x, size_t row_begin,
               size_t row_end, size_t col_begin, size_t col_end) {
  const size_t begin = std::min(col_end, (col_begin + kTile - 1) / kTile * kTile);
  const size_t end = std::max(begin, col_end == a.n ? col_end : col_end / kTile * kTile);
  if (col_begin < begin) {
    kAvx512VnniQuantMatmulPath.gemm(a, x, row_begin, row_end, col_begin, begin);
  }
  if (begin < end) {
    GemmT<kType>(a, x, row_begin, row_end, begin, end);
  }
  if (end < col_end) {
    kAvx512VnniQuantMatmulPath.gemm(a, x, row_begin, row_end, end, col_end);
  }
}

void Gemm(const MatmulArgs& a, const QuantizedActivations& x,
          size_t row_begin, size_t row_end, size_t col_begin, size_t col_end) {
  switch (a.weight_type) {
    case WeightType::kQ8_0:
      GemmT<WeightType::kQ8_0>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ8_0P16:
      PanelGemm<WeightType::kQ8_0P16>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ4_0P16:
      PanelGemm<WeightType::kQ4_0P16>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ8_0P16S:
      PanelGemm<WeightType::kQ8_0P16S>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    case WeightType::kQ4_0P16S:
      PanelGemm<WeightType::kQ4_0P16S>(a, x, row_begin, row_end, col_begin, col_end);
      return;
    default:
      GemmT<WeightType::kQ4_0>(a, x, row_begin, row_end, col_begin, col_end);
      return;
  }
}

}  // namespace

const QuantMatmulPath kAmxQuantMatmulPath = {
    .name = "amx",
    .supported = Supported,
    .gemv = nullptr,
    .gemm = Gemm,
    .gemm_tile_rows = kAmxTileRows,
    .gemm_tile_cols = kAmxTileCols,
    // The next path's GEMV passes against this GEMM on the Intel VM
    // (docs/performance.md, "GEMV passes on Intel (AMX)"): 8 rows of the
    // panel types 1.2-1.9x faster, of Q4_0 1.2-1.6x, of Q8_0 0.9-1.2x;
    // 16 rows of Q4_0P16 1.0-1.26x faster, of the other types slower.
    .gemv_passes_max_rows = 8,
    .q4_0_p16_gemv_passes_max_rows = 16,
    .q8_0_p16_kernels = true,
    .q4_0_p16_kernels = true,
};

}  // namespace lnpu::softnpu::compute
