// The software NPU's compute kernels: SIMD implementations (Highway, with
// run-time dispatch to the best target the CPU supports) of the math behind
// each compute command.
//
// Preconditions common to every kernel: arguments describe a command that
// ValidateCommand accepted (counts > 0, operands inside host memory, no
// overlap other than the in-place aliasing each kernel allows) and
// data-dependent checks (indices, positions) have already passed.
// Thread-safety: a kernel uses the given pool and scratch exclusively; one
// kernel runs at a time per pool.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {

// Memory a kernel reuses across calls instead of allocating per command;
// kernels resize the vectors as needed.
struct KernelScratch {
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<uint32_t> u32;
};

// Element type of matmul weights and gather tables.
enum class WeightType { kF32, kF16 };

// dst[r][c] = sum_i src[r][i] * weight[c][i] (+ bias[c]) (+ old dst[r][c])
// with f32 accumulation. weight is n x k of weight_type (F16 as IEEE binary16
// bits). src and dst must not overlap.
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
// rows == 1 takes the bandwidth-bound GEMV path (parallel over columns);
// rows > 1 the cache-blocked GEMM path (parallel over row x column tiles).
void Matmul(const MatmulArgs& args, WorkerPool& pool);

// dst[r] = src[r] / sqrt(mean(src[r]^2) + eps) * weight; dst may equal src.
void RmsNorm(const float* src, const float* weight, float* dst, size_t rows,
             size_t dim, float eps, WorkerPool& pool);

// Rotary embedding of the first rope_dim dims of every head; the remaining
// dims are copied. dst may equal src. positions must all be >= 0.
struct RopeArgs {
  const float* src = nullptr;
  float* dst = nullptr;
  const int32_t* positions = nullptr;
  size_t rows = 0;
  size_t heads = 0;
  size_t head_dim = 0;
  size_t rope_dim = 0;  // even, <= head_dim
  float theta_base = 0;
  float freq_scale = 0;
  bool neox = false;  // pairs (i, i + rope_dim/2) instead of (2i, 2i+1)
};
void Rope(const RopeArgs& args, WorkerPool& pool, KernelScratch* scratch);

// Grouped-query attention of `rows` new tokens over the visible cache slots
// and the causal prefix of the new rows, with an online softmax. The mask is
// scanned once, skipping all-zero runs a machine word at a time, so the cost
// follows the number of visible slots rather than the capacity.
struct AttentionArgs {
  const float* q = nullptr;        // [rows][heads][head_dim]
  const float* k_new = nullptr;    // [rows][kv_heads][head_dim]
  const float* v_new = nullptr;    // [rows][kv_heads][head_dim]
  const float* k_cache = nullptr;  // [capacity][kv_heads][head_dim]
  const float* v_cache = nullptr;  // [capacity][kv_heads][head_dim]
  const uint8_t* mask = nullptr;   // [capacity], non-zero = slot visible
  float* dst = nullptr;  // [rows][heads][head_dim], overlaps no input
  size_t rows = 0;
  size_t capacity = 0;
  size_t heads = 0;     // multiple of kv_heads
  size_t kv_heads = 0;
  size_t head_dim = 0;
  float scale = 0;
};
void Attention(const AttentionArgs& args, WorkerPool& pool,
               KernelScratch* scratch);

// dst[i] = silu(gate[i]) * up[i]; dst may equal gate or up.
void Swiglu(const float* gate, const float* up, float* dst, size_t count,
            WorkerPool& pool);

// dst[i] = a[i] + b[i]; dst may equal a or b.
void Add(const float* a, const float* b, float* dst, size_t count,
         WorkerPool& pool);

// dst[i] = f32(src[i]) for `count` IEEE binary16 values; no overlap.
void ConvertF16ToF32(const uint16_t* src, float* dst, size_t count);

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_H_
