#include "base/parallel_for.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

namespace lnpu {

size_t AvailableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    return static_cast<size_t>(std::max(1, CPU_COUNT(&set)));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

size_t BulkPassThreads() { return std::min<size_t>(AvailableCpus(), 8); }

size_t ParallelForWorkers(size_t count, size_t max_threads) {
  return std::max<size_t>(1, std::min(count, max_threads));
}

void ParallelFor(size_t count, size_t max_threads,
                 absl::FunctionRef<void(size_t index, size_t worker)> fn) {
  std::atomic<size_t> next{0};
  const auto run = [&](size_t worker) {
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < count;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(i, worker);
    }
  };
  const size_t workers = ParallelForWorkers(count, max_threads);
  std::vector<std::thread> helpers;
  helpers.reserve(workers - 1);
  for (size_t worker = 1; worker < workers; ++worker) {
    try {
      helpers.emplace_back(run, worker);
    } catch (const std::system_error&) {
      break;  // no more threads: the ones started and the caller do the rest
    }
  }
  run(0);
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace lnpu
