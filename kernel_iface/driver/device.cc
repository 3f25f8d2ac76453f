#include "kernel_iface/driver/device.h"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "kernel_iface/driver/linux_kernel_file.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu {
namespace {

// Maps an errno from `ioctl_name` to a status whose message says what the
// caller can do about it.
absl::Status IoctlError(absl::string_view ioctl_name, int err,
                        absl::string_view detail, const KernelFile* file = nullptr) {
  // The device's own reason for an argument it refused (EINVAL and
  // friends), when it keeps one.
  const std::string reason =
      file != nullptr && err != ETIMEDOUT && err != ETIME ? file->LastRejection() : "";
  const std::string message =
      absl::StrCat(ioctl_name, " failed: ", std::strerror(err), " (errno ",
                   err, ")", detail.empty() ? "" : ": ", detail,
                   reason.empty() ? "" : "; the device says: ", reason);
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EINVAL:
    case EFAULT:
      return absl::InvalidArgumentError(message);
    case ENOMEM:
    case ENOSPC:
      return absl::ResourceExhaustedError(absl::StrCat(
          message, "; free buffers or lower the model's memory needs"));
    case ETIMEDOUT:
    case ETIME:
      return absl::DeadlineExceededError(message);
    case ECANCELED:
      return absl::AbortedError(absl::StrCat(
          message, "; the device context was banned after a job fault or "
                   "timeout: reopen the device"));
    case ENOTTY:
      return absl::UnimplementedError(
          absl::StrCat(message, "; the kernel driver is older than this "
                                "user-space driver"));
    case EOPNOTSUPP:
      return absl::UnimplementedError(absl::StrCat(
          message, "; the device lacks the capability this needs (see "
                   "DRM_LNPU_PARAM_CAPABILITIES)"));
    default:
      return absl::InternalError(message);
  }
}

int64_t MonotonicDeadlineNs(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) {
    return std::numeric_limits<int64_t>::max();
  }
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t now_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return now_ns;
  const int64_t left_ns = absl::ToInt64Nanoseconds(left);
  if (left_ns > std::numeric_limits<int64_t>::max() - now_ns) {
    return std::numeric_limits<int64_t>::max();
  }
  return now_ns + left_ns;
}

}  // namespace

// ---------------------------------------------------------------- Buffer

Buffer::Buffer(Buffer&& other) noexcept
    : file_(std::move(other.file_)),
      handle_(std::exchange(other.handle_, 0)),
      flags_(std::exchange(other.flags_, 0)),
      size_(std::exchange(other.size_, 0)),
      device_addr_(std::exchange(other.device_addr_, 0)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      owns_mapping_(std::exchange(other.owns_mapping_, false)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Release();
    file_ = std::move(other.file_);
    handle_ = std::exchange(other.handle_, 0);
    flags_ = std::exchange(other.flags_, 0);
    size_ = std::exchange(other.size_, 0);
    device_addr_ = std::exchange(other.device_addr_, 0);
    mapped_ = std::exchange(other.mapped_, nullptr);
    owns_mapping_ = std::exchange(other.owns_mapping_, false);
  }
  return *this;
}

Buffer::~Buffer() { Release(); }

void Buffer::Release() {
  if (handle_ == 0) return;
  // Errors cannot be reported from a destructor; both calls only fail for
  // arguments this class never produces.
  if (owns_mapping_) file_->Munmap(mapped_, size_);
  drm_gem_close close_args{};
  close_args.handle = handle_;
  file_->Ioctl(DRM_IOCTL_GEM_CLOSE, &close_args);
  handle_ = 0;
  mapped_ = nullptr;
  owns_mapping_ = false;
  file_.reset();
}

absl::StatusOr<absl::Span<uint8_t>> Buffer::Map() {
  if (handle_ == 0) {
    return absl::FailedPreconditionError("Map() on an empty Buffer");
  }
  if (mapped_ == nullptr) {
    drm_lnpu_bo_info info{};
    info.handle = handle_;
    if (int err = file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info); err != 0) {
      return IoctlError("DRM_IOCTL_LNPU_BO_INFO", err,
                        absl::StrCat("handle ", handle_));
    }
    void* addr = nullptr;
    if (int err = file_->Mmap(size_, info.mmap_offset, &addr); err != 0) {
      return IoctlError("mmap", err, absl::StrCat(size_, " bytes"));
    }
    mapped_ = static_cast<uint8_t*>(addr);
    owns_mapping_ = true;
  }
  return absl::Span<uint8_t>(mapped_, size_);
}

// ---------------------------------------------------------------- Device

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const std::string& where) {
  if (where == "soft") {
    return std::make_unique<Device>(softnpu::SoftNpu::Default()->Open());
  }
  if (where == "auto") {
    for (const std::string& node : ListAccelNodes()) {
      auto file = LinuxKernelFile::Open(node);
      if (file.ok()) return std::make_unique<Device>(*std::move(file));
    }
    return std::make_unique<Device>(softnpu::SoftNpu::Default()->Open());
  }
  auto file = LinuxKernelFile::Open(where);
  if (!file.ok()) {
    return absl::Status(file.status().code(),
                        absl::StrCat(file.status().message(),
                                     "; use \"auto\" or \"soft\" for the "
                                     "software NPU"));
  }
  return std::make_unique<Device>(*std::move(file));
}

Device::Device(std::unique_ptr<KernelFile> file) : file_(std::move(file)) {}

Device::~Device() = default;

absl::StatusOr<uint64_t> Device::GetParam(uint32_t param) const {
  drm_lnpu_get_param args{};
  args.param = param;
  if (int err = file_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &args); err != 0) {
    return IoctlError("DRM_IOCTL_LNPU_GET_PARAM", err,
                      absl::StrCat("param ", param));
  }
  return args.value;
}

absl::StatusOr<Buffer> Device::CreateBuffer(uint64_t size, uint32_t flags) {
  return CreateBufferObject(size, flags, nullptr);
}

absl::StatusOr<Buffer> Device::ImportUserMemory(void* ptr, uint64_t size,
                                                uint32_t flags) {
  LNPU_ASSIGN_OR_RETURN(uint64_t caps, GetParam(DRM_LNPU_PARAM_CAPABILITIES));
  if ((caps & DRM_LNPU_CAP_USERPTR) == 0) {
    return absl::UnimplementedError(absl::StrCat(
        file_->Describe(), " cannot import user memory (no "
        "DRM_LNPU_CAP_USERPTR); copy the data into a device buffer instead"));
  }
  absl::StatusOr<Buffer> buffer =
      CreateBufferObject(size, flags | DRM_LNPU_BO_USERPTR, ptr);
  if (buffer.ok()) buffer->mapped_ = static_cast<uint8_t*>(ptr);
  return buffer;
}

absl::StatusOr<Buffer> Device::CreateBufferObject(uint64_t size,
                                                  uint32_t flags,
                                                  void* user_ptr) {
  drm_lnpu_bo_create args{};
  args.size = size;
  args.flags = flags;
  args.user_ptr = reinterpret_cast<uintptr_t>(user_ptr);
  if (int err = file_->Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &args); err != 0) {
    return IoctlError(
        "DRM_IOCTL_LNPU_BO_CREATE", err,
        absl::StrCat(size, " bytes, flags 0x", absl::Hex(flags),
                     user_ptr == nullptr
                         ? ""
                         : absl::StrCat(", user memory at 0x",
                                        absl::Hex(args.user_ptr)),
                     " on ", file_->Describe()),
        file_.get());
  }
  Buffer buffer;
  buffer.file_ = file_;
  buffer.handle_ = args.handle;
  buffer.flags_ = flags;
  buffer.device_addr_ = args.device_addr;
  // The driver rounds the size up; BO_INFO reports the real one.
  drm_lnpu_bo_info info{};
  info.handle = args.handle;
  if (int err = file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info); err != 0) {
    return IoctlError("DRM_IOCTL_LNPU_BO_INFO", err,
                      absl::StrCat("handle ", args.handle));
  }
  buffer.size_ = info.size;
  return buffer;
}

absl::StatusOr<DeviceUsage> Device::Usage() const {
  absl::StatusOr<DeviceUsage> usage = ParseFdInfo(file_->FdInfo());
  if (!usage.ok()) {
    return absl::Status(usage.status().code(),
                        absl::StrCat(file_->Describe(), ": ",
                                     usage.status().message()));
  }
  return usage;
}

absl::StatusOr<uint64_t> Device::Submit(const SubmitArgs& args) {
  LNPU_ASSIGN_OR_RETURN(const drm_lnpu_submit submit, SubmitWithFlags(args, 0));
  return submit.fence;
}

absl::StatusOr<SubmittedJob> Device::SubmitWithFenceFd(const SubmitArgs& args) {
  LNPU_ASSIGN_OR_RETURN(const drm_lnpu_submit submit,
                        SubmitWithFlags(args, DRM_LNPU_SUBMIT_OUT_FENCE_FD));
  SubmittedJob job;
  job.fence = submit.fence;
  job.fence_fd = FenceFd(submit.out_fence_fd);
  return job;
}

absl::StatusOr<drm_lnpu_submit> Device::SubmitWithFlags(const SubmitArgs& args,
                                                         uint32_t flags) {
  if (args.cmd == nullptr || !args.cmd->valid()) {
    return absl::InvalidArgumentError("Submit: no command buffer given");
  }
  drm_lnpu_submit submit{};
  submit.bo_handles = reinterpret_cast<uintptr_t>(args.bo_handles.data());
  submit.bo_count = static_cast<uint32_t>(args.bo_handles.size());
  submit.in_fences = reinterpret_cast<uintptr_t>(args.in_fences.data());
  submit.in_fence_count = static_cast<uint32_t>(args.in_fences.size());
  submit.engine = args.engine;
  submit.cmd_handle = args.cmd->handle();
  submit.cmd_offset = args.cmd_offset;
  submit.cmd_size = args.cmd_size;
  submit.flags = flags;
  if (args.profile != nullptr) {
    submit.flags |= DRM_LNPU_SUBMIT_PROFILE;
    submit.profile_handle = args.profile->handle();
  }
  if (int err = file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &submit); err != 0) {
    return IoctlError(
        "DRM_IOCTL_LNPU_SUBMIT", err,
        absl::StrCat("engine ", args.engine, ", ", args.cmd_size,
                     " command bytes at offset ", args.cmd_offset, ", ",
                     args.bo_handles.size(), " buffers, ",
                     args.in_fences.size(), " in-fences",
                     submit.flags == 0
                         ? ""
                         : absl::StrCat(", flags 0x", absl::Hex(submit.flags))),
        file_.get());
  }
  return submit;
}

absl::Status Device::Wait(absl::Span<const uint64_t> fences,
                          absl::Time deadline, bool any) {
  drm_lnpu_wait wait{};
  wait.fences = reinterpret_cast<uintptr_t>(fences.data());
  wait.fence_count = static_cast<uint32_t>(fences.size());
  wait.flags = any ? DRM_LNPU_WAIT_ANY : 0;
  wait.timeout_ns = MonotonicDeadlineNs(deadline);
  if (int err = file_->Ioctl(DRM_IOCTL_LNPU_WAIT, &wait); err != 0) {
    return IoctlError("DRM_IOCTL_LNPU_WAIT", err,
                      absl::StrCat("fences ", absl::StrJoin(fences, ",")));
  }
  if (wait.job_error == -EIO) {
    return absl::InternalError(absl::StrCat(
        "a job faulted on ", file_->Describe(),
        " (fences ", absl::StrJoin(fences, ","), ")"));
  }
  if (wait.job_error != 0) {
    return absl::AbortedError(absl::StrCat(
        "a job was aborted on ", file_->Describe(), " (",
        std::strerror(-wait.job_error), "; fences ",
        absl::StrJoin(fences, ","),
        "): it exceeded the device's job timeout or hung (the device then "
        "bans this file: reopen the device), or a job it waited for "
        "failed"));
  }
  return absl::OkStatus();
}

}  // namespace lnpu
