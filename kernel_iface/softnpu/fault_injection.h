// Fault injection: makes jobs of the software NPU hang or fault on purpose,
// so that timeouts, recovery and error reporting can be tested (the
// counterpart of ivpu's fail_hw debugfs control).
//
//   npu->InjectFault({FaultInjection::Kind::kHang, DRM_LNPU_ENGINE_COMPUTE});
//
// Tools get the same through the environment of the process-wide device:
//   LNPU_SOFTNPU_FAIL=hang:compute:1,fault:dma:2
// (kind:engine:count entries, comma-separated; see ParseFaultInjections).
#ifndef KERNEL_IFACE_SOFTNPU_FAULT_INJECTION_H_
#define KERNEL_IFACE_SOFTNPU_FAULT_INJECTION_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lnpu::softnpu {

struct FaultInjection {
  enum class Kind {
    // The engine stops making progress at the job's first command, as hung
    // hardware does, until the job-timeout watchdog resets it: the job ends
    // with -ECANCELED, its file is banned and DRM_LNPU_PARAM_RESETS counts
    // the reset.
    kHang,
    // The job faults at its first command (a device error): it ends with
    // -EIO and DRM_LNPU_PARAM_JOB_FAULTS counts it; its file keeps working.
    kFault,
  };
  Kind kind = Kind::kHang;
  uint32_t engine = 0;  // DRM_LNPU_ENGINE_*
  // How many jobs, counted from the next one that starts on `engine`
  // (jobs that are cancelled without running do not count). >= 1.
  uint32_t count = 1;

  // OK, or InvalidArgument naming the field out of range.
  absl::Status Validate() const;
};

// Parses "kind:engine:count[,kind:engine:count...]" where kind is "hang" or
// "fault", engine is "compute" or "dma" and count a positive integer (":1"
// may be left out). InvalidArgument names the entry that does not parse.
absl::StatusOr<std::vector<FaultInjection>> ParseFaultInjections(
    absl::string_view spec);

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_FAULT_INJECTION_H_
