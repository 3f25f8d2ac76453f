// MATMUL: dense and block-quantized matrix multiplication on the software
// NPU (Highway GEMV / GEMM for F32 / F16 weights; Q8_0 / Q4_0 weights go
// through the quantized paths of quant_matmul.h). Preconditions and
// thread-safety: kernel_types.h.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_MATMUL_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_MATMUL_H_

#include <cstddef>

#include "absl/types/span.h"

#include "kernel_iface/softnpu/compute/kernel_types.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {

// dst[r][c] = sum_i src[r][i] * weight[c][i] (+ bias[c]) (+ old dst[r][c])
// with f32 accumulation. weight is n x k of weight_type (F16 as IEEE binary16
// bits; Q8_0 / Q4_0 rows of k / 32 blocks, k a multiple of 32; the panel
// types those rows in panels of 16, kernel_types.h). src and dst must not
// overlap.
//
// Precision: F32 / F16 weights multiply the f32 activations directly. With
// quantized weights every src row is first quantized to int8 per block of
// 32 (d = max|x| / 127, like llama.cpp's q8_0 activations) and each block's
// dot product is exact in integers; the result differs from the f32
// activations' one, sum over blocks b of d_b * sum_i x_bi * w_bi, by at most
// sum_b (d_b / 2) * sum_i |w_bi| plus f32 rounding (kernels.md). A NaN or
// infinite activation makes its row's outputs NaN, as in f32.
struct MatmulArgs {
  const float* src = nullptr;
  const void* weight = nullptr;
  WeightType weight_type = WeightType::kF32;
  const float* bias = nullptr;  // nullptr: no bias
  bool accumulate = false;
  float* dst = nullptr;
  size_t rows = 0;
  size_t k = 0;
  size_t n = 0;
};
// rows <= 4 take the bandwidth-bound GEMV path (parallel over columns;
// with quantized weights each weight block is read once for all rows, and
// each row's result equals a rows == 1 call's bit for bit: a batched decode
// step gives what each sequence alone gives); more rows the cache-blocked
// GEMM path (parallel over row x column tiles).
void Matmul(const MatmulArgs& args, WorkerPool& pool, KernelScratch* scratch);

// True if Matmul(args) takes the quantized GEMV path: Q8_0 / Q4_0 /
// panel weights and few rows (decode, batched decode), or Q6_K weights and
// any rows (quant_matmul_q6_k.h).
bool RunsOnQuantGemv(const MatmulArgs& args);

// Several matmuls that read the same activations, as one parallel loop:
// the Q, K and V projections of a decode step, or its gate and up ones.
// src is quantized once and the column chunks of all the matrices are
// handed out together, so the workers join once for the group instead of
// once per matrix, and the small matrices (K, V of grouped-query
// attention) no longer each pay a join and a cold start. Every dst ends
// exactly as after Matmul(group[0]), Matmul(group[1]), ... in turn.
//
// Requires: every member has group[0]'s src, rows and k; no member's dst
// overlaps another member's operands (the src, weight, bias or dst of any
// member: the results must not depend on the order). If a member does not
// RunsOnQuantGemv (the active path changed since the group was formed),
// the members run as Matmul calls in turn.
void MatmulGroup(absl::Span<const MatmulArgs> group, WorkerPool& pool, KernelScratch* scratch);

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_MATMUL_H_
