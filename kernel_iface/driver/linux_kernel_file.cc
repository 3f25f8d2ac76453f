#include "kernel_iface/driver/linux_kernel_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu {

absl::StatusOr<std::unique_ptr<LinuxKernelFile>> LinuxKernelFile::Open(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return absl::UnavailableError(absl::StrCat(
        "cannot open ", path, ": ", std::strerror(err),
        err == EACCES ? " (add the user to the group owning the node)" : ""));
  }
  drmVersionPtr version = drmGetVersion(fd);
  if (version == nullptr) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        path, " does not answer DRM_IOCTL_VERSION: not a DRM accel node"));
  }
  const std::string name(version->name, version->name_len);
  drmFreeVersion(version);
  if (name != LNPU_DRIVER_NAME) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is driven by '", name, "', not '",
                     LNPU_DRIVER_NAME, "'"));
  }
  return std::unique_ptr<LinuxKernelFile>(new LinuxKernelFile(fd, path));
}

LinuxKernelFile::~LinuxKernelFile() { ::close(fd_); }

int LinuxKernelFile::Ioctl(unsigned long request, void* arg) {
  // drmIoctl restarts on EINTR and EAGAIN.
  return drmIoctl(fd_, request, arg) == 0 ? 0 : errno;
}

std::string LinuxKernelFile::FdInfo() const {
  const std::string path = absl::StrCat("/proc/self/fdinfo/", fd_);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      text.append(chunk, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fd);
  return text;
}

int LinuxKernelFile::Mmap(uint64_t length, uint64_t offset, void** addr) {
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                   static_cast<off_t>(offset));
  if (p == MAP_FAILED) return errno;
  *addr = p;
  return 0;
}

int LinuxKernelFile::Munmap(void* addr, uint64_t length) {
  return ::munmap(addr, length) == 0 ? 0 : errno;
}

std::vector<std::string> ListAccelNodes() {
  std::vector<std::pair<int, std::string>> nodes;
  DIR* dir = ::opendir("/dev/accel");
  if (dir == nullptr) return {};
  while (const dirent* entry = ::readdir(dir)) {
    const absl::string_view name = entry->d_name;
    int minor = 0;
    if (absl::StartsWith(name, "accel") &&
        absl::SimpleAtoi(name.substr(5), &minor)) {
      nodes.emplace_back(minor, absl::StrCat("/dev/accel/", name));
    }
  }
  ::closedir(dir);
  std::sort(nodes.begin(), nodes.end());
  std::vector<std::string> paths;
  for (auto& [minor, path] : nodes) paths.push_back(std::move(path));
  return paths;
}

}  // namespace lnpu
