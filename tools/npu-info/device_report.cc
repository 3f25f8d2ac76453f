#include "tools/npu-info/device_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tools/common/json.h"

namespace lnpu::info {
namespace {

struct ParamSpec {
  uint32_t id;
  const char* key;
  const char* label;
  const char* unit;
};

// Every DRM_LNPU_PARAM_*, in id order.
constexpr ParamSpec kParams[] = {
    {DRM_LNPU_PARAM_UAPI_VERSION, "uapi_version", "uapi version", ""},
    {DRM_LNPU_PARAM_DEVICE_ID, "device_id", "device id", ""},
    {DRM_LNPU_PARAM_CAPABILITIES, "capabilities", "capabilities", ""},
    {DRM_LNPU_PARAM_MEMORY_SIZE, "memory_size", "memory size", "bytes"},
    {DRM_LNPU_PARAM_MEMORY_USED, "memory_used", "memory used", "bytes"},
    {DRM_LNPU_PARAM_ENGINE_MASK, "engine_mask", "engine mask", ""},
    {DRM_LNPU_PARAM_BO_ALIGNMENT, "bo_alignment", "buffer alignment", "bytes"},
    {DRM_LNPU_PARAM_MAX_CMD_SIZE, "max_cmd_size", "max command stream",
     "bytes"},
    {DRM_LNPU_PARAM_MAX_JOB_BOS, "max_job_bos", "max buffers per job", ""},
    {DRM_LNPU_PARAM_JOB_TIMEOUT_MS, "job_timeout_ms", "job timeout", "ms"},
    {DRM_LNPU_PARAM_COMPUTE_UNITS, "compute_units", "compute units", ""},
    {DRM_LNPU_PARAM_MAX_IN_FENCES, "max_in_fences", "max in-fences per job",
     ""},
    {DRM_LNPU_PARAM_JOBS_SUBMITTED, "jobs_submitted", "jobs submitted", ""},
    {DRM_LNPU_PARAM_JOBS_COMPLETED, "jobs_completed", "jobs completed", ""},
    {DRM_LNPU_PARAM_JOB_FAULTS, "job_faults", "job faults", ""},
    {DRM_LNPU_PARAM_RESETS, "resets", "engine resets", ""},
    {DRM_LNPU_PARAM_MEMORY_FREE, "memory_free", "memory free", "bytes"},
    {DRM_LNPU_PARAM_MEMORY_IMPORTED, "memory_imported", "memory imported",
     "bytes"},
    {DRM_LNPU_PARAM_JOBS_CANCELLED, "jobs_cancelled", "jobs cancelled", ""},
};
static_assert(std::size(kParams) == DRM_LNPU_PARAM_COUNT,
              "a new DRM_LNPU_PARAM_*: add it to kParams");

constexpr struct {
  uint64_t bit;
  const char* name;
} kCapabilities[] = {
    {DRM_LNPU_CAP_DTYPE_F16, "dtype-f16"},
    {DRM_LNPU_CAP_IN_FENCES, "in-fences"},
    {DRM_LNPU_CAP_SOFTWARE, "software"},
    {DRM_LNPU_CAP_USERPTR, "userptr"},
    {DRM_LNPU_CAP_PROFILING, "profiling"},
    {DRM_LNPU_CAP_DTYPE_Q8_0_P16, "dtype-q8_0-p16"},
    {DRM_LNPU_CAP_Q8_0_P16_PREFERRED, "q8_0-p16-preferred"},
    {DRM_LNPU_CAP_DTYPE_Q4_0_P16, "dtype-q4_0-p16"},
    {DRM_LNPU_CAP_Q4_0_P16_PREFERRED, "q4_0-p16-preferred"},
    {DRM_LNPU_CAP_DTYPE_Q6_K, "dtype-q6_k"},
    {DRM_LNPU_CAP_DTYPE_Q8_0_P16S, "dtype-q8_0-p16s"},
    {DRM_LNPU_CAP_Q8_0_P16S_PREFERRED, "q8_0-p16s-preferred"},
    {DRM_LNPU_CAP_DTYPE_Q4_0_P16S, "dtype-q4_0-p16s"},
    {DRM_LNPU_CAP_Q4_0_P16S_PREFERRED, "q4_0-p16s-preferred"},
    {DRM_LNPU_CAP_Q6_K_PREFERRED, "q6_k-preferred"},
};

std::vector<std::string> CapabilityNames(uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& cap : kCapabilities) {
    if ((mask & cap.bit) != 0) names.push_back(cap.name);
    mask &= ~cap.bit;
  }
  for (int bit = 0; bit < 64; ++bit) {
    if ((mask >> bit) & 1) names.push_back(absl::StrCat("bit ", bit));
  }
  return names;
}

// The value as text prints it: versions as major.minor, masks in hex.
std::string FormatValue(const ParamReading& p) {
  const uint64_t v = *p.value;
  switch (p.id) {
    case DRM_LNPU_PARAM_UAPI_VERSION:
      return absl::StrFormat("%d.%d", v >> 16, v & 0xffff);
    case DRM_LNPU_PARAM_DEVICE_ID:
    case DRM_LNPU_PARAM_CAPABILITIES:
    case DRM_LNPU_PARAM_ENGINE_MASK:
      return absl::StrFormat("0x%x", v);
    default:
      return p.unit.empty() ? absl::StrCat(v) : absl::StrCat(v, " ", p.unit);
  }
}

}  // namespace

bool DeviceReport::complete() const {
  for (const ParamReading& p : params) {
    if (!p.value.has_value()) return false;
  }
  return true;
}

DeviceReport CollectDeviceReport(const Device& device) {
  DeviceReport report;
  report.device = device.Describe();
  for (const ParamSpec& spec : kParams) {
    ParamReading reading{spec.id, spec.key, spec.label, spec.unit, {}, ""};
    absl::StatusOr<uint64_t> value = device.GetParam(spec.id);
    if (value.ok()) {
      reading.value = *value;
      if (spec.id == DRM_LNPU_PARAM_CAPABILITIES) {
        report.capabilities = CapabilityNames(*value);
      }
    } else {
      reading.error = std::string(value.status().message());
    }
    report.params.push_back(std::move(reading));
  }
  absl::StatusOr<DeviceUsage> usage = device.Usage();
  if (usage.ok()) {
    report.usage = *usage;
  } else {
    report.usage_error = std::string(usage.status().message());
  }
  return report;
}

std::string FormatText(const DeviceReport& report) {
  std::string out = absl::StrFormat("device: %s\nparameters:\n", report.device);
  for (const ParamReading& p : report.params) {
    absl::StrAppendFormat(&out, "  %-24s %s\n", p.label,
                          p.value ? FormatValue(p) : "error: " + p.error);
  }
  absl::StrAppendFormat(&out, "capabilities: %s\n",
                        report.capabilities.empty()
                            ? "none"
                            : absl::StrJoin(report.capabilities, " "));
  if (!report.usage) {
    absl::StrAppendFormat(&out, "usage: not available (%s)\n",
                          report.usage_error);
    return out;
  }
  const DeviceUsage& u = *report.usage;
  absl::StrAppendFormat(&out,
                        "usage of this open file (fdinfo):\n"
                        "  %-24s %s\n  %-24s %d\n"
                        "  %-24s %d ns\n  %-24s %d ns\n"
                        "  %-24s %d bytes\n  %-24s %d bytes\n"
                        "  %-24s %d bytes\n  %-24s %d bytes\n",
                        "driver", u.driver, "client id", u.client_id,
                        "compute busy", u.compute_busy_ns, "dma busy",
                        u.dma_busy_ns, "memory total", u.memory_total_bytes,
                        "memory resident", u.memory_resident_bytes,
                        "memory shared", u.memory_shared_bytes,
                        "userptr total", u.userptr_total_bytes);
  return out;
}

std::string FormatJson(const DeviceReport& report) {
  tools::JsonWriter json;
  json.BeginObject().Key("device").String(report.device);
  json.Key("params").BeginObject();
  for (const ParamReading& p : report.params) {
    json.Key(p.key);
    if (p.value) {
      json.Uint(*p.value);
    } else {
      json.BeginObject().Key("error").String(p.error).EndObject();
    }
  }
  json.EndObject();
  json.Key("capabilities").BeginArray();
  for (const std::string& name : report.capabilities) json.String(name);
  json.EndArray();
  json.Key("usage");
  if (report.usage) {
    const DeviceUsage& u = *report.usage;
    json.BeginObject()
        .Key("driver").String(u.driver)
        .Key("client_id").Uint(u.client_id)
        .Key("compute_busy_ns").Uint(u.compute_busy_ns)
        .Key("dma_busy_ns").Uint(u.dma_busy_ns)
        .Key("memory_total_bytes").Uint(u.memory_total_bytes)
        .Key("memory_resident_bytes").Uint(u.memory_resident_bytes)
        .Key("memory_shared_bytes").Uint(u.memory_shared_bytes)
        .Key("userptr_total_bytes").Uint(u.userptr_total_bytes)
        .EndObject();
  } else {
    json.BeginObject().Key("error").String(report.usage_error).EndObject();
  }
  json.EndObject();
  return json.text();
}

}  // namespace lnpu::info
