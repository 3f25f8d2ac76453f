#include "kernel_iface/softnpu/compute/cpu_kinds.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace lnpu::softnpu::compute {
namespace {

std::optional<std::string> ReadLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(line));
}

// The CPUs of a sysfs CPU list ("0-3,8,10-11"); nullopt if malformed.
std::optional<std::vector<int>> ParseCpuList(const std::string& list) {
  std::vector<int> cpus;
  if (list.empty()) return cpus;
  for (absl::string_view range : absl::StrSplit(list, ',')) {
    const std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    int first = 0;
    int last = 0;
    if (ends.size() > 2 || !absl::SimpleAtoi(ends[0], &first) ||
        !absl::SimpleAtoi(ends.back(), &last) || first < 0 || last < first) {
      return std::nullopt;
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

bool CpusAreOneKind(const std::string& sysfs_root, const std::vector<int>& cpus) {
  std::optional<uint64_t> capacity;
  for (int cpu : cpus) {
    const auto line = ReadLine(sysfs_root + "/devices/system/cpu/cpu" + std::to_string(cpu) +
                               "/cpu_capacity");
    uint64_t value = 0;
    if (!line || !absl::SimpleAtoi(*line, &value)) continue;
    if (capacity && *capacity != value) return false;
    capacity = value;
  }
  const auto atom_line = ReadLine(sysfs_root + "/devices/cpu_atom/cpus");
  if (!atom_line) return true;
  const auto atoms = ParseCpuList(*atom_line);
  if (!atoms) return true;
  const auto is_atom = [&](int cpu) {
    return std::find(atoms->begin(), atoms->end(), cpu) != atoms->end();
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
