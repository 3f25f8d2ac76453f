// The private state behind ComputeContext (command_set.h): the engine's
// worker pool and the scratch memory its kernels reuse across commands.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_COMPUTE_CONTEXT_IMPL_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_COMPUTE_CONTEXT_IMPL_H_

#include <vector>

#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/softnpu/compute/kernel_types.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu {

// Not thread-safe, like ComputeContext: one engine thread drives it.
struct ComputeContext::Impl {
  explicit Impl(int threads) : pool(threads) {}

  compute::WorkerPool pool;
  compute::KernelScratch scratch;
  // ATTENTION over an int8 cache: F32 copies of the visible cache rows and
  // the new rows (see ExecuteI8Attention in command_set.cc).
  std::vector<float> i8_kv_scratch;
  std::vector<uint8_t> i8_row_scratch;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_COMPUTE_CONTEXT_IMPL_H_
