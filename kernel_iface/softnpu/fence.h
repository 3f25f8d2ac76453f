// Fence: the completion state of one job (a dma_fence without callbacks).
//
// The engine that runs or cancels the job signals it exactly once; the
// job's file looks it up for WAIT and for the in-fences of later submits.
// Waiting happens on the file context's WaitQueue, which the engine wakes
// after signalling. A fence exported as a file descriptor
// (DRM_LNPU_SUBMIT_OUT_FENCE_FD) holds a descriptor of a semaphore-mode
// eventfd whose other descriptor user space holds; signalling adds the
// largest count an eventfd takes, so that the descriptor stays readable for
// good (a read takes one unit).
//
// Thread-safety: all methods may be called concurrently, except
// SetSignalEventFd, which must happen before the fence reaches an engine.
#ifndef KERNEL_IFACE_SOFTNPU_FENCE_H_
#define KERNEL_IFACE_SOFTNPU_FENCE_H_

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <utility>

namespace lnpu::softnpu {

class Fence {
 public:
  Fence() = default;
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;
  ~Fence() {
    if (event_fd_ >= 0) close(event_fd_);
  }

  // Takes a descriptor of an eventfd (EFD_SEMAPHORE | EFD_NONBLOCK) to
  // make readable, then close, when the fence signals.
  void SetSignalEventFd(int event_fd) { event_fd_ = event_fd; }

  bool signalled() const {
    return state_.load(std::memory_order_acquire) != kPending;
  }

  // 0 when the job completed, else its negative errno (-EIO, -ECANCELED).
  // Requires signalled().
  int error() const { return state_.load(std::memory_order_acquire); }

  // `error` is 0 or a negative errno. Must be called at most once.
  void Signal(int error) {
    state_.store(error, std::memory_order_seq_cst);
    if (event_fd_ >= 0) {
      // The eventfd counter's maximum; the counter starts at 0, so the
      // write cannot block or fail.
      const uint64_t units = UINT64_MAX - 1;
      [[maybe_unused]] const ssize_t written = write(event_fd_, &units, sizeof(units));
      close(std::exchange(event_fd_, -1));
    }
  }

 private:
  // Errors are <= 0, so any positive value can mark "not yet signalled".
  static constexpr int kPending = 1;
  std::atomic<int> state_{kPending};
  int event_fd_ = -1;  // set before the engine has the fence
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_FENCE_H_
