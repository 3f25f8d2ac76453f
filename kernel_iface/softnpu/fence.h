// Fence: the completion state of one job (a dma_fence without callbacks).
//
// The engine that runs or cancels the job signals it exactly once; the
// job's file looks it up for WAIT and for the in-fences of later submits.
// Waiting happens on the file context's WaitQueue, which the engine wakes
// after signalling.
//
// Thread-safety: all methods may be called concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_FENCE_H_
#define KERNEL_IFACE_SOFTNPU_FENCE_H_

#include <atomic>

namespace lnpu::softnpu {

class Fence {
 public:
  Fence() = default;
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;

  bool signalled() const {
    return state_.load(std::memory_order_acquire) != kPending;
  }

  // 0 when the job completed, else its negative errno (-EIO, -ECANCELED).
  // Requires signalled().
  int error() const { return state_.load(std::memory_order_acquire); }

  // `error` is 0 or a negative errno. Must be called at most once.
  void Signal(int error) { state_.store(error, std::memory_order_seq_cst); }

 private:
  // Errors are <= 0, so any positive value can mark "not yet signalled".
  static constexpr int kPending = 1;
  std::atomic<int> state_{kPending};
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_FENCE_H_
