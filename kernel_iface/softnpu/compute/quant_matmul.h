// Quantized matmul paths: the inner loops of MATMUL with Q8_0 / Q4_0
// weights, one implementation per instruction set (AMX, AVX-512 VNNI,
// AVX-VNNI, Arm dot product, and the portable Highway path). Matmul in
// matmul.h quantizes the activations, splits the work across the pool and
// calls the best path the CPU and OS support; each path file only supplies
// the per-range loops below.
//
// Contract of every path (checked by tests/compute on each path the machine
// runs): the same result as the Highway path up to f32 summation order. The
// int8 block dot products are exact in int32, so paths differ only in the
// order of the f32 scale-and-add steps.
//
// Panel weights (Q8_0P16, Q4_0P16 and their _P16S forms: kernel_types.h)
// have one order for
// every path, GEMV and GEMM alike, so that their results agree bit for bit
// whichever path, row count and column range computes them (prefill and
// decode give the same numbers): for dst row r and column c, over the
// blocks b in order,
//   acc = fma(f32(dot_b), f32(d_w[c][b]) * d_x[r][b], acc)   (acc = +0 first)
// with dot_b the exact int32 dot product of the block's 32 pairs of int8
// activation and weight (Q8_0: q; Q4_0: q - 8), then
//   dst[r][c] = MatmulOutputBase(a, r, c) + acc.
// (PortableP16Matmul below is that order in plain C++.)
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_QUANT_MATMUL_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_QUANT_MATMUL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/quant_blocks.h"
#include "kernel_iface/softnpu/compute/matmul.h"

namespace lnpu::softnpu::compute {

// The weight formats' block layouts (base/quant_blocks.h); kQuantBlock is
// also the block of the int8 activations they are multiplied with.
using ::lnpu::kQ4_0BlockBytes;
using ::lnpu::kQ8_0BlockBytes;
using ::lnpu::kQ8_0P16BlockQuantBytes;
using ::lnpu::kP16GroupBytes;
using ::lnpu::kP16Rows;
using ::lnpu::kQuantBlock;

// A path's GEMV loop takes up to this many rows (decode and batched decode
// of up to 4 sequences) in one pass over the weights. Matmul runs up to
// QuantMatmulPath::gemv_passes_max_rows rows as several such passes and
// more through the GEMM loop: the GEMM loops repack each weight panel per
// call (amx, avx512vnni), which costs more than a GEMV pass when there are
// only a few rows to share it.
inline constexpr size_t kQuantGemvMaxRows = 4;

// Matmul src rows quantized per block of 32 like llama.cpp's q8_0
// activations: d = max|x| / 127, q = round-to-nearest-even(x / d) (q = 0
// when d = 0), x ~= d * q. q is [rows][k], scales is [rows][k / 32].
struct QuantizedActivations {
  const int8_t* q = nullptr;
  const float* scales = nullptr;
};

// Initial value of dst[r][c] before the dot product is added: the old dst
// value with LNPU_MATMUL_ACCUMULATE, plus the bias if any.
inline float MatmulOutputBase(const MatmulArgs& a, size_t r, size_t c) {
  float base = a.accumulate ? a.dst[r * a.n + c] : 0.0f;
  if (a.bias != nullptr) base += a.bias[c];
  return base;
}

// dst[r][c] = MatmulOutputBase(a, r, c) over rows [row_begin, row_end) x
// columns [col_begin, col_end): the start of a GEMM tile whose loops then
// add their partial dot products into dst.
inline void InitMatmulOutputTile(const MatmulArgs& a, size_t row_begin,
                                 size_t row_end, size_t col_begin,
                                 size_t col_end) {
  for (size_t r = row_begin; r < row_end; ++r) {
    for (size_t c = col_begin; c < col_end; ++c) {
      a.dst[r * a.n + c] = MatmulOutputBase(a, r, c);
    }
  }
}

// One quantized-matmul implementation. Each path's file has its own table
// entry and Q8_0 / Q4_0 dispatch (alike across files): its kernels are
// compiled for its own instruction set (target attributes, #pragma GCC
// target or a Highway namespace), which a shared dispatcher would cross.
// Both loops handle Q8_0, Q4_0 and the four panel types' weights
// (a.weight_type), any n, any k that is a multiple of 32, and write
// dst = MatmulOutputBase + dot for exactly the given range. They may be
// called concurrently on disjoint ranges; per-thread state, if any, is
// thread_local.
struct QuantMatmulPath {
  std::string_view name;  // "amx", "avx512vnni", "avxvnni", "neon-dotprod", "highway"
  // True if this CPU and OS can run the path (CPUID / hwcaps, and for AMX the
  // kernel's permission to use the tile registers). Cheap after first call.
  bool (*supported)();
  // 1 <= a.rows <= kQuantGemvMaxRows (decode, batched decode): every dst
  // row x columns [col_begin, col_end), reading each weight block once for
  // all rows. Each row's result is bit-identical to that of a call with
  // that row alone (a.rows == 1): a batched decode step gives what each
  // sequence alone gives. nullptr: the path has no GEMV of its own (AMX)
  // and Matmul uses the next supported path's.
  void (*gemv)(const MatmulArgs& a, const QuantizedActivations& x,
               size_t col_begin, size_t col_end);
  // a.rows > kQuantGemvMaxRows: dst rows [row_begin, row_end) x columns
  // [col_begin, col_end).
  void (*gemm)(const MatmulArgs& a, const QuantizedActivations& x,
               size_t row_begin, size_t row_end, size_t col_begin,
               size_t col_end);
  // Preferred GEMM task tile (rows x columns of dst per task).
  size_t gemm_tile_rows;
  size_t gemm_tile_cols;
  // Up to this many rows (>= kQuantGemvMaxRows), Matmul runs GEMV passes of
  // up to kQuantGemvMaxRows rows over column pieces that stay in L2 between
  // passes (each row bit-identical to a one-row call, so batched decode of
  // up to this many sequences gives what each alone gives); the GEMM takes
  // more rows. Set from matmul_benchmark's rows = 8 and 16 figures where
  // the passes beat the path's GEMM (docs/performance.md); the default
  // keeps every row count above kQuantGemvMaxRows on the GEMM.
  size_t gemv_passes_max_rows = kQuantGemvMaxRows;
  // The same for Q4_0 panels (Q4_0P16, Q4_0P16S) where that is larger (0:
  // as the others):
  // `amx` unpacks a task's 4-bit panels into tiles, which 16 rows do not
  // repay. Read both through GemvPassesMaxRows.
  size_t q4_0_p16_gemv_passes_max_rows = 0;
  // Q8_0 / Q4_0 panels (both layouts) have loops of their own here,
  // faster than the path's Q8_0 / Q4_0 ones (matmul_benchmark), rather
  // than PortableP16Matmul: the software NPU then reports
  // DRM_LNPU_CAP_Q8_0_P16_PREFERRED and _Q8_0_P16S_PREFERRED /
  // DRM_LNPU_CAP_Q4_0_P16_PREFERRED and _Q4_0_P16S_PREFERRED.
  bool q8_0_p16_kernels = false;
  bool q4_0_p16_kernels = false;
};

// The most rows `path` runs as GEMV passes for weights of `type`
// (>= kQuantGemvMaxRows).
inline size_t GemvPassesMaxRows(const QuantMatmulPath& path, WeightType type) {
  const size_t rows = IsPanelType(type) && BlockTypeOf(type) == WeightType::kQ4_0
                          ? std::max(path.gemv_passes_max_rows, path.q4_0_p16_gemv_passes_max_rows)
                          : path.gemv_passes_max_rows;
  return std::max(kQuantGemvMaxRows, rows);
}

// dst rows [row_begin, row_end) x columns [col_begin, col_end) of a
// panel-type matmul in the order of the contract above, in plain
// C++: the loops of the paths that have no panel kernels of their own
// (highway, the Arm paths), and the tests' reference for the others.
// Thread-safe on disjoint ranges.
void PortableP16Matmul(const MatmulArgs& a, const QuantizedActivations& x,
                       size_t row_begin, size_t row_end, size_t col_begin,
                       size_t col_end);

// Paths this process can run, best first; the last one is always the
// portable "highway" path. Computed once; thread-safe.
std::span<const QuantMatmulPath* const> SupportedQuantMatmulPaths();

// The path Matmul uses: the first supported one, or the one set by
// SetQuantMatmulPathForTest.
const QuantMatmulPath& ActiveQuantMatmulPath();

// The GEMV loop Matmul uses: the active path's, or if it has none the next
// supported path's that has one.
decltype(QuantMatmulPath::gemv) ActiveQuantGemv();

// Testing and benchmarking: makes Matmul use `path` (one of
// SupportedQuantMatmulPaths()), or the default again for nullptr. Not
// thread-safe with concurrent Matmul calls.
void SetQuantMatmulPathForTest(const QuantMatmulPath* path);

// The paths, defined in their own files (quant_matmul_*.cc) and compiled on
// the architectures that have them (the x86 ones unless the build leaves
// them out: meson's x86_quant_matmul_paths option).
extern const QuantMatmulPath kHighwayQuantMatmulPath;
#if defined(LNPU_X86_QUANT_MATMUL_PATHS)
extern const QuantMatmulPath kAmxQuantMatmulPath;
extern const QuantMatmulPath kAvx512VnniQuantMatmulPath;
extern const QuantMatmulPath kAvxVnniQuantMatmulPath;
extern const QuantMatmulPath kAvx2QuantMatmulPath;
#endif
#if defined(__aarch64__)
extern const QuantMatmulPath kNeonI8mmQuantMatmulPath;
extern const QuantMatmulPath kNeonDotprodQuantMatmulPath;
#endif

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_QUANT_MATMUL_H_
