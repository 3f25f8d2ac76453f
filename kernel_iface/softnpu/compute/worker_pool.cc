#include "kernel_iface/softnpu/compute/worker_pool.h"

#include <algorithm>

namespace lnpu::softnpu::compute {

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
    busy_workers_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  loop_started_.notify_all();
  RunTasks(0, fn);
  std::unique_lock<std::mutex> lock(mutex_);
  loop_finished_.wait(lock, [this] { return busy_workers_ == 0; });
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
  uint64_t seen_generation = 0;
  for (;;) {
    const TaskFn* fn = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      loop_started_.wait(lock, [&] {
        return stopping_ || generation_ != seen_generation;
      });
      if (stopping_) return;
      seen_generation = generation_;
      fn = current_fn_;
    }
    RunTasks(worker, *fn);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--busy_workers_ == 0) loop_finished_.notify_one();
  }
}

}  // namespace lnpu::softnpu::compute
