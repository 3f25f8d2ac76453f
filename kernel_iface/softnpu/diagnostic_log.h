// DiagnosticLog: the software NPU's kernel log. It keeps why the most recent
// ioctl was rejected and why the most recent job failed, so that tools and
// tests can explain a bare errno. With LNPU_SOFTNPU_DEBUG=1 in the
// environment every entry is also printed to stderr (like drm.debug).
//
// Thread-safety: all methods may be called concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_DIAGNOSTIC_LOG_H_
#define KERNEL_IFACE_SOFTNPU_DIAGNOSTIC_LOG_H_

#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"

namespace lnpu::softnpu {

class DiagnosticLog {
 public:
  DiagnosticLog();
  DiagnosticLog(const DiagnosticLog&) = delete;
  DiagnosticLog& operator=(const DiagnosticLog&) = delete;

  // Records why an ioctl fails with `error` (a positive errno) and returns
  // `error`, so that handlers can write `return log.Reject(EINVAL, ...)`.
  // The message names the ioctl, the field and what to do.
  template <typename... Args>
  int Reject(int error, const absl::FormatSpec<Args...>& format,
             const Args&... args) {
    RecordRejection(error, absl::StrFormat(format, args...));
    return error;
  }

  // Records why a job faulted or was aborted.
  void RecordFault(std::string message);

  // The latest entries ("" if none yet).
  std::string last_rejection() const;
  std::string last_fault() const;

 private:
  void RecordRejection(int error, std::string message);

  const bool echo_to_stderr_;
  mutable std::mutex mu_;
  std::string last_rejection_ ABSL_GUARDED_BY(mu_);
  std::string last_fault_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_DIAGNOSTIC_LOG_H_
