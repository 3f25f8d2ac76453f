#include "tools/npu-top/client_scan.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::top {
namespace {

constexpr char kAccelPrefix[] = "/dev/accel/";

// The names in directory `path`: 0, or the errno of opendir.
int ListDirectory(const std::string& path, std::vector<std::string>* names) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return errno;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back(name);
  }
  closedir(dir);
  return 0;
}

// The whole file, or false if it cannot be read (the process exited).
bool ReadSmallFile(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream out;
  out << in.rdbuf();
  *text = out.str();
  return !in.bad();
}

std::string LinkTarget(const std::string& path) {
  char target[4096];
  const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : "";
}

// The lnpu clients of process `pid`, one per drm-client-id.
void ScanProcess(const std::string& proc_root, int pid, ClientScan* scan) {
  const std::string dir = absl::StrCat(proc_root, "/", pid);
  std::vector<std::string> fds;
  // EACCES: another user's process; ENOENT: it has just exited.
  if (const int err = ListDirectory(dir + "/fd", &fds); err != 0) {
    if (err == EACCES) ++scan->unreadable_processes;
    return;
  }
  std::string command;
  ReadSmallFile(dir + "/comm", &command);
  command = std::string(absl::StripTrailingAsciiWhitespace(command));
  std::vector<ClientSample> found;
  for (const std::string& fd : fds) {
    const std::string node = LinkTarget(absl::StrCat(dir, "/fd/", fd));
    if (!absl::StartsWith(node, kAccelPrefix)) continue;
    std::string text;
    if (!ReadSmallFile(absl::StrCat(dir, "/fdinfo/", fd), &text)) continue;
    absl::StatusOr<DeviceUsage> usage = ParseFdInfo(text);
    if (!usage.ok()) {
      scan->errors.push_back(absl::StrCat(pid, "/", fd, ": ", usage.status().message()));
      continue;
    }
    if (usage->driver != LNPU_DRIVER_NAME) continue;
    const bool duplicate = std::any_of(found.begin(), found.end(), [&](const ClientSample& c) {
      return c.node == node && c.usage.client_id == usage->client_id;
    });
    if (!duplicate) found.push_back({pid, command, node, *usage});
  }
  std::sort(found.begin(), found.end(), [](const ClientSample& a, const ClientSample& b) {
    return std::tie(a.node, a.usage.client_id) < std::tie(b.node, b.usage.client_id);
  });
  scan->clients.insert(scan->clients.end(), found.begin(), found.end());
}

}  // namespace

ClientScan ScanClients(const std::string& proc_root, int skip_pid) {
  ClientScan scan;
  scan.taken = absl::Now();
  std::vector<std::string> entries;
  ListDirectory(proc_root, &entries);
  std::vector<int> pids;
  for (const std::string& entry : entries) {
    int pid = 0;
    if (absl::SimpleAtoi(entry, &pid) && pid > 0 && pid != skip_pid) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  for (const int pid : pids) ScanProcess(proc_root, pid, &scan);
  return scan;
}

}  // namespace lnpu::top
