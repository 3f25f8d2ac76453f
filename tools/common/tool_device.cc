#include "tools/common/tool_device.h"

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::tools {

absl::StatusOr<std::unique_ptr<Device>> OpenToolDevice(const std::string& where,
                                                       uint32_t soft_job_timeout_ms) {
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<Device> device, Device::Open(where));
  LNPU_ASSIGN_OR_RETURN(const uint64_t caps, device->GetParam(DRM_LNPU_PARAM_CAPABILITIES));
  LNPU_ASSIGN_OR_RETURN(const uint64_t memory, device->GetParam(DRM_LNPU_PARAM_MEMORY_SIZE));
  LNPU_ASSIGN_OR_RETURN(const uint64_t units, device->GetParam(DRM_LNPU_PARAM_COMPUTE_UNITS));
  if ((caps & DRM_LNPU_CAP_SOFTWARE) == 0) return device;
  softnpu::SoftNpuOptions options;
  options.memory_bytes = memory;
  options.compute_threads = static_cast<int>(units);
  options.job_timeout_ms = soft_job_timeout_ms;
  LNPU_RETURN_IF_ERROR(options.Validate());
  return std::make_unique<Device>(softnpu::SoftNpu::Create(options)->Open());
}

}  // namespace lnpu::tools
