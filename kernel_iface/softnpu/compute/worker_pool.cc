#include "kernel_iface/softnpu/compute/worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "base/cpu_relax.h"

namespace lnpu::softnpu::compute {
namespace {

// Polls `done` until it returns true or WorkerPool::kSpin has passed;
// returns its last result.
template <typename Done>
bool SpinUntil(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + WorkerPool::kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

WorkerPool::WorkerPool(int threads) {
  const int worker_threads = std::max(threads, 1) - 1;
  workers_.reserve(worker_threads);
  for (int i = 0; i < worker_threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
  }
  loop_started_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::ParallelFor(size_t tasks, TaskFn fn) {
  if (tasks == 0) return;
  if (tasks == 1 || workers_.empty()) {
    for (size_t task = 0; task < tasks; ++task) fn(task, 0);
    return;
  }
  // No worker is inside a loop here (the previous one ended with none), so
  // these plain writes race with nothing; opening the loop publishes them.
  current_fn_ = &fn;
  current_tasks_ = tasks;
  next_task_.store(0, std::memory_order_relaxed);
  join_state_.store(0, std::memory_order_release);
  // seq_cst with the load of sleeping_workers_ (and the workers' increment
  // of it before they check generation_): either a worker sees the new
  // generation or this thread sees it sleeping and wakes it.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    loop_started_.notify_all();
  }
  RunTasks(0, fn);
  const uint32_t inside =
      join_state_.fetch_or(kLoopClosed, std::memory_order_acq_rel) & ~kLoopClosed;
  if (inside == 0) return;
  // Acquire: the tasks the workers ran happen before the return.
  auto finished = [this] {
    return join_state_.load(std::memory_order_acquire) == kLoopClosed;
  };
  if (SpinUntil(finished)) return;
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    loop_finished_.wait(lock, [&] {
      return join_state_.load(std::memory_order_seq_cst) == kLoopClosed;
    });
  }
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

void WorkerPool::RunTasks(int worker, TaskFn fn) {
  for (;;) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= current_tasks_) return;
    fn(task, worker);
  }
}

void WorkerPool::WorkerLoop(int worker) {
  pthread_setname_np(pthread_self(), ("lnpu-worker-" + std::to_string(worker)).c_str());
  uint64_t seen_generation = 0;
  auto new_loop_or_stop = [&] {
    return stopping_.load(std::memory_order_seq_cst) ||
           generation_.load(std::memory_order_seq_cst) != seen_generation;
  };
  for (;;) {
    if (!SpinUntil(new_loop_or_stop)) {
      sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
      {
        std::unique_lock<std::mutex> lock(mutex_);
        loop_started_.wait(lock, new_loop_or_stop);
      }
      sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stopping_.load(std::memory_order_relaxed)) return;
    // The loop joined below may be a newer one than this generation (the
    // caller may have ended this one and started the next meanwhile); the
    // worker then sees that generation as new and tries again, which is
    // harmless: a loop's tasks are claimed one by one.
    seen_generation = generation_.load(std::memory_order_acquire);
    uint32_t state = join_state_.load(std::memory_order_relaxed);
    bool joined = false;
    while ((state & kLoopClosed) == 0) {
      // Acquire: current_fn_ and current_tasks_ of the loop joined.
      if (join_state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;  // the caller ran the loop without us
    RunTasks(worker, *current_fn_);
    // Release: the tasks run happen before the caller's return. seq_cst
    // with the load of caller_sleeping_ (and the caller's store of it
    // before it checks join_state_): either the caller sees this worker
    // gone or this worker sees it sleeping and wakes it.
    const uint32_t left = join_state_.fetch_sub(1, std::memory_order_seq_cst) - 1;
    if (left == kLoopClosed && caller_sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(mutex_);
      loop_finished_.notify_one();
    }
  }
}

}  // namespace lnpu::softnpu::compute
