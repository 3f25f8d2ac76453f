#include "kernel_iface/softnpu/fault_injection.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {

absl::Status FaultInjection::Validate() const {
  if (kind != Kind::kHang && kind != Kind::kFault) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fault injection kind ", static_cast<int>(kind),
        " is neither kHang nor kFault"));
  }
  if (engine >= DRM_LNPU_ENGINE_COUNT) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fault injection engine ", engine, " is not a DRM_LNPU_ENGINE_*"));
  }
  if (count == 0) {
    return absl::InvalidArgumentError(
        "fault injection count is 0; inject into at least one job");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<FaultInjection>> ParseFaultInjections(
    absl::string_view spec) {
  std::vector<FaultInjection> injections;
  for (absl::string_view entry : absl::StrSplit(spec, ',')) {
    const std::vector<absl::string_view> parts = absl::StrSplit(entry, ':');
    auto invalid = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fault injection \"", entry, "\": ", why,
          "; expected kind:engine[:count] with kind hang|fault, engine "
          "compute|dma, count >= 1 (e.g. hang:compute:1,fault:dma:2)"));
    };
    if (parts.size() < 2 || parts.size() > 3) {
      return invalid("wrong number of ':'-separated fields");
    }
    FaultInjection injection;
    if (parts[0] == "hang") {
      injection.kind = FaultInjection::Kind::kHang;
    } else if (parts[0] == "fault") {
      injection.kind = FaultInjection::Kind::kFault;
    } else {
      return invalid(absl::StrCat("unknown kind \"", parts[0], "\""));
    }
    if (parts[1] == "compute") {
      injection.engine = DRM_LNPU_ENGINE_COMPUTE;
    } else if (parts[1] == "dma") {
      injection.engine = DRM_LNPU_ENGINE_DMA;
    } else {
      return invalid(absl::StrCat("unknown engine \"", parts[1], "\""));
    }
    if (parts.size() == 3 &&
        (!absl::SimpleAtoi(parts[2], &injection.count) ||
         injection.count == 0)) {
      return invalid(absl::StrCat("count \"", parts[2],
                                  "\" is not a positive integer"));
    }
    injections.push_back(injection);
  }
  return injections;
}

}  // namespace lnpu::softnpu
