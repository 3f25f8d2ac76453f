// Doorbell: where an engine's worker thread sleeps while it has no job to
// start. It is rung at once (Ring) or at a deadline (RingAt); the deadline
// can be moved or cancelled without waking the sleeper, so scheduling a
// start that a waiter will most likely make itself costs a timer update
// (one system call) rather than a thread wake-up. An eventfd and a
// CLOCK_MONOTONIC timerfd, polled together.
//
// Thread-safety: Ring, RingAt and Cancel may be called from any thread;
// RingAt and Cancel race with each other (the last one wins), so callers
// serialise them (Engine does, under its queue mutex). One thread calls
// Wait.
#ifndef KERNEL_IFACE_SOFTNPU_DOORBELL_H_
#define KERNEL_IFACE_SOFTNPU_DOORBELL_H_

#include "absl/status/statusor.h"
#include "kernel_iface/softnpu/wait_queue.h"

namespace lnpu::softnpu {

class Doorbell {
 public:
  // The descriptors are created here; ResourceExhausted names the system's
  // reason when the process has none left.
  static absl::StatusOr<Doorbell> Create();

  Doorbell(Doorbell&& other) noexcept;
  Doorbell& operator=(Doorbell&&) = delete;
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;
  ~Doorbell();

  // Wakes the sleeper now (or makes its next Wait return at once).
  void Ring();
  // Rings at `when` (at once if it has passed), replacing an earlier
  // RingAt.
  void RingAt(MonotonicClock::time_point when);
  // Withdraws RingAt's deadline; a Ring stays.
  void Cancel();
  // Blocks until rung, then clears the bell. Spurious returns are possible:
  // the caller re-checks its state.
  void Wait();

 private:
  Doorbell(int ring_fd, int timer_fd) : ring_fd_(ring_fd), timer_fd_(timer_fd) {}

  int ring_fd_;   // eventfd
  int timer_fd_;  // timerfd
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_DOORBELL_H_
