// JobCounters: the device-wide job statistics of the software NPU
// (DRM_LNPU_PARAM_JOBS_SUBMITTED .. JOBS_CANCELLED, RESETS).
//
// SUBMIT counts a job before queueing it; its engine counts exactly one
// outcome when the job's fence signals, so at any time
// submitted >= completed + faulted + timed_out + cancelled.
//
// Thread-safety: all members may be updated and read concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_JOB_COUNTERS_H_
#define KERNEL_IFACE_SOFTNPU_JOB_COUNTERS_H_

#include <atomic>
#include <cstdint>

namespace lnpu::softnpu {

struct JobCounters {
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> completed{0};  // ran to the end: fence error 0
  std::atomic<uint64_t> faulted{0};    // a command failed: -EIO
  // Exceeded the job timeout (or hung) and was aborted by an engine reset:
  // -ECANCELED. Also the reset count.
  std::atomic<uint64_t> timed_out{0};
  // Never ran (banned file, failed in-fence, device shutdown): -ECANCELED.
  std::atomic<uint64_t> cancelled{0};
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_JOB_COUNTERS_H_
