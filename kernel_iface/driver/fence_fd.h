// FenceFd: a job's fence as a file descriptor (DRM_LNPU_SUBMIT_OUT_FENCE_FD,
// UAPI 1.3; Device::SubmitWithFenceFd), which becomes readable (POLLIN)
// once the job ended, whatever its outcome. A kernel driver returns a
// sync_file that other drivers accept as an in-fence; the software NPU an
// eventfd (docs/uapi.md). Either can be passed to another process
// (SCM_RIGHTS) or added to a poll/epoll set with the application's other
// descriptors; get() is the descriptor for that.
//
// Move-only; owns the descriptor and closes it on destruction (the job is
// not affected). Thread-safety: const methods may be called concurrently;
// moving, assigning and Release() must not race with other calls.
#ifndef KERNEL_IFACE_DRIVER_FENCE_FD_H_
#define KERNEL_IFACE_DRIVER_FENCE_FD_H_

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace lnpu {

class FenceFd {
 public:
  FenceFd() = default;
  // Takes ownership of `fd` (a descriptor from DRM_IOCTL_LNPU_SUBMIT's
  // out_fence_fd).
  explicit FenceFd(int fd) : fd_(fd) {}
  FenceFd(FenceFd&& other) noexcept;
  FenceFd& operator=(FenceFd&& other) noexcept;
  FenceFd(const FenceFd&) = delete;
  FenceFd& operator=(const FenceFd&) = delete;
  ~FenceFd();

  bool valid() const { return fd_ >= 0; }
  // The descriptor, still owned by this object; -1 if empty.
  int get() const { return fd_; }
  // Hands the descriptor to the caller, who closes it; leaves this empty.
  int Release();

  // Waits with poll(2) until the job ended or `deadline` passed (a past
  // deadline only checks). OK once it ended: its outcome is Device::Wait's
  // on the fence number. DeadlineExceeded on timeout; FailedPrecondition on
  // an empty FenceFd; Internal if poll fails.
  absl::Status Wait(absl::Time deadline) const;

 private:
  int fd_ = -1;
};

}  // namespace lnpu

#endif  // KERNEL_IFACE_DRIVER_FENCE_FD_H_
