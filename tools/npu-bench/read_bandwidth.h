// The machine's memory read bandwidth: several threads each read their own
// contiguous share of a buffer much larger than the last-level cache, in
// each of the read patterns below (1, 2, 4 or 8 far-apart streams in turn,
// as the GEMVs' column order reads, with and without software prefetches);
// the fastest run of any pattern counts, so the figure is the most this
// machine's memory gave a plain read, the limit decode is held against.
//
// Thread-safety: MeasureReadBandwidth may be called from any thread; it
// starts and joins its own threads and shares nothing with other calls.
#ifndef TOOLS_NPU_BENCH_READ_BANDWIDTH_H_
#define TOOLS_NPU_BENCH_READ_BANDWIDTH_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"

namespace lnpu::bench {

// How each reader thread walks its share: `streams` far-apart parts read in
// turn, 256 bytes of each per turn, each line prefetched 2 KiB ahead if
// `prefetch`.
struct ReadPattern {
  int streams = 0;
  bool prefetch = false;
};

// The patterns MeasureReadBandwidth tries. Which reads fastest depends on
// the CPU and on the minute: on the AMD EPYC Zen 5 VM one or two plain
// streams read 10-15% faster than any prefetched pattern in some minutes,
// four prefetched streams were the fastest in others (docs/performance.md,
// "A probe that reads like STREAM").
inline constexpr std::array<ReadPattern, 6> kReadPatterns = {
    {{1, false}, {2, false}, {4, false}, {8, false}, {4, true}, {8, true}}};

struct ReadBandwidthOptions {
  // Bytes streamed per run: >= 1 MiB, a multiple of 4096, at most 64 GiB.
  // Should be several times the last-level cache (DefaultBufferBytes()).
  uint64_t buffer_bytes = uint64_t{1} << 30;
  // Reader threads, 1..1024: the device's compute units, so the figure is
  // what the compute engine can pull.
  int threads = 1;
  // Runs per pattern; the fastest of all (least disturbed by
  // other processes). 1..100.
  int runs = 5;
};

struct ReadBandwidth {
  double bytes_per_second = 0;  // best run
  uint64_t buffer_bytes = 0;
  int threads = 0;
  ReadPattern pattern;  // of the best run
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

// XOR of the 64-bit words of [begin, begin + bytes) read in `pattern`, on
// the widest vectors this CPU runs; bytes is a multiple of 4096, begin
// 4096-aligned, streams >= 1. (The reading loop of MeasureReadBandwidth.)
uint64_t XorWords(const uint8_t* begin, uint64_t bytes, ReadPattern pattern);

// Allocates and writes the buffer (so every page is backed by memory, not
// the shared zero page), then streams it `runs` times in each of
// kReadPatterns. InvalidArgument for options outside their ranges;
// ResourceExhausted when the buffer cannot be allocated.
absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(const ReadBandwidthOptions& options);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_READ_BANDWIDTH_H_
