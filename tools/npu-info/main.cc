// npu-info: prints the parameters of an lnpu device.
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

ABSL_FLAG(std::string, device, "auto",
          "\"auto\" (lnpu /dev/accel node, else the software NPU), \"soft\", "
          "or a device node path");

namespace {

struct ParamRow {
  uint32_t id;
  const char* name;
  const char* unit;
};

constexpr ParamRow kParams[] = {
    {DRM_LNPU_PARAM_UAPI_VERSION, "uapi version", ""},
    {DRM_LNPU_PARAM_DEVICE_ID, "device id", ""},
    {DRM_LNPU_PARAM_CAPABILITIES, "capabilities", ""},
    {DRM_LNPU_PARAM_MEMORY_SIZE, "memory size", "bytes"},
    {DRM_LNPU_PARAM_MEMORY_USED, "memory used", "bytes"},
    {DRM_LNPU_PARAM_ENGINE_MASK, "engine mask", ""},
    {DRM_LNPU_PARAM_BO_ALIGNMENT, "buffer alignment", "bytes"},
    {DRM_LNPU_PARAM_MAX_CMD_SIZE, "max command stream", "bytes"},
    {DRM_LNPU_PARAM_MAX_JOB_BOS, "max buffers per job", ""},
    {DRM_LNPU_PARAM_JOB_TIMEOUT_MS, "job timeout", "ms"},
    {DRM_LNPU_PARAM_COMPUTE_UNITS, "compute units", ""},
    {DRM_LNPU_PARAM_MAX_IN_FENCES, "max in-fences per job", ""},
};

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "prints the parameters of an lnpu device.\nusage: npu-info [--device D]");
  absl::ParseCommandLine(argc, argv);
  auto device = lnpu::Device::Open(absl::GetFlag(FLAGS_device));
  if (!device.ok()) {
    std::cerr << "npu-info: " << device.status().message() << "\n";
    return 1;
  }
  std::cout << absl::StrFormat("device: %s\n", (*device)->Describe());
  int failures = 0;
  for (const ParamRow& row : kParams) {
    auto value = (*device)->GetParam(row.id);
    if (!value.ok()) {
      std::cout << absl::StrFormat("  %-24s error: %s\n", row.name,
                                   value.status().message());
      ++failures;
      continue;
    }
    if (row.id == DRM_LNPU_PARAM_UAPI_VERSION) {
      std::cout << absl::StrFormat("  %-24s %d.%d\n", row.name, *value >> 16,
                                   *value & 0xffff);
    } else if (row.id == DRM_LNPU_PARAM_CAPABILITIES ||
               row.id == DRM_LNPU_PARAM_ENGINE_MASK) {
      std::cout << absl::StrFormat("  %-24s 0x%x\n", row.name, *value);
    } else {
      std::cout << absl::StrFormat("  %-24s %d %s\n", row.name, *value, row.unit);
    }
  }
  return failures == 0 ? 0 : 1;
}
