#include "tools/npu-bench/cpu_steal.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace lnpu::bench {

absl::StatusOr<CpuTimes> ParseProcStat(absl::string_view stat) {
  for (absl::string_view line : absl::StrSplit(stat, '\n')) {
    if (!absl::StartsWith(line, "cpu ")) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line.substr(4), ' ', absl::SkipEmpty());
    if (fields.size() < 8) {
      return absl::InvalidArgumentError(absl::StrCat(
          "/proc/stat's cpu line has ", fields.size(),
          " counters, fewer than the 8 up to steal: '", line, "'"));
    }
    CpuTimes times;
    // guest and guest_nice (fields 9-10) are already counted in user and nice.
    for (size_t i = 0; i < 8; ++i) {
      uint64_t value = 0;
      if (!absl::SimpleAtoi(fields[i], &value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("/proc/stat's cpu line has '", fields[i], "' where a count belongs"));
      }
      times.total += value;
      if (i == 7) times.steal = value;
    }
    return times;
  }
  return absl::InvalidArgumentError("/proc/stat has no 'cpu ' line");
}

absl::StatusOr<CpuTimes> ReadCpuTimes() {
  std::ifstream in("/proc/stat");
  if (!in) return absl::NotFoundError("cannot read /proc/stat");
  const std::string text(std::istreambuf_iterator<char>(in), {});
  return ParseProcStat(text);
}

double StolenFraction(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.steal < before.steal) return 0;
  return static_cast<double>(after.steal - before.steal) /
         static_cast<double>(after.total - before.total);
}

}  // namespace lnpu::bench
