// MATMUL with Q6_K weights (LNPU_DTYPE_Q6_K, 256-element blocks of 6-bit
// q with int8 sub-block scales: base/quant_blocks.h): the GEMV loops that
// Matmul runs for every row count of such a matmul (GEMV passes of up to
// kQuantGemvMaxRows rows; Q6_K is the output projection of quantized
// models, run on the last row of a prefill and on decode rows).
//
// One order for every loop, so that they agree bit for bit: for dst row r
// and column c, with x the row's int8 activations (QuantizedActivations),
// d_x[b] their block scales, and for block s of the column's weights its
// scale d, sub-block scales sc and q, 16 f32 lanes L = 8 * (b % 2) + i:
//   v[s][b][i] = sc[2b + i / 4] * sum_{e = 4i .. 4i + 3} (q[32b + e] - 32) * x[256s + 32b + e]
//     (exact int32; b = 0 .. 7 the activation blocks of s, i = 0 .. 7)
//   part[L] = +0, then for b = L / 8, L / 8 + 2, L / 8 + 4, L / 8 + 6:
//     part[L] = fma(f32(v[s][b][L % 8]), d_x[8s + b], part[L])
//   acc[L] = fma(part[L], f32(d), acc[L])          (acc = +0 first, s in order)
//   t[i] = acc[i] + acc[i + 8];
//   sum = ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]))
//   dst[r][c] = MatmulOutputBase(a, r, c) + sum.
// (The lanes are those of a 512-bit vector of f32 holding two activation
// blocks: the AVX-512 loop computes them as such, the AVX2 loop as two
// 256-bit halves, the NEON loops as four 128-bit quarters,
// PortableQ6_KGemv one by one.)
//
// Every loop takes 1 <= a.rows <= kQuantGemvMaxRows, a.k a multiple of 256,
// any n and column range, and write exactly dst rows [0, a.rows) x columns
// [col_begin, col_end). Thread-safe on disjoint ranges (per-thread scratch
// is thread_local).
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_QUANT_MATMUL_Q6_K_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_QUANT_MATMUL_Q6_K_H_

#include <cstddef>

#include "kernel_iface/softnpu/compute/quant_matmul.h"

namespace lnpu::softnpu::compute {

using Q6_KGemvFn = void (*)(const MatmulArgs& a, const QuantizedActivations& x,
                            size_t col_begin, size_t col_end);

// The order above in plain C++: the loop of CPUs with neither AVX2 nor
// NEON, and the tests' reference.
void PortableQ6_KGemv(const MatmulArgs& a, const QuantizedActivations& x, size_t col_begin,
                      size_t col_end);

// The vector loops, or nullptr where this build or CPU has none: AVX-512
// with VNNI (F/BW/DQ/VL/VNNI; an AVX-512 CPU without VNNI runs the AVX2
// loop) and AVX2 on x86; on aarch64 NEON with SDOT (FEAT_DotProd) and
// plain NEON (every Armv8-A CPU).
Q6_KGemvFn Avx512Q6_KGemv();
Q6_KGemvFn Avx2Q6_KGemv();
Q6_KGemvFn NeonDotprodQ6_KGemv();
Q6_KGemvFn NeonQ6_KGemv();

// The loop Matmul uses: the first of AVX-512, AVX2, NEON SDOT, NEON and
// portable that the CPU runs.
Q6_KGemvFn ActiveQ6_KGemv();

// Whether ActiveQ6_KGemv() streams a Q6_K matrix in less time than the
// Q8_0 GEMVs stream the same matrix converted (DRM_LNPU_CAP_Q6_K_PREFERRED):
// the x86 loops. Both read tinyllama's output projection at the memory's
// speed on the Intel VM, in 1.75 ms against 2.23-2.79 ms as Q8_0 panels
// (docs/kernels.md); on the Zen 4 VM the AVX-512 one computes 46-53 GB/s
// on 2 threads from cache, more than that VM's memory reads
// (docs/performance.md, "Q6_K loop on Zen 4"). The NEON loops, not
// measured on a board, and the portable one are not preferred.
bool Q6_KGemvPreferred();

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_QUANT_MATMUL_Q6_K_H_
