// ROPE: rotary position embedding on the software NPU. Preconditions and
// thread-safety: kernel_types.h.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_ROPE_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_ROPE_H_

#include <cstddef>
#include <cstdint>

#include "kernel_iface/softnpu/compute/kernel_types.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {

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

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_ROPE_H_
