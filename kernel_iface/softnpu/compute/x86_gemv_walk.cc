#include "kernel_iface/softnpu/compute/x86_gemv_walk.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lnpu::softnpu::compute {

// The distances measured (docs/performance.md): a whole panel ahead (15-82
// KiB for k = 896 .. 5632) times 4 streams overflowed L1, and on the Intel
// (AMX) VM 4 KiB made the 1-row GEMVs of k = 4864 and 5632 15-17% faster
// from DRAM, 2 KiB the same as 4 ("Q4_0 panels on Intel (AMX)"); on the
// Zen 5 VM 2 KiB decoded faster than 4 in 17 of 18 paired rounds
// ("Prefetch distance on Zen 5") and 1 chunk per thread 4-7% faster than
// 4 ("One GEMV call per thread"); on the Zen 4 VM 1 stream 256 bytes ahead
// read 18-30% more than 4 streams 2 KiB ahead, and 4 chunks per thread
// 5-19% more than 1 ("GEMV walk on AMD EPYC (Zen 4)"); 2 chunks per thread
// decoded tinyllama-1.1b 6% faster than 8 in fast minutes and the same in
// slow ones, with qwen2.5-0.5b and a competing process unchanged ("Two
// chunks per thread on Zen 4"); on the Zen 3 VM that walk read the
// slowest of eight, and 2 streams 1 KiB ahead in 2 chunks per thread the
// fastest or as fast: tinyllama-1.1b's decode MATMULs 20-25% and
// qwen2.5-0.5b's 16-17% faster ("GEMV walk on AMD EPYC (Zen 3)").
X86GemvWalk X86GemvWalkFor(const X86CpuFeatures& cpu) {
  if (cpu.vendor == X86Vendor::kAmd && cpu.family == 0x19) {
    // Family 0x19 models: Zen 4 is 0x10-0x1F (Genoa), 0x60-0x7F (Raphael,
    // Phoenix) and 0xA0-0xAF (Bergamo, Siena); the others are Zen 3.
    const unsigned m = cpu.model;
    const bool zen4 =
        (m >= 0x10 && m <= 0x1F) || (m >= 0x60 && m <= 0x7F) || (m >= 0xA0 && m <= 0xAF);
    if (zen4) return {.streams = 1, .prefetch_bytes = 256, .chunks_per_thread = 2};
    return {.streams = 2, .prefetch_bytes = 1024, .chunks_per_thread = 2};
  }
  return {.streams = 4, .prefetch_bytes = 2048, .chunks_per_thread = 1};
}

absl::StatusOr<X86GemvWalk> ParseX86GemvWalk(std::string_view std_text) {
  const absl::string_view text(std_text.data(), std_text.size());
  const std::vector<absl::string_view> fields = absl::StrSplit(text, ':');
  size_t streams = 0, prefetch_bytes = 0, chunks = 0;
  if (fields.size() != 3 || !absl::SimpleAtoi(fields[0], &streams) ||
      !absl::SimpleAtoi(fields[1], &prefetch_bytes) || !absl::SimpleAtoi(fields[2], &chunks)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\" is not STREAMS:PREFETCH_BYTES:CHUNKS_PER_THREAD (e.g. 1:256:2)"));
  }
  if (streams != 1 && streams != 2 && streams != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\": ", streams, " streams; use 1, 2 or 4"));
  }
  if (prefetch_bytes < 64 || prefetch_bytes > 16384 || prefetch_bytes % 64 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\": prefetch distance ", prefetch_bytes,
                     " bytes; use a multiple of 64 from 64 to 16384"));
  }
  if (chunks < 1 || chunks > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\": ", chunks, " chunks per thread; use 1 to 16"));
  }
  return X86GemvWalk{
      .streams = streams, .prefetch_bytes = prefetch_bytes, .chunks_per_thread = chunks};
}

const X86GemvWalk& GetX86GemvWalk() {
  static const X86GemvWalk walk = [] {
    const X86GemvWalk for_cpu = X86GemvWalkFor(GetX86CpuFeatures());
    const char* text = std::getenv(kX86GemvWalkVariable);
    if (text == nullptr) return for_cpu;
    absl::StatusOr<X86GemvWalk> parsed = ParseX86GemvWalk(text);
    if (parsed.ok()) return *parsed;
    std::fprintf(stderr, "lnpu: %s: %s; the CPU's %zu:%zu:%zu is used\n", kX86GemvWalkVariable,
                 std::string(parsed.status().message()).c_str(), for_cpu.streams,
                 for_cpu.prefetch_bytes, for_cpu.chunks_per_thread);
    return for_cpu;
  }();
  return walk;
}

size_t ActivationReuseLimitBytes() {
  static const size_t limit = [] {
    const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return (l1d > 0 ? static_cast<size_t>(l1d) : size_t{32} << 10) / 2;
  }();
  return limit;
}

}  // namespace lnpu::softnpu::compute
