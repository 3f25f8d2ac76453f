// The process's peak resident set, and lowering it again after a
// measurement that needed memory the model does not (a bandwidth probe's
// buffer), so that the peak npu-bench reports is the model's.
//
// Uses VmHWM of /proc/self/status, not getrusage: ru_maxrss also keeps the
// peak a thread saw when it exited (a probe's reader threads exit while its
// buffer is still mapped), and clear_refs cannot lower that one.
//
// Thread-safety: the functions read and write the calling process's /proc
// files; a reset while another thread allocates loses that thread's peak.
#ifndef TOOLS_NPU_BENCH_PEAK_RSS_H_
#define TOOLS_NPU_BENCH_PEAK_RSS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lnpu::bench {

// The VmHWM line of a /proc/PID/status text, in MiB. InvalidArgument when
// the line is missing or malformed.
absl::StatusOr<double> ParsePeakRssMiB(absl::string_view proc_status);

// This process's peak resident set since it started or since the last
// ResetPeakRss(), MiB. Unavailable when /proc/self/status cannot be read.
absl::StatusOr<double> ReadPeakRssMiB();

// Lowers the peak to the current resident set (writes "5" to
// /proc/self/clear_refs; Linux >= 4.0). base/file_io.h ErrnoError's status
// naming the file when the kernel refuses (no /proc, a read-only mount).
absl::Status ResetPeakRss();

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_PEAK_RSS_H_
