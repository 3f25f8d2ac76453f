// ATTENTION: grouped-query attention over the KV cache on the software NPU
// (F32 or F16 cache; the int8 cache is dequantized by the command set
// first). Preconditions and thread-safety: kernel_types.h.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_ATTENTION_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_ATTENTION_H_

#include <cstddef>
#include <cstdint>

#include "kernel_iface/softnpu/compute/kernel_types.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {

// Grouped-query attention of `rows` new tokens over the visible cache slots
// and the causal prefix of the new rows, with an online softmax. The mask is
// scanned once, skipping all-zero runs a machine word at a time, so the cost
// follows the number of visible slots rather than the capacity. The query
// heads of one GQA group are processed together: each cached K/V row is read
// (and, for F16, converted) once per group rather than once per head.
// With an F16 cache the new rows are read rounded to f16 (nearest even),
// exactly as if SCATTER_ROWS had stored them in the cache first. With a
// window each row gets its own list of visible slots and new rows.
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
  // > 0: every score s = scale * q.k becomes softcap * tanh(s / softcap).
  float softcap = 0;
  // Sliding window (window > 0): row r sees slot s only if also
  // positions[r] - slot_positions[s] < window, and new row j only if also
  // positions[r] - positions[j] < window (64-bit differences).
  const int32_t* positions = nullptr;       // [rows]
  const int32_t* slot_positions = nullptr;  // [capacity]
  size_t window = 0;
};
void Attention(const AttentionArgs& args, WorkerPool& pool,
               KernelScratch* scratch);

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_ATTENTION_H_
