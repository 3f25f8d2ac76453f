#include "kernel_iface/softnpu/user_memory.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_format.h"

namespace lnpu::softnpu {

namespace {

// One scan of /proc/self/maps for [start, start + size).
absl::Status ScanUserMemory(uintptr_t start, uint64_t size, bool need_write) {
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot read /proc/self/maps to check the imported range: %s; "
        "mount procfs",
        std::strerror(errno)));
  }
  // Lines are sorted by address: "start-end perms offset dev inode path".
  const uint64_t end = start + size;
  uint64_t covered = start;  // [start, covered) is mapped with the access
  char line[512];
  absl::Status result = absl::OkStatus();
  bool done = false;
  while (!done && std::fgets(line, sizeof(line), maps) != nullptr) {
    const bool whole_line = std::strchr(line, '\n') != nullptr;
    uint64_t map_start = 0, map_end = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", &map_start,
                    &map_end, perms) == 3 &&
        map_end > covered) {
      if (map_start > covered) {
        result = absl::FailedPreconditionError(absl::StrFormat(
            "address 0x%x of the range is not mapped", covered));
        done = true;
      } else if (perms[0] != 'r' || (need_write && perms[1] != 'w')) {
        result = absl::FailedPreconditionError(absl::StrFormat(
            "address 0x%x of the range is mapped %s, not %s%s", covered,
            perms, need_write ? "writable" : "readable",
            need_write && perms[0] == 'r'
                ? " (import read-only memory with DRM_LNPU_BO_READ_ONLY)"
                : ""));
        done = true;
      } else {
        covered = map_end;
        done = covered >= end;
      }
    }
    // Skip the rest of an overlong line (a long path).
    while (!whole_line && std::fgets(line, sizeof(line), maps) != nullptr &&
           std::strchr(line, '\n') == nullptr) {
    }
  }
  std::fclose(maps);
  if (result.ok() && covered < end) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "address 0x%x of the range is not mapped", covered));
  }
  return result;
}

}  // namespace

absl::Status CheckUserMemory(uintptr_t start, uint64_t size, bool need_write) {
  // The file is read in several chunks; another thread that maps or unmaps
  // memory meanwhile can make one scan miss a mapping (seen under
  // qemu-user, whose maps are emulated). A range that is really not mapped
  // fails every scan, so a failure is confirmed by two more.
  absl::Status result = ScanUserMemory(start, size, need_write);
  for (int retry = 0; retry < 2 && absl::IsFailedPrecondition(result); ++retry) {
    result = ScanUserMemory(start, size, need_write);
  }
  return result;
}

}  // namespace lnpu::softnpu
