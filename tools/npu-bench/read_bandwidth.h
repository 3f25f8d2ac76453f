// The machine's memory read bandwidth, measured the way decode reads
// weights: several threads each read their own contiguous share of a
// buffer much larger than the last-level cache, as 1, 4 or 8 far-apart
// streams in turn (the GEMVs' column order); the fastest run counts.
// Optionally also in parallel loops of given sizes: the buffer read as
// consecutive loops, each split over the threads and joined before the
// next starts, as a decode step runs its MATMULs. Some machines read
// loops of a few MiB markedly slower than one long read (ramp-up of the
// prefetchers per stream, the join), which bounds the GEMVs however they
// compute (docs/performance.md, "Loop-sized reads").
//
// Thread-safety: MeasureReadBandwidth may be called from any thread; it
// starts and joins its own threads and shares nothing with other calls.
#ifndef TOOLS_NPU_BENCH_READ_BANDWIDTH_H_
#define TOOLS_NPU_BENCH_READ_BANDWIDTH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lnpu::bench {

struct ReadBandwidthOptions {
  // Bytes streamed per run: >= 1 MiB, a multiple of 4096, at most 64 GiB.
  // Should be several times the last-level cache (DefaultBufferBytes()).
  uint64_t buffer_bytes = uint64_t{1} << 30;
  // Reader threads, 1..1024: the device's compute units, so the figure is
  // what the compute engine can pull.
  int threads = 1;
  // Runs per stream count; the fastest of all counts (least disturbed by
  // other processes). 1..100.
  int runs = 5;
  // Sizes of the parallel loops to measure as well, each a multiple of
  // 4096 of at least threads x 32 KiB and at most buffer_bytes. Empty: none.
  std::vector<uint64_t> loop_bytes;
};

// Reads in parallel loops of one size: the fastest run of all stream
// counts, as for the long read.
struct LoopReadBandwidth {
  uint64_t loop_bytes = 0;
  double bytes_per_second = 0;
  int streams_per_thread = 0;
};

struct ReadBandwidth {
  double bytes_per_second = 0;  // best run
  uint64_t buffer_bytes = 0;
  int threads = 0;
  int streams_per_thread = 0;  // of the best run
  int runs = 0;
  std::vector<LoopReadBandwidth> loops;  // in the order of options.loop_bytes
};

// Loop sizes npu-bench measures by default: of 1, 4 and 16 MiB (a decode
// step's MATMULs read 1-16 MiB each in 0.5B-1.1B models, the output
// projection more) those that `threads` readers can split (>= 32 KiB each)
// and a buffer of `buffer_bytes` holds.
std::vector<uint64_t> DefaultLoopBytes(int threads, uint64_t buffer_bytes);

// max(1 GiB, 4 x the last-level cache size the system reports), rounded up
// to whole MiB.
uint64_t DefaultBufferBytes();

// One line: "read bandwidth in parallel loops (...): 1 MiB X, 4 MiB Y GB/s"
// (no newline); empty when no loops were measured.
std::string FormatLoopReads(const ReadBandwidth& bandwidth);

// Allocates and writes the buffer (so every page is backed by memory, not
// the shared zero page), then streams it `runs` times per stream count, and
// as many times in loops of each size. InvalidArgument for options outside
// their ranges; ResourceExhausted when the buffer cannot be
// allocated.
absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(const ReadBandwidthOptions& options);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_READ_BANDWIDTH_H_
