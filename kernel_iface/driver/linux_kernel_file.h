// KernelFile over a real lnpu kernel driver: an open /dev/accel/accel<N>
// node, driven through libdrm.
#ifndef KERNEL_IFACE_DRIVER_LINUX_KERNEL_FILE_H_
#define KERNEL_IFACE_DRIVER_LINUX_KERNEL_FILE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernel_iface/driver/kernel_file.h"

namespace lnpu {

class LinuxKernelFile final : public KernelFile {
 public:
  // Opens `path` and checks with DRM_IOCTL_VERSION that its driver is
  // LNPU_DRIVER_NAME. FailedPrecondition names the driver found otherwise.
  static absl::StatusOr<std::unique_ptr<LinuxKernelFile>> Open(
      const std::string& path);
  ~LinuxKernelFile() override;

  int Ioctl(unsigned long request, void* arg) override;
  int Mmap(uint64_t length, uint64_t offset, void** addr) override;
  int Munmap(void* addr, uint64_t length) override;
  std::string Describe() const override { return path_; }
  // The contents of /proc/self/fdinfo/<fd>; "" if it cannot be read.
  std::string FdInfo() const override;

 private:
  LinuxKernelFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// The /dev/accel/accel* nodes present, sorted by minor number.
std::vector<std::string> ListAccelNodes();

}  // namespace lnpu

#endif  // KERNEL_IFACE_DRIVER_LINUX_KERNEL_FILE_H_
