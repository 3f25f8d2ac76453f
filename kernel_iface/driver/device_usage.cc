#include "kernel_iface/driver/device_usage.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"

namespace lnpu {
namespace {

struct Unit {
  absl::string_view name;
  uint64_t multiplier;
};

constexpr Unit kSizeUnits[] = {{"KiB", uint64_t{1} << 10},
                               {"MiB", uint64_t{1} << 20},
                               {"GiB", uint64_t{1} << 30}};
constexpr Unit kTimeUnits[] = {{"ns", 1}};

// Parses "<uint>[ <unit>]" into *out, the unit being one of `units`.
bool ParseQuantity(absl::string_view value, absl::Span<const Unit> units,
                   uint64_t* out) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(value, ' ', absl::SkipEmpty());
  if (parts.empty() || parts.size() > 2) return false;
  uint64_t number = 0;
  if (!absl::SimpleAtoi(parts[0], &number)) return false;
  uint64_t multiplier = 1;
  if (parts.size() == 2) {
    bool known = false;
    for (const Unit& unit : units) {
      if (parts[1] == unit.name) {
        multiplier = unit.multiplier;
        known = true;
      }
    }
    if (!known) return false;
  }
  if (number > std::numeric_limits<uint64_t>::max() / multiplier) {
    return false;
  }
  *out = number * multiplier;
  return true;
}

}  // namespace

absl::StatusOr<DeviceUsage> ParseFdInfo(absl::string_view text) {
  DeviceUsage usage;
  bool has_driver = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const absl::string_view key = line.substr(0, colon);
    if (!absl::StartsWith(key, "drm-") && !absl::StartsWith(key, "lnpu-")) {
      continue;
    }
    const absl::string_view value =
        absl::StripAsciiWhitespace(line.substr(colon + 1));
    struct Figure {
      absl::string_view key;
      uint64_t* field;
      absl::Span<const Unit> units;
    };
    const Figure figures[] = {
        {"drm-client-id", &usage.client_id, {}},
        {"drm-engine-compute", &usage.compute_busy_ns, kTimeUnits},
        {"drm-engine-dma", &usage.dma_busy_ns, kTimeUnits},
        {"drm-total-memory", &usage.memory_total_bytes, kSizeUnits},
        {"drm-resident-memory", &usage.memory_resident_bytes, kSizeUnits},
        {"drm-shared-memory", &usage.memory_shared_bytes, kSizeUnits},
        {"drm-total-userptr", &usage.userptr_total_bytes, kSizeUnits},
        {"lnpu-jobs-submitted", &usage.jobs_submitted, {}},
    };
    if (key == "drm-driver") {
      usage.driver = std::string(value);
      has_driver = !value.empty();
      continue;
    }
    for (const Figure& figure : figures) {
      if (key == figure.key &&
          !ParseQuantity(value, figure.units, figure.field)) {
        return absl::InternalError(absl::StrCat(
            "fdinfo line \"", line, "\": the value of ", key,
            " is not an unsigned integer with a known unit"));
      }
    }
  }
  if (!has_driver) {
    return absl::UnimplementedError(
        "the device publishes no usage figures (no drm-driver line in its "
        "fdinfo)");
  }
  return usage;
}

}  // namespace lnpu
