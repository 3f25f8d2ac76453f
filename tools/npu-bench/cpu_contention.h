// Competing CPU load for measuring how decode degrades when the device's
// host CPU is shared (npu-bench --contention N): N child processes, each
// one busy thread at normal priority, as another program on an embedded
// board would be.
//
// Thread-safety: not thread-safe; one owner.
#ifndef TOOLS_NPU_BENCH_CPU_CONTENTION_H_
#define TOOLS_NPU_BENCH_CPU_CONTENTION_H_

#include <sys/types.h>

#include <chrono>
#include <vector>

#include "absl/status/statusor.h"

namespace lnpu::bench {

class CpuContention {
 public:
  // Forks `processes` (>= 0) busy-looping children. Internal if fork fails
  // (children already started are stopped).
  static absl::StatusOr<CpuContention> Start(int processes);

  CpuContention(CpuContention&& other) noexcept;
  CpuContention& operator=(CpuContention&&) = delete;
  CpuContention(const CpuContention&) = delete;
  CpuContention& operator=(const CpuContention&) = delete;
  // Stop()s.
  ~CpuContention();

  // Kills and reaps the children; returns the CPU they used, in cores
  // (their CPU time over the wall time since Start), 0 without children.
  // Idempotent: later calls return the first result.
  double Stop();

 private:
  CpuContention() = default;

  std::vector<pid_t> children_;
  std::chrono::steady_clock::time_point start_;
  double cores_used_ = 0;
};

// The share of the host CPU left to the benchmark: cores not used by the
// competitors over the cores the device uses (`compute_units`), at most 1.
double AvailableCpuShare(double competitor_cores, int online_cores, int compute_units);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_CPU_CONTENTION_H_
