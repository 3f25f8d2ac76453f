// ParallelFor: host-side work split over the CPUs this process may use, for
// the one-off bulk passes of loading a model (checksumming, reading and
// repacking hundreds of MB of weights), which would otherwise run on one
// core while the others idle. Not for per-step work: each call starts and
// joins its threads.
//
// Thread-safety: ParallelFor may be called from any thread, concurrently;
// `fn` runs concurrently with itself on distinct indices.
#ifndef LNPU_BASE_PARALLEL_FOR_H_
#define LNPU_BASE_PARALLEL_FOR_H_

#include <cstddef>

#include "absl/functional/function_ref.h"

namespace lnpu {

// The CPUs this process may run on (its affinity mask), at least 1.
size_t AvailableCpus();

// Threads for a bulk pass over memory: AvailableCpus(), at most 8 (such a
// pass is bound by memory bandwidth, which a few cores saturate).
size_t BulkPassThreads();

// How many workers ParallelFor(count, max_threads, ...) runs at most:
// min(count, max(max_threads, 1)), and 1 for count 0. A caller sizes
// per-worker scratch by it.
size_t ParallelForWorkers(size_t count, size_t max_threads);

// Calls fn(i, worker) once for every i in [0, count): worker 0 is the
// calling thread, workers 1 .. ParallelForWorkers(count, max_threads) - 1
// are threads it starts and joins before returning. Each worker takes the
// next index in increasing order, so one worker's calls never overlap and
// per-worker scratch needs no lock. With one worker, or when no thread can
// be started, everything runs on the calling thread in order. `fn` must
// not throw.
void ParallelFor(size_t count, size_t max_threads,
                 absl::FunctionRef<void(size_t index, size_t worker)> fn);

}  // namespace lnpu

#endif  // LNPU_BASE_PARALLEL_FOR_H_
