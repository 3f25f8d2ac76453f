// CPU time the hypervisor gave to other guests while the benchmark ran
// ("steal" in /proc/stat, `st` in vmstat and top). On a virtual machine
// whose host is busy, the guest's vCPUs stop for a share of the wall time,
// so every wall-clock figure of the run is low by an unknown amount: npu-bench
// reports that share beside its figures, so that runs on a stolen VM are
// recognised rather than compared.
//
// Thread-safety: free functions without shared state.
#ifndef TOOLS_NPU_BENCH_CPU_STEAL_H_
#define TOOLS_NPU_BENCH_CPU_STEAL_H_

#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace lnpu::bench {

// The machine-wide CPU time counters of /proc/stat's "cpu" line, in clock ticks.
struct CpuTimes {
  uint64_t total = 0;  // every field: user .. steal (guest time is inside user)
  uint64_t steal = 0;
};

// Parses the "cpu " line of /proc/stat's text `stat` (proc(5): user nice
// system idle iowait irq softirq steal [guest guest_nice]). InvalidArgument
// naming what is wrong when the line is missing or has fewer than 8 numbers
// (kernels before 2.6.11 have no steal field).
absl::StatusOr<CpuTimes> ParseProcStat(absl::string_view stat);

// Reads and parses /proc/stat. NotFound (or the parse error) when there is
// none, e.g. outside Linux.
absl::StatusOr<CpuTimes> ReadCpuTimes();

// The share of the machine's CPU time between `before` and `after` that was
// stolen, 0..1; 0 when no time passed.
double StolenFraction(const CpuTimes& before, const CpuTimes& after);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_CPU_STEAL_H_
