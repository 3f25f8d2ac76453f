// The OS-interface seam of the user-space driver.
//
// Every ioctl and mmap that the driver issues goes through one KernelFile,
// an open file of an lnpu device. Implementations:
//   - LinuxKernelFile (linux_kernel_file.h): a real /dev/accel node, through
//     libdrm's drmIoctl and mmap(2);
//   - the software NPU (kernel_iface/softnpu/soft_npu.h), served in-process;
//   - test doubles (gmock) in tests/.
//
// Thread-safety: implementations must accept concurrent calls from several
// threads, as a kernel does.
#ifndef KERNEL_IFACE_DRIVER_KERNEL_FILE_H_
#define KERNEL_IFACE_DRIVER_KERNEL_FILE_H_

#include <cstdint>
#include <string>

namespace lnpu {

class KernelFile {
 public:
  virtual ~KernelFile() = default;

  // Performs `request` (a DRM_IOCTL_* number) with argument `arg`.
  // Returns 0 on success, else a positive errno value (ENOENT, EINVAL, ...).
  // Never returns EINTR: an interrupted call is restarted, as drmIoctl does.
  virtual int Ioctl(unsigned long request, void* arg) = 0;

  // Maps `length` bytes at the fake `offset` returned by
  // DRM_IOCTL_LNPU_BO_INFO. On success stores the address in *addr and
  // returns 0; else returns a positive errno (EINVAL, ENOENT, ENOMEM).
  virtual int Mmap(uint64_t length, uint64_t offset, void** addr) = 0;

  // Unmaps a mapping made by Mmap. Returns 0 or a positive errno.
  virtual int Munmap(void* addr, uint64_t length) = 0;

  // Human-readable name of the device behind this file, for diagnostics
  // ("/dev/accel/accel0", "software NPU").
  virtual std::string Describe() const = 0;

  // This open file's usage figures as Linux publishes them in
  // /proc/<pid>/fdinfo/<fd>: "key:\tvalue" lines, the drm-* keys of
  // Documentation/gpu/drm-usage-stats.rst (docs/uapi.md lists the ones an
  // lnpu device writes) among others. The default, for files whose device
  // publishes no figures, is "" (a kernel driver without show_fdinfo).
  virtual std::string FdInfo() const { return ""; }
  // Why the device most recently rejected an ioctl, as its log says it
  // (the software NPU's diagnostic log; a kernel driver logs to dmesg,
  // which a process cannot read back: ""). Device adds it to the errors
  // it returns, so that a bare EINVAL names the field and the rule.
  virtual std::string LastRejection() const { return ""; }
};

}  // namespace lnpu

#endif  // KERNEL_IFACE_DRIVER_KERNEL_FILE_H_
