// DeviceReport: what npu-info prints about a device: every UAPI parameter
// (DRM_LNPU_PARAM_*), the capability bits by name, and this open file's
// usage figures (DRM fdinfo), rendered as text or as one JSON object.
#ifndef TOOLS_NPU_INFO_DEVICE_REPORT_H_
#define TOOLS_NPU_INFO_DEVICE_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernel_iface/driver/device.h"
#include "kernel_iface/driver/device_usage.h"

namespace lnpu::info {

struct ParamReading {
  uint32_t id = 0;   // DRM_LNPU_PARAM_*
  std::string key;   // JSON key: the macro name without prefix, lower case
  std::string label; // text label
  std::string unit;  // "bytes", "ms", or ""
  std::optional<uint64_t> value;
  std::string error;  // why the read failed, when value is empty
};

struct DeviceReport {
  std::string device;  // Device::Describe()
  std::vector<ParamReading> params;  // in DRM_LNPU_PARAM_* order
  // Capability names ("dtype-f16", ...) of the set bits, then "bit N" for
  // set bits this UAPI does not define. Empty if CAPABILITIES failed.
  std::vector<std::string> capabilities;
  std::optional<DeviceUsage> usage;  // absent if the device publishes none
  std::string usage_error;           // why, when absent

  // True if every parameter could be read.
  bool complete() const;
};

DeviceReport CollectDeviceReport(const Device& device);

std::string FormatText(const DeviceReport& report);
std::string FormatJson(const DeviceReport& report);

}  // namespace lnpu::info

#endif  // TOOLS_NPU_INFO_DEVICE_REPORT_H_
