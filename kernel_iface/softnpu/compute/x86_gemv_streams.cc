#include "kernel_iface/softnpu/compute/x86_gemv_streams.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace lnpu::softnpu::compute {

// The distances measured (docs/performance.md): a whole panel ahead (15-82
// KiB for k = 896 .. 5632) times 4 streams overflowed L1, and on the Intel
// (AMX) VM 4 KiB made the 1-row GEMVs of k = 4864 and 5632 15-17% faster
// from DRAM, 2 KiB the same as 4 ("Q4_0 panels on Intel (AMX)"); on the
// Zen 5 VM 2 KiB decoded faster than 4 in 17 of 18 paired rounds
// ("Prefetch distance on Zen 5"); on the Zen 4 VM 1 stream 256 bytes ahead
// read 18-30% more than 4 streams 2 KiB ahead ("GEMV streams on AMD EPYC
// (Zen 4)").
X86GemvStreams X86GemvStreamsFor(const X86CpuFeatures& cpu) {
  if (cpu.vendor == X86Vendor::kAmd && cpu.family == 0x19) {
    return {.streams = 1, .prefetch_bytes = 256};
  }
  return {.streams = 4, .prefetch_bytes = 2048};
}

absl::StatusOr<X86GemvStreams> ParseX86GemvStreams(std::string_view std_text) {
  const absl::string_view text(std_text.data(), std_text.size());
  const size_t colon = text.find(':');
  size_t streams = 0, prefetch_bytes = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(text.substr(0, colon), &streams) ||
      !absl::SimpleAtoi(text.substr(colon + 1), &prefetch_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not STREAMS:PREFETCH_BYTES (e.g. 1:256 or 4:2048)"));
  }
  if (streams != 1 && streams != 2 && streams != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\": ", streams, " streams; use 1, 2 or 4"));
  }
  if (prefetch_bytes < 64 || prefetch_bytes > 16384 || prefetch_bytes % 64 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\": prefetch distance ", prefetch_bytes,
        " bytes; use a multiple of 64 from 64 to 16384"));
  }
  return X86GemvStreams{.streams = streams, .prefetch_bytes = prefetch_bytes};
}

const X86GemvStreams& GetX86GemvStreams() {
  static const X86GemvStreams streams = [] {
    const X86GemvStreams for_cpu = X86GemvStreamsFor(GetX86CpuFeatures());
    const char* text = std::getenv(kX86GemvStreamsVariable);
    if (text == nullptr) return for_cpu;
    absl::StatusOr<X86GemvStreams> parsed = ParseX86GemvStreams(text);
    if (parsed.ok()) return *parsed;
    std::fprintf(stderr, "lnpu: %s: %s; the CPU's %zu:%zu is used\n", kX86GemvStreamsVariable,
                 std::string(parsed.status().message()).c_str(), for_cpu.streams,
                 for_cpu.prefetch_bytes);
    return for_cpu;
  }();
  return streams;
}

}  // namespace lnpu::softnpu::compute
