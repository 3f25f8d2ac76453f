// How the x86 panel GEMVs (Q8_0 and Q4_0 weights in the *_P16 and *_P16S
// layouts, 1-2 activation rows: decode) walk memory: how many panel
// streams one GEMV call reads together and how far ahead of its loads it
// prefetches. The best walk differs between CPU classes by a third of the
// decode speed (docs/performance.md, "GEMV streams on AMD EPYC (Zen 4)"),
// so it is chosen per CPU, with an environment override for measuring
// and porting. The walk changes no result: each column's sums are the
// same in any order. x86-64 builds only.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_X86_GEMV_STREAMS_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_X86_GEMV_STREAMS_H_

#include <cstddef>
#include <string_view>

#include "absl/status/statusor.h"
#include "kernel_iface/softnpu/compute/x86_cpu_features.h"

namespace lnpu::softnpu::compute {

struct X86GemvStreams {
  // Panel streams per GEMV call of 1-2 rows, at most: 1, 2 or 4 (the
  // kernel may use fewer: 2 for two rows of Q8_0). Each stream is its own
  // run of whole panels, far from the others.
  size_t streams = 4;
  // How far ahead of each load a stream prefetches (prefetcht0): 64 ..
  // 16384 bytes, a multiple of 64; at most the next panel's start.
  size_t prefetch_bytes = 2048;

  friend bool operator==(const X86GemvStreams&, const X86GemvStreams&) = default;
};

// The walk measured best for a CPU class: AMD family 0x19 (Zen 4, and
// Zen 3 untested) 1 stream prefetched 256 bytes ahead, whose hardware
// prefetchers follow one stream and lose to far software prefetches;
// every other CPU 4 streams prefetched 2 KiB ahead (measured best on
// Intel Sapphire Rapids-class and AMD Zen 5 VMs).
X86GemvStreams X86GemvStreamsFor(const X86CpuFeatures& cpu);

// Environment variable: "STREAMS:PREFETCH_BYTES", e.g. "1:256", replacing
// the CPU's walk. Read once, with the first call of GetX86GemvStreams; a
// malformed value is ignored with a line on stderr.
inline constexpr char kX86GemvStreamsVariable[] = "LNPU_GEMV_STREAMS";

// "STREAMS:PREFETCH_BYTES" with the ranges of X86GemvStreams, or
// InvalidArgument naming what is wrong.
absl::StatusOr<X86GemvStreams> ParseX86GemvStreams(std::string_view text);

// This process's walk: kX86GemvStreamsVariable's when set and valid, else
// X86GemvStreamsFor(GetX86CpuFeatures()). Computed once, thread-safe.
const X86GemvStreams& GetX86GemvStreams();

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_X86_GEMV_STREAMS_H_
