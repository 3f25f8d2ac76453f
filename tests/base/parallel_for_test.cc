#include "base/parallel_for.h"

#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace lnpu {
namespace {

TEST(ParallelForTest, CallsEveryIndexOnceAndNeverOverlapsAWorker) {
  constexpr size_t kCount = 2000;
  constexpr size_t kThreads = 4;
  const size_t workers = ParallelForWorkers(kCount, kThreads);
  ASSERT_EQ(workers, kThreads);
  std::vector<std::atomic<int>> calls(kCount);
  std::vector<std::atomic<int>> busy(workers);
  std::vector<size_t> last_index(workers, 0);
  std::atomic<bool> overlapped{false}, out_of_order{false};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> worker0_elsewhere{false};
  ParallelFor(kCount, kThreads, [&](size_t i, size_t worker) {
    ASSERT_LT(worker, workers);
    if (busy[worker].fetch_add(1) != 0) overlapped = true;
    // Each worker's indices increase (per-worker scratch is reused in
    // file order).
    if (last_index[worker] > i) out_of_order = true;
    last_index[worker] = i;
    if (worker == 0 && std::this_thread::get_id() != caller) worker0_elsewhere = true;
    calls[i].fetch_add(1);
    busy[worker].fetch_sub(1);
  });
  for (size_t i = 0; i < kCount; ++i) EXPECT_EQ(calls[i].load(), 1) << i;
  EXPECT_FALSE(overlapped);
  EXPECT_FALSE(out_of_order);
  EXPECT_FALSE(worker0_elsewhere);
}

TEST(ParallelForTest, OneWorkerRunsInOrderOnTheCallingThread) {
  for (const size_t threads : {size_t{0}, size_t{1}}) {
    std::vector<size_t> order;
    const std::thread::id caller = std::this_thread::get_id();
    ParallelFor(5, threads, [&](size_t i, size_t worker) {
      EXPECT_EQ(worker, 0u);
      EXPECT_EQ(std::this_thread::get_id(), caller);
      order.push_back(i);
    });
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  }
}

TEST(ParallelForTest, WorkersAreBoundedByTheCount) {
  EXPECT_EQ(ParallelForWorkers(0, 8), 1u);
  EXPECT_EQ(ParallelForWorkers(3, 8), 3u);
  EXPECT_EQ(ParallelForWorkers(100, 8), 8u);
  EXPECT_EQ(ParallelForWorkers(100, 0), 1u);
  int calls = 0;
  ParallelFor(0, 8, [&](size_t, size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelForTest, AvailableCpusFollowsTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(AvailableCpus(), static_cast<size_t>(CPU_COUNT(&saved)));
  EXPECT_GE(BulkPassThreads(), 1u);
  EXPECT_LE(BulkPassThreads(), 8u);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(AvailableCpus(), 1u);
  EXPECT_EQ(BulkPassThreads(), 1u);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

}  // namespace
}  // namespace lnpu
