// How the kernels split their work across the WorkerPool: whether a loop is
// worth waking the workers, chunking of a range into parallel tasks, and
// per-worker scratch. Used only by the kernel sources (matmul.cc,
// elementwise.cc, rope.cc, attention.cc). The calling thread is the pool's
// driver; the functions add no synchronisation of their own.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_KERNEL_SCHEDULING_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_KERNEL_SCHEDULING_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {

// Below this many multiply-adds (or elements) a loop runs on the calling
// thread: waking the workers would cost more than it saves.
inline constexpr uint64_t kMinParallelWork = uint64_t{1} << 15;

inline size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

// Below this many multiply-adds (or elements) a loop does not wake workers
// that sleep (idle for WorkerPool::kSpin since their last loop): on the
// Zen 4 VM the wake-up cost a stories260K decode step 13-14 us in its one
// parallel loop (the 512 x 64 output projection, 1-2 us of work; 28-30 us
// while a build ran), about half what a loop of this size takes on one
// thread.
inline constexpr uint64_t kMinWakingWork = uint64_t{1} << 20;

// Whether a loop of `work` runs on the calling thread alone (RunTasks):
// one thread, too little work, or too little to wake the workers.
inline bool RunsOnCallerAlone(const WorkerPool& pool, uint64_t work) {
  return work < kMinParallelWork || pool.threads() == 1 ||
         (work < kMinWakingWork && pool.WorkersAsleep());
}

// Runs fn over `tasks` tasks on the calling thread if `caller_alone`, else
// on the pool.
inline void RunTasksOn(WorkerPool& pool, bool caller_alone, size_t tasks, WorkerPool::TaskFn fn) {
  if (caller_alone) {
    for (size_t task = 0; task < tasks; ++task) fn(task, 0);
  } else {
    pool.ParallelFor(tasks, fn);
  }
}

// Runs fn over `tasks` tasks, on the pool if `work` justifies it.
inline void RunTasks(WorkerPool& pool, size_t tasks, uint64_t work, WorkerPool::TaskFn fn) {
  RunTasksOn(pool, RunsOnCallerAlone(pool, work), tasks, fn);
}

// Splits [0, count) into chunks of at least `min_chunk` elements, about
// `per_thread` chunks per thread for load balance; chunk sizes are
// multiples of `granule`.
inline size_t ChunkSize(size_t count, const WorkerPool& pool,
                        size_t per_thread, size_t min_chunk, size_t granule) {
  const size_t target = CeilDiv(count, pool.threads() * per_thread);
  const size_t chunk = std::max(target, min_chunk);
  return CeilDiv(chunk, granule) * granule;
}

// Runs range_fn(begin, end) over [0, count) in parallel chunks.
template <class RangeFn>
void ParallelRanges(WorkerPool& pool, size_t count, uint64_t work,
                    size_t min_chunk, size_t granule, const RangeFn& range_fn) {
  const size_t chunk = ChunkSize(count, pool, 4, min_chunk, granule);
  RunTasks(pool, CeilDiv(count, chunk), work, [&](size_t task, int) {
    const size_t begin = task * chunk;
    range_fn(begin, std::min(count, begin + chunk));
  });
}

// Per-worker float scratch of `floats` each, padded to whole cache lines so
// that workers do not share one.
inline float* WorkerScratch(std::vector<float>& scratch, size_t floats,
                            int threads, size_t* stride) {
  *stride = CeilDiv(floats, 16) * 16;
  const size_t needed = *stride * static_cast<size_t>(threads);
  if (scratch.size() < needed) scratch.resize(needed);
  return scratch.data();
}

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_KERNEL_SCHEDULING_H_
