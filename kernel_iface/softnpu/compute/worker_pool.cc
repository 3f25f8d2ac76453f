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
    stopping_ = true;
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    current_fn_ = &fn;
    current_tasks_ = tasks;
    next_task_.store(0, std::memory_order_relaxed);
    loop_closed_ = false;
    generation_.fetch_add(1, std::memory_order_release);
  }
  loop_started_.notify_all();
  RunTasks(0, fn);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    loop_closed_ = true;
  }
  auto finished = [this] { return busy_workers_.load(std::memory_order_acquire) == 0; };
  SpinUntil(finished);
  std::unique_lock<std::mutex> lock(mutex_);
  loop_finished_.wait(lock, finished);
  current_fn_ = nullptr;
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
  for (;;) {
    const TaskFn* fn = nullptr;
    SpinUntil([&] {
      return generation_.load(std::memory_order_acquire) != seen_generation;
    });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      loop_started_.wait(lock, [&] {
        return stopping_ ||
               generation_.load(std::memory_order_relaxed) != seen_generation;
      });
      if (stopping_) return;
      seen_generation = generation_.load(std::memory_order_relaxed);
      if (loop_closed_) continue;  // the caller ran the loop without us
      busy_workers_.fetch_add(1, std::memory_order_relaxed);
      fn = current_fn_;
    }
    RunTasks(worker, *fn);
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1 && loop_closed_) {
      loop_finished_.notify_one();
    }
  }
}

}  // namespace lnpu::softnpu::compute
