// FileContext: the part of an open file that its jobs share with it (the
// kernel's per-file driver context). Jobs may outlive the file that
// submitted them, so both hold it by shared_ptr.
//
// Thread-safety: all members are safe to use concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_FILE_CONTEXT_H_
#define KERNEL_IFACE_SOFTNPU_FILE_CONTEXT_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "kernel_iface/softnpu/wait_queue.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {

struct FileContext {
  explicit FileContext(uint64_t id) : client_id(id) {}

  // Unique among the files of one device, never reused (fdinfo's
  // drm-client-id).
  const uint64_t client_id;
  // Set when one of the file's jobs exceeded the job timeout (or hung). A
  // banned context runs no further job: queued ones are cancelled and
  // SUBMIT fails with ECANCELED; the application has to open the device
  // again.
  std::atomic<bool> banned{false};
  // Nanoseconds each engine (DRM_LNPU_ENGINE_*) spent running this file's
  // jobs, added when each job ends (fdinfo's drm-engine-<name>).
  std::array<std::atomic<uint64_t>, DRM_LNPU_ENGINE_COUNT> busy_ns{};
  // SUBMITs of this file that returned 0 (fdinfo's lnpu-jobs-submitted).
  std::atomic<uint64_t> jobs_submitted{0};
  // Woken whenever a fence of this file signals (WAIT sleeps here).
  WaitQueue fence_waiters;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_FILE_CONTEXT_H_
