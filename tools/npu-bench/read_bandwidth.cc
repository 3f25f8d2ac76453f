// Highway re-includes this file once per enabled SIMD target (see
// foreach_target.h): the reading loop is compiled for each, and the widest
// the CPU runs is chosen at run time (with the baseline target's 16-byte
// vectors one plain stream per thread read 13-17% slower on the AMD EPYC
// Zen 5 VM, docs/performance.md "A probe that reads like STREAM").
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tools/npu-bench/read_bandwidth.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <latch>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/huge_page_memory.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "tools/npu-bench/read_bandwidth.h"

// Defined once, for every target's loop and for the code after HWY_ONCE.
#ifndef TOOLS_NPU_BENCH_READ_BANDWIDTH_CC_ONCE_
#define TOOLS_NPU_BENCH_READ_BANDWIDTH_CC_ONCE_
namespace lnpu::bench {
namespace {
constexpr uint64_t kPage = 4096;
}  // namespace
}  // namespace lnpu::bench
#endif

HWY_BEFORE_NAMESPACE();
namespace lnpu::bench {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// Bytes read per stream before the next stream's turn (at least 4
// vectors), and how far ahead of its reads a prefetching stream prefetches
// (every cache line of the chunk: one prefetch per chunk measured 35-40%
// less).
constexpr uint64_t kStreamChunk = 256;
constexpr uint64_t kPrefetchDistance = 2048;

// acc[j] ^= the vectors j, j + 4, ... of words [i, end) of p; end - i is a
// whole number of groups of 4 vectors (4 vectors of any target are at most
// 1 KiB, so a page holds whole groups). (Vector arguments, not a lambda's
// captures: scalable vectors cannot be captured.)
template <class D, class V>
void XorVectorQuads(D d, const uint64_t* p, size_t i, size_t end, V& a0, V& a1, V& a2, V& a3) {
  const size_t lanes = hn::Lanes(d);
  for (; i < end; i += 4 * lanes) {
    a0 = hn::Xor(a0, hn::Load(d, p + i));
    a1 = hn::Xor(a1, hn::Load(d, p + i + lanes));
    a2 = hn::Xor(a2, hn::Load(d, p + i + 2 * lanes));
    a3 = hn::Xor(a3, hn::Load(d, p + i + 3 * lanes));
  }
}

}  // namespace

// XOR of every 64-bit word of [begin, begin + bytes), read as
// pattern.streams page-aligned parts in turn, kStreamChunk bytes of each
// part per turn, each chunk's lines prefetched kPrefetchDistance ahead if
// pattern.prefetch; bytes is a multiple of kPage and begin page-aligned.
// Four independent accumulators keep several loads in flight.
uint64_t XorWordsOf(const uint8_t* begin, uint64_t bytes, ReadPattern pattern) {
  const hn::ScalableTag<uint64_t> d;
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  const int streams = pattern.streams;
  const uint64_t pages = bytes / kPage;
  const uint64_t common = pages / streams * kPage;  // bytes every part has
  // A power of two, so it divides kPage (4 vectors are at most 1 KiB).
  const size_t chunk_words = std::max<size_t>(kStreamChunk / sizeof(uint64_t), 4 * hn::Lanes(d));
  for (uint64_t offset = 0; offset < common; offset += chunk_words * sizeof(uint64_t)) {
    for (int s = 0; s < streams; ++s) {
      const uint8_t* chunk = begin + pages * s / streams * kPage + offset;
      if (pattern.prefetch) {
        for (size_t line = 0; line < chunk_words * sizeof(uint64_t); line += 64) {
          hwy::Prefetch(chunk + kPrefetchDistance + line);
        }
      }
      XorVectorQuads(d, reinterpret_cast<const uint64_t*>(chunk), 0, chunk_words, a0, a1, a2,
                     a3);
    }
  }
  // The parts' last pages past `common`: whole pages, so whole groups of 4
  // vectors.
  for (int s = 0; s < streams; ++s) {
    const uint64_t first = pages * s / streams, last = pages * (s + 1) / streams;
    const auto* words = reinterpret_cast<const uint64_t*>(begin + first * kPage);
    XorVectorQuads(d, words, common / sizeof(uint64_t), (last - first) * kPage / sizeof(uint64_t),
                   a0, a1, a2, a3);
  }
  const size_t lanes = hn::Lanes(d);
  HWY_ALIGN uint64_t lanes_out[hn::MaxLanes(d)];
  hn::Store(hn::Xor(hn::Xor(a0, a1), hn::Xor(a2, a3)), d, lanes_out);
  uint64_t result = 0;
  for (size_t l = 0; l < lanes; ++l) result ^= lanes_out[l];
  return result;
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lnpu::bench {

HWY_EXPORT(XorWordsOf);

uint64_t XorWords(const uint8_t* begin, uint64_t bytes, ReadPattern pattern) {
  return HWY_DYNAMIC_DISPATCH(XorWordsOf)(begin, bytes, pattern);
}

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kMaxBufferBytes = uint64_t{64} << 30;

// Runs body(thread, begin, bytes) on `threads` threads, each over its own
// page-aligned share of the buffer, all released at once; returns the
// seconds from the release until the last thread finished.
template <class Body>
double RunShares(uint8_t* buffer, uint64_t bytes, int threads, const Body& body) {
  const uint64_t pages = bytes / kPage;
  std::latch ready(threads + 1);
  std::latch go(1);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    const uint64_t first = pages * t / threads;
    const uint64_t last = pages * (t + 1) / threads;
    workers.emplace_back([&, t, first, last] {
      ready.count_down();
      go.wait();
      body(t, buffer + first * kPage, (last - first) * kPage);
    });
  }
  ready.arrive_and_wait();
  const auto start = std::chrono::steady_clock::now();
  go.count_down();
  for (std::thread& worker : workers) worker.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

uint64_t DefaultBufferBytes() {
  const long llc = std::max({sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE), 0L});
  const uint64_t bytes = std::max<uint64_t>(uint64_t{1} << 30, 4 * static_cast<uint64_t>(llc));
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(const ReadBandwidthOptions& options) {
  if (options.buffer_bytes < kMiB || options.buffer_bytes > kMaxBufferBytes ||
      options.buffer_bytes % kPage != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bandwidth buffer of %d bytes: give a multiple of 4096 between 1 MiB and 64 GiB",
        options.buffer_bytes));
  }
  if (options.threads < 1 || options.threads > 1024) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bandwidth reader threads %d: give 1..1024", options.threads));
  }
  if (options.runs < 1 || options.runs > 100) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bandwidth runs %d: give 1..100", options.runs));
  }

  // Huge pages where the kernel grants them keep TLB misses out of the
  // figure, as they are for the device's weight buffers.
  absl::StatusOr<HugePageMemory> buffer = HugePageMemory::Map(options.buffer_bytes);
  if (!buffer.ok()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s for the bandwidth measurement: give a smaller --bandwidth-mib",
        buffer.status().message()));
  }
  // First touch from the reading threads places each share near its reader.
  RunShares(buffer->data(), options.buffer_bytes, options.threads,
            [](int t, uint8_t* begin, uint64_t bytes) {
              std::memset(begin, 0x5a + t, bytes);
            });

  std::vector<uint64_t> sinks(options.threads);
  double best_seconds = 0;
  ReadPattern best_pattern;
  for (int run = 0; run < options.runs; ++run) {
    for (const ReadPattern pattern : kReadPatterns) {
      const double seconds =
          RunShares(buffer->data(), options.buffer_bytes, options.threads,
                    [&sinks, pattern](int t, uint8_t* begin, uint64_t bytes) {
                      sinks[t] ^= XorWords(begin, bytes, pattern);
                    });
      if (best_pattern.streams == 0 || seconds < best_seconds) {
        best_seconds = seconds;
        best_pattern = pattern;
      }
    }
  }
  // The sums must be observable, or the reads could be optimized away.
  volatile uint64_t sink = 0;
  for (uint64_t s : sinks) sink = sink ^ s;

  ReadBandwidth result;
  result.bytes_per_second = static_cast<double>(options.buffer_bytes) / best_seconds;
  result.buffer_bytes = options.buffer_bytes;
  result.threads = options.threads;
  result.pattern = best_pattern;
  result.runs = options.runs;
  return result;
}

}  // namespace lnpu::bench
#endif  // HWY_ONCE
