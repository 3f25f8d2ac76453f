// WaitQueue: where threads of the software NPU sleep until a condition over
// shared state holds (the kernel's wait_queue_head_t).
//
// Protocol: a waker first publishes its state change (with any memory order
// or under any lock), then calls WakeAll(). A waiter calls WaitUntil() with a
// predicate over that state. Waiters first spin for a short, caller-chosen
// time, so a condition that becomes true within the window costs neither
// side a context switch (the submit -> run -> signal -> wait round trip of a
// decode step), and only then block on a condition variable. The spin keeps
// the core (no yield: on a CPU shared with busy processes a yield can give
// the core away for a whole time slice).
//
// Thread-safety: all methods may be called concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_WAIT_QUEUE_H_
#define KERNEL_IFACE_SOFTNPU_WAIT_QUEUE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "base/cpu_relax.h"

namespace lnpu::softnpu {

// The clock of every deadline in the software NPU. libstdc++'s steady_clock
// reads CLOCK_MONOTONIC, the clock of drm_lnpu_wait.timeout_ns.
using MonotonicClock = std::chrono::steady_clock;

class WaitQueue {
 public:
  // The pause between two polls of WaitUntil's spin (a few hundred
  // cycles; the waiter keeps its core), also for callers that poll on their
  // own.
  static void RelaxBetweenPolls() {
    for (int i = 0; i < 32; ++i) CpuRelax();
  }

  WaitQueue() = default;
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;

  // Returns true as soon as ready() returns true, or false once `deadline`
  // passed with ready() still false. ready() is called repeatedly, from the
  // calling thread only, sometimes while this queue's internal mutex is held
  // (so it must not call WakeAll() on the same queue); it may take other
  // locks. It may claim what it found (pop a job): once it returned true it
  // is not called again.
  template <typename Ready>
  bool WaitUntil(Ready&& ready, MonotonicClock::duration spin,
                 MonotonicClock::time_point deadline) {
    const MonotonicClock::time_point spin_end =
        std::min(MonotonicClock::now() + spin, deadline);
    for (;;) {
      if (ready()) return true;
      if (MonotonicClock::now() >= spin_end) break;
      RelaxBetweenPolls();
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    // Pairs with the fence in WakeAll(): either the waker sees this sleeper
    // or ready() below sees the waker's state change.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool result;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        result = ready();
        if (result) break;
        if (deadline == MonotonicClock::time_point::max()) {
          cv_.wait(lock);
        } else if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
          result = ready();
          break;
        }
      }
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return result;
  }

  // Makes every blocked waiter re-evaluate its condition. Takes no lock when
  // nobody is blocked.
  void WakeAll() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    // Taking the mutex orders this wake-up after a waiter that is between
    // its ready() check and cv_.wait(), so the notification cannot be lost.
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint32_t> sleepers_{0};
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_WAIT_QUEUE_H_
