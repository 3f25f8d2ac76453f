// A persistent pool of worker threads that runs the tasks of one parallel
// loop at a time, with the calling thread taking part.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_WORKER_POOL_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_WORKER_POOL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace lnpu::softnpu::compute {

// `threads - 1` threads ("lnpu-worker-N") are started by the constructor
// and live until the destructor; the thread that calls ParallelFor is the
// remaining one, so a loop never runs on more than `threads` threads and
// no thread is created per loop. Between loops a worker, and the caller waiting for the workers,
// spin for up to kSpin before sleeping on a condition variable: a decode
// step runs hundreds of short loops back to back, and a futex wake-up per
// loop (tens of microseconds in a VM) would cost more than many of the
// loops themselves.
//
// Starting, joining, closing and leaving a loop are atomic operations on
// lock-free words; the mutex is taken only to sleep or to wake a sleeper.
// (A mutex taken by both threads on every loop made them collide: 80% of
// the 32,849 futex calls of one qwen2.5-0.5b npu-bench run were on it,
// docs/performance.md "Pool without a mutex".)
//
// Workers join a loop only while it is open: once the caller has run out
// of tasks it closes the loop and waits for the workers that joined (and
// so hold claimed tasks), not for the others. A worker that is asleep or
// not scheduled (the CPU is shared with other processes, and a woken
// thread may wait a scheduler tick for a core) therefore never delays a
// loop: the caller runs the tasks itself.
//
// Thread-safety: ParallelFor must not be called concurrently or re-entered
// from inside a task (one owner thread drives the pool).
class WorkerPool {
 public:
  // Body of a parallel loop: runs task `task` on worker `worker`, where
  // worker is in [0, threads()) and unique among concurrently running
  // tasks (use it to index per-worker scratch memory).
  using TaskFn = absl::FunctionRef<void(size_t task, int worker)>;

  // `threads` < 1 is treated as 1.
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // How long an idle worker (or the caller waiting for workers) keeps
  // polling before it blocks.
  static constexpr std::chrono::microseconds kSpin{20};

  // Whether every worker sleeps (or is about to) between loops, having
  // been idle for kSpin: a hint for a caller deciding whether a small loop
  // is worth waking one (kernel_scheduling.h). It may change at any moment.
  bool WorkersAsleep() const {
    return sleeping_workers_.load(std::memory_order_relaxed) == static_cast<int>(workers_.size());
  }

  // Runs fn(task, worker) for every task in [0, tasks) and returns when all
  // have finished. Tasks are handed out dynamically, lowest index first.
  // With one task or one thread everything runs on the caller.
  void ParallelFor(size_t tasks, TaskFn fn);

 private:
  void WorkerLoop(int worker);
  // Claims and runs tasks of the current loop until none are left.
  void RunTasks(int worker, TaskFn fn);

  // join_state_: kLoopClosed, or'ed with the number of workers inside the
  // current loop (joined and not yet left).
  static constexpr uint32_t kLoopClosed = uint32_t{1} << 31;
  std::atomic<uint32_t> join_state_{kLoopClosed};
  // Incremented per loop, after the loop is open; a worker tries to join
  // when it sees a new value.
  std::atomic<uint64_t> generation_{0};
  // The current loop's body and size: written by the caller before it
  // opens the loop, read by workers after they join it.
  const TaskFn* current_fn_ = nullptr;
  size_t current_tasks_ = 0;
  std::atomic<size_t> next_task_{0};
  std::atomic<bool> stopping_{false};

  // Sleeping and waking only. std::mutex rather than absl::Mutex: Debian's
  // Abseil is not built with ThreadSanitizer, which then cannot see its
  // synchronisation.
  std::mutex mutex_;
  std::condition_variable loop_started_;   // generation_ or stopping_ changed
  std::condition_variable loop_finished_;  // the last worker left a closed loop
  // Workers sleeping (or about to) on loop_started_, and whether the caller
  // sleeps (or is about to) on loop_finished_: the other side takes the
  // mutex and notifies only then.
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::vector<std::thread> workers_;
};

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_WORKER_POOL_H_
