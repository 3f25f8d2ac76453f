// DeviceUsage: the usage figures of one open lnpu device file, parsed from
// the DRM fdinfo text the kernel (or the software NPU) publishes for it
// (Documentation/gpu/drm-usage-stats.rst; docs/uapi.md lists the keys).
#ifndef KERNEL_IFACE_DRIVER_DEVICE_USAGE_H_
#define KERNEL_IFACE_DRIVER_DEVICE_USAGE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lnpu {

struct DeviceUsage {
  std::string driver;      // drm-driver
  uint64_t client_id = 0;  // drm-client-id: unique per open file
  // drm-engine-compute / drm-engine-dma: time the engine spent on this
  // file's jobs.
  uint64_t compute_busy_ns = 0;
  uint64_t dma_busy_ns = 0;
  // drm-total-memory / drm-resident-memory / drm-shared-memory: device
  // memory of the buffers this file holds a handle to.
  uint64_t memory_total_bytes = 0;
  uint64_t memory_resident_bytes = 0;
  uint64_t memory_shared_bytes = 0;
  // drm-total-userptr: user memory imported by this file
  // (DRM_LNPU_BO_USERPTR), not device memory.
  uint64_t userptr_total_bytes = 0;
  // lnpu-jobs-submitted: SUBMITs of this file that returned 0.
  uint64_t jobs_submitted = 0;
};

// Parses fdinfo text: one "key:<whitespace>value" per line; lines without a
// drm- or lnpu- key (pos, flags, mnt_id, ...) and unknown keys are skipped;
// missing figures stay 0. Sizes may carry a KiB, MiB or GiB unit, engine
// times an "ns" unit. Unimplemented if there is no drm-driver line (the
// device publishes no figures); Internal naming the line if a known key's
// value does not parse.
absl::StatusOr<DeviceUsage> ParseFdInfo(absl::string_view text);

}  // namespace lnpu

#endif  // KERNEL_IFACE_DRIVER_DEVICE_USAGE_H_
