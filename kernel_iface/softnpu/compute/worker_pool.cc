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
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::ParallelFor(size_t tasks, TaskFn fn) {
  if (tasks == 0) return;
  if (tasks == 1 || workers_.empty()) {
    for (size_t task = 0; task < tasks; ++task) fn(task, 0);
    return;
  }
  {
    absl::MutexLock lock(&mutex_);
    current_fn_ = &fn;
    current_tasks_ = tasks;
    next_task_.store(0, std::memory_order_relaxed);
    busy_workers_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  RunTasks(0, fn);
  absl::MutexLock lock(&mutex_);
  mutex_.Await(absl::Condition(
      +[](int* busy) { return *busy == 0; }, &busy_workers_));
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
      absl::MutexLock lock(&mutex_);
      struct Wake {
        WorkerPool* pool;
        uint64_t seen;
      } wake{this, seen_generation};
      mutex_.Await(absl::Condition(
          +[](Wake* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return w->pool->stopping_ || w->pool->generation_ != w->seen;
          },
          &wake));
      if (stopping_) return;
      seen_generation = generation_;
      fn = current_fn_;
    }
    RunTasks(worker, *fn);
    absl::MutexLock lock(&mutex_);
    --busy_workers_;
  }
}

}  // namespace lnpu::softnpu::compute
