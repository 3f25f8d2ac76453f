// The device self-test of `npu-info --validate` (in the manner of xrt-smi
// validate): four checks, each with its measured figure, its pass
// threshold and a verdict.
//
//   nop-latency   10,000 NOP jobs on the compute engine, each submitted and
//                 waited for before the next: average and p99 round trip.
//   dma-bandwidth COPY of 64 MiB (less if the device memory is smaller) on
//                 the DMA engine; best of 3 runs after a warm-up.
//   matmul        F32 MATMUL of 256x1024 by 1024x1024 on the compute
//                 engine; best of 3 runs after a warm-up, in GFLOP/s.
//   known-answer  MATMUL, RMS_NORM and SWIGLU of small integer-valued
//                 inputs in one job, compared with a double-precision host
//                 computation: the MATMUL exactly, the rest within
//                 kKnownAnswerTolerance relative (+ absolute) error.
//
// `--checks` runs a subset (an emulated device's speed figures mean
// nothing, its known answer does). Thresholds are floors that any working
// lnpu device clears by a wide margin (the software NPU under sanitizers
// included); missing them means the device is broken, not merely slow.
#ifndef TOOLS_NPU_INFO_SELF_TEST_H_
#define TOOLS_NPU_INFO_SELF_TEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernel_iface/driver/device.h"

namespace lnpu::info {

inline constexpr int kNopRoundTrips = 10'000;
inline constexpr double kMaxNopAverageUs = 2'000;
inline constexpr double kMaxNopP99Us = 20'000;
inline constexpr double kMinDmaGBps = 0.2;
inline constexpr double kMinMatmulGflops = 0.2;
inline constexpr double kKnownAnswerTolerance = 1e-5;

struct CheckResult {
  std::string name;       // "nop-latency-avg", "dma-bandwidth", ...
  double value = 0;       // the figure (NaN when the check could not run)
  std::string unit;       // "us", "GB/s", "GFLOP/s", "max rel. error"
  double threshold = 0;
  bool higher_is_better = false;  // pass: value >= threshold, else <=
  bool pass = false;
  std::string detail;     // what was run, or why it failed
};

struct SelfTestReport {
  std::string device;
  std::vector<CheckResult> checks;
  bool pass() const;
};

// The checks by the names `npu-info --validate --checks` takes (the
// nop-latency check yields two results: average and p99).
enum class SelfTestCheck { kNopLatency, kDmaBandwidth, kMatmul, kKnownAnswer };
inline constexpr SelfTestCheck kAllSelfTestChecks[] = {
    SelfTestCheck::kNopLatency, SelfTestCheck::kDmaBandwidth,
    SelfTestCheck::kMatmul, SelfTestCheck::kKnownAnswer};

// Parses a comma-separated list of check names ("known-answer,matmul") into
// the checks in the self-test's own order, each once; InvalidArgument names
// an unknown or missing one and lists the valid names.
absl::StatusOr<std::vector<SelfTestCheck>> ParseSelfTestChecks(
    absl::string_view list);

// Runs `checks` on `device` in the order given; a check that cannot run
// fails with the reason in its detail.
SelfTestReport RunSelfTest(
    Device& device,
    absl::Span<const SelfTestCheck> checks = kAllSelfTestChecks);

std::string FormatText(const SelfTestReport& report);
std::string FormatJson(const SelfTestReport& report);

}  // namespace lnpu::info

#endif  // TOOLS_NPU_INFO_SELF_TEST_H_
