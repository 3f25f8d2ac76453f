#include "kernel_iface/softnpu/compute/cpu_kinds.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_io.h"

namespace lnpu::softnpu::compute {
namespace {

// A sysfs attribute's value without its newline; nullopt if unreadable.
std::optional<std::string> ReadSysfsValue(const std::string& path) {
  const absl::StatusOr<std::string> text = ReadRegularFile(path, 4096, "sysfs attribute");
  if (!text.ok()) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(*text));
}

// The [first, last] ranges of a sysfs CPU list ("0-3,8,10-11"); nullopt if
// malformed.
std::optional<std::vector<std::pair<int, int>>> ParseCpuList(const std::string& list) {
  std::vector<std::pair<int, int>> ranges;
  if (list.empty()) return ranges;
  for (absl::string_view range : absl::StrSplit(list, ',')) {
    const std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    int first = 0;
    int last = 0;
    if (ends.size() > 2 || !absl::SimpleAtoi(ends[0], &first) ||
        !absl::SimpleAtoi(ends.back(), &last) || first < 0 || last < first) {
      return std::nullopt;
    }
    ranges.emplace_back(first, last);
  }
  return ranges;
}

}  // namespace

bool CpusAreOneKind(const std::string& sysfs_root, const std::vector<int>& cpus) {
  std::optional<uint64_t> capacity;
  for (int cpu : cpus) {
    const auto line = ReadSysfsValue(sysfs_root + "/devices/system/cpu/cpu" + std::to_string(cpu) +
                               "/cpu_capacity");
    uint64_t value = 0;
    if (!line || !absl::SimpleAtoi(*line, &value)) continue;
    if (capacity && *capacity != value) return false;
    capacity = value;
  }
  const auto atom_list = ReadSysfsValue(sysfs_root + "/devices/cpu_atom/cpus");
  if (!atom_list) return true;
  const auto atoms = ParseCpuList(*atom_list);
  if (!atoms) return true;
  const auto is_atom = [&](int cpu) {
    return std::any_of(atoms->begin(), atoms->end(),
                       [cpu](const auto& range) { return range.first <= cpu && cpu <= range.second; });
  };
  const size_t atom_count = std::count_if(cpus.begin(), cpus.end(), is_atom);
  return atom_count == 0 || atom_count == cpus.size();
}

bool ProcessCpusAreOneKind() {
  static const bool one_kind = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return true;
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return CpusAreOneKind("/sys", cpus);
  }();
  return one_kind;
}

}  // namespace lnpu::softnpu::compute
