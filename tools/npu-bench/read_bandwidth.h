// The machine's memory read bandwidth, measured the way decode reads
// weights: several threads each read their own contiguous share of a
// buffer much larger than the last-level cache, as 1, 4 or 8 far-apart
// streams in turn (the GEMVs' column order); the fastest run counts.
//
// Thread-safety: MeasureReadBandwidth may be called from any thread; it
// starts and joins its own threads and shares nothing with other calls.
#ifndef TOOLS_NPU_BENCH_READ_BANDWIDTH_H_
#define TOOLS_NPU_BENCH_READ_BANDWIDTH_H_

#include <cstdint>

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
};

struct ReadBandwidth {
  double bytes_per_second = 0;  // best run
  uint64_t buffer_bytes = 0;
  int threads = 0;
  int streams_per_thread = 0;  // of the best run
  int runs = 0;
};

// Orders measurements by rate, the slower first (for std::max_element and
// std::minmax_element).
inline bool SlowerThan(const ReadBandwidth& a, const ReadBandwidth& b) {
  return a.bytes_per_second < b.bytes_per_second;
}

// max(1 GiB, 4 x the last-level cache size the system reports), rounded up
// to whole MiB.
uint64_t DefaultBufferBytes();

// Allocates and writes the buffer (so every page is backed by memory, not
// the shared zero page), then streams it `runs` times. InvalidArgument for
// options outside their ranges; ResourceExhausted when the buffer cannot be
// allocated.
absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(const ReadBandwidthOptions& options);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_READ_BANDWIDTH_H_
