// User-space driver: one open lnpu device, its buffer objects, job
// submission and fence waits. All errors are absl::Status values whose
// message names the ioctl, the errno and what to do.
//
// Thread-safety: Device and Buffer methods may be called from several
// threads at once (the kernel serializes what must be); a Buffer must not be
// destroyed while another thread uses it.
//
// Lifetime: the open file is shared by the Device and each of its Buffers,
// so a Buffer may outlive its Device (its handle stays valid until the
// Buffer is destroyed; the file closes with the last of them).
#ifndef KERNEL_IFACE_DRIVER_DEVICE_H_
#define KERNEL_IFACE_DRIVER_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kernel_iface/driver/device_usage.h"
#include "kernel_iface/driver/fence_fd.h"
#include "kernel_iface/driver/kernel_file.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu {

// A buffer object: device memory (Device::CreateBuffer) or imported user
// memory (Device::ImportUserMemory). Move-only; closes its handle on
// destruction and unmaps what Map() mapped; an imported buffer's memory
// stays the caller's (never unmapped or freed here).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  bool valid() const { return handle_ != 0; }
  uint32_t handle() const { return handle_; }
  uint64_t size() const { return size_; }
  uint64_t device_addr() const { return device_addr_; }
  uint32_t flags() const { return flags_; }

  // Maps the whole buffer into this process (once; later calls return the
  // same mapping). An imported buffer returns the imported memory itself;
  // writing to it is the caller's business (it may be read-only memory).
  absl::StatusOr<absl::Span<uint8_t>> Map();
  // The mapping made by Map(), or an empty span.
  absl::Span<uint8_t> mapped() const { return {mapped_, mapped_ ? size_ : 0}; }

 private:
  friend class Device;
  void Release();

  std::shared_ptr<KernelFile> file_;  // shared with the Device
  uint32_t handle_ = 0;
  uint32_t flags_ = 0;
  uint64_t size_ = 0;
  uint64_t device_addr_ = 0;
  uint8_t* mapped_ = nullptr;
  bool owns_mapping_ = false;  // mapped_ came from KernelFile::Mmap
};

struct SubmitArgs {
  uint32_t engine = 0;                   // DRM_LNPU_ENGINE_*
  const Buffer* cmd = nullptr;           // a DRM_LNPU_BO_CMDBUF buffer
  uint32_t cmd_offset = 0;
  uint32_t cmd_size = 0;
  absl::Span<const uint32_t> bo_handles; // every buffer the job touches
  absl::Span<const uint64_t> in_fences;  // fences this job waits for
  // With DRM_LNPU_CAP_PROFILING: a buffer of at least
  // DRM_LNPU_PROFILE_BYTES(commands) that the device fills with the job's
  // command times before its fence signals (DRM_LNPU_SUBMIT_PROFILE; not
  // one of bo_handles). A device without the capability refuses it:
  // Unimplemented.
  const Buffer* profile = nullptr;
};

// A job queued by Device::SubmitWithFenceFd: its fence number (for
// Device::Wait) and the same fence as a file descriptor.
struct SubmittedJob {
  uint64_t fence = 0;
  FenceFd fence_fd;
};

class Device {
 public:
  // Where Open() looks for a device.
  //   "auto": the first /dev/accel/accel* node whose DRM driver name is
  //           LNPU_DRIVER_NAME, else the process-wide software NPU;
  //   "soft": the process-wide software NPU;
  //   a path: that node, which must be an lnpu device.
  static absl::StatusOr<std::unique_ptr<Device>> Open(
      const std::string& where = "auto");

  // Wraps an already open file (the software NPU, a test double, ...).
  explicit Device(std::unique_ptr<KernelFile> file);
  ~Device();

  absl::StatusOr<uint64_t> GetParam(uint32_t param) const;
  absl::StatusOr<Buffer> CreateBuffer(uint64_t size, uint32_t flags = 0);

  // Wraps `size` bytes of this process's memory at `ptr` in a buffer
  // without copying them (DRM_LNPU_BO_USERPTR), e.g. weights mmapped from
  // a file. `ptr` and `size` must be multiples of DRM_LNPU_PARAM_BO_ALIGNMENT;
  // `flags` may add DRM_LNPU_BO_READ_ONLY, which memory that is not
  // writable requires and which makes the device refuse jobs that write
  // into the buffer. The memory must stay mapped while the buffer (or a job
  // using it) lives. Unimplemented if the device lacks DRM_LNPU_CAP_USERPTR;
  // InvalidArgument for a bad pointer, size or flags.
  absl::StatusOr<Buffer> ImportUserMemory(void* ptr, uint64_t size,
                                          uint32_t flags = 0);

  // This file's usage figures (engine busy time, memory), from the
  // device's fdinfo. Unimplemented if the device publishes none.
  absl::StatusOr<DeviceUsage> Usage() const;

  // Queues a job; returns its fence.
  absl::StatusOr<uint64_t> Submit(const SubmitArgs& args);
  // Submit, also returning the job's fence as a file descriptor
  // (DRM_LNPU_SUBMIT_OUT_FENCE_FD) that this or another process, or another
  // driver, waits on with poll(2) (fence_fd.h). Errors as Submit's; a device
  // older than UAPI 1.3 refuses the flag: InvalidArgument.
  absl::StatusOr<SubmittedJob> SubmitWithFenceFd(const SubmitArgs& args);

  // Waits until all (or, with any = true, one) of `fences` signalled, or
  // until `deadline`. DeadlineExceeded on timeout; Internal when a waited
  // job faulted (-EIO); Aborted when it was aborted or cancelled
  // (-ECANCELED: it timed out or hung, its file is banned, or a job it
  // depended on failed).
  absl::Status Wait(absl::Span<const uint64_t> fences, absl::Time deadline,
                    bool any = false);
  absl::Status Wait(uint64_t fence, absl::Time deadline) {
    return Wait(absl::MakeConstSpan(&fence, 1), deadline);
  }

  KernelFile& file() const { return *file_; }
  std::string Describe() const { return file_->Describe(); }

 private:
  // SUBMIT with `flags` (DRM_LNPU_SUBMIT_*); the ioctl's arguments as the
  // device returned them.
  absl::StatusOr<drm_lnpu_submit> SubmitWithFlags(const SubmitArgs& args, uint32_t flags);
  // BO_CREATE (+ BO_INFO for the rounded size); `user_ptr` for USERPTR.
  absl::StatusOr<Buffer> CreateBufferObject(uint64_t size, uint32_t flags,
                                            void* user_ptr);

  std::shared_ptr<KernelFile> file_;  // shared with every Buffer
};

}  // namespace lnpu

#endif  // KERNEL_IFACE_DRIVER_DEVICE_H_
