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
  std::vector<uint16_t> u16;
  // Matmul with block-quantized weights: src quantized to int8 per block of
  // 32 and the blocks' scales (QuantizedActivations in quant_matmul.h).
  std::vector<int8_t> quantized_src;
  std::vector<float> quantized_src_scales;
};

// Element type of matmul weights, gather tables and (F32/F16 only) the
// attention KV cache. Q8_0 / Q4_0 are the LNPU_DTYPE_Q8_0 / LNPU_DTYPE_Q4_0
// block formats (rows of whole 32-element blocks: f16 scale + 32 int8, or
// f16 scale + 16 bytes of nibbles).
enum class WeightType { kF32, kF16, kQ8_0, kQ4_0 };

// Bytes of `elements` weights of `type` (a multiple of 32 for Q8_0 / Q4_0).
size_t WeightBytes(WeightType type, size_t elements);

// dst[r][c] = sum_i src[r][i] * weight[c][i] (+ bias[c]) (+ old dst[r][c])
// with f32 accumulation. weight is n x k of weight_type (F16 as IEEE binary16
// bits; Q8_0 / Q4_0 rows of k / 32 blocks, k a multiple of 32). src and dst
// must not overlap.
//
// Precision: F32 / F16 weights multiply the f32 activations directly. With
// Q8_0 / Q4_0 weights every src row is first quantized to int8 per block of
// 32 (d = max|x| / 127, like llama.cpp's q8_0 activations) and each block's
// dot product is exact in integers; the result differs from the f32
// activations' one, sum over blocks b of d_b * sum_i x_bi * w_bi, by at most
// sum_b (d_b / 2) * sum_i |w_bi| plus f32 rounding (kernels.md).
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
void Matmul(const MatmulArgs& args, WorkerPool& pool, KernelScratch* scratch);

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
  // nullptr, or rope_dim / 2 finite positive factors: theta_i is divided by
  // freq_factors[i] (Llama 3 frequency scaling).
  const float* freq_factors = nullptr;
};
void Rope(const RopeArgs& args, WorkerPool& pool, KernelScratch* scratch);

// Grouped-query attention of `rows` new tokens over the visible cache slots
// and the causal prefix of the new rows, with an online softmax. The mask is
// scanned once, skipping all-zero runs a machine word at a time, so the cost
// follows the number of visible slots rather than the capacity. The query
// heads of one GQA group are processed together: each cached K/V row is read
// (and, for F16, converted) once per group rather than once per head.
// With an F16 cache the new rows are read rounded to f16 (nearest even),
// exactly as if SCATTER_ROWS had stored them in the cache first.
struct AttentionArgs {
  const float* q = nullptr;       // [rows][heads][head_dim]
  const float* k_new = nullptr;   // [rows][kv_heads][head_dim]
  const float* v_new = nullptr;   // [rows][kv_heads][head_dim]
  const void* k_cache = nullptr;  // kv_type[capacity][kv_heads][head_dim]
  const void* v_cache = nullptr;  // kv_type[capacity][kv_heads][head_dim]
  WeightType kv_type = WeightType::kF32;  // kF32 or kF16
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

// dst[i] = f32(src[i]) for `count` weights of `type` (for Q8_0 / Q4_0 a
// whole number of blocks starting at a block boundary); no overlap.
void ConvertToF32(WeightType type, const void* src, float* dst, size_t count);

// dst[i] = binary16(src[i]) rounded to nearest even, for `count` values; no
// overlap.
void ConvertF32ToF16(const float* src, uint16_t* dst, size_t count);

// LNPU_DTYPE_I8 groups, the int8 KV cache: each of `groups` groups of
// `group_len` values is stored as an f32 scale d = max|x| / 127 followed by
// group_len int8 q = round_to_nearest_even(x / d), clamped to [-127, 127]
// (all 0 when d = 0); x ~ d * q. dst holds groups * I8GroupBytes(group_len)
// bytes, src and dst do not overlap. Scalar and exact: one row per layer and
// token goes through it.
constexpr size_t I8GroupBytes(size_t group_len) {
  return sizeof(float) + group_len;
}
void QuantizeToI8Groups(const float* src, uint8_t* dst, size_t groups,
                        size_t group_len);
// dst[g * group_len + i] = d_g * q_gi, the inverse of QuantizeToI8Groups up
// to its rounding; no overlap.
void DequantizeI8Groups(const uint8_t* src, float* dst, size_t groups,
                        size_t group_len);

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_H_
