#include "kernel_iface/softnpu/soft_npu_file.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/quant_matmul_q6_k.h"
#include "kernel_iface/softnpu/diagnostic_log.h"
#include "kernel_iface/softnpu/engine.h"
#include "kernel_iface/softnpu/wait_queue.h"

namespace lnpu::softnpu {
namespace {

constexpr char kDriverDate[] = "20251130";
constexpr char kDriverDescription[] = "lnpu software NPU";

// How long WAIT polls before sleeping. Small jobs (a decode step of a small
// model) finish within it, which spares the waiter a wake-up. It polls
// without yielding, keeping its core: a yield on a CPU shared with busy
// processes gave the core away for a whole time slice (4 ms steps of
// stories260K).
constexpr MonotonicClock::duration kWaitSpin = std::chrono::microseconds(100);

// drm_copy_field(): copies at most *length bytes of `value` (no terminator)
// to a non-null `buffer` and sets *length to the full length.
void CopyVersionField(const char* value, __kernel_size_t* length,
                      char* buffer) {
  const size_t full = std::strlen(value);
  const size_t copied = std::min<size_t>(full, *length);
  *length = full;
  if (copied > 0 && buffer != nullptr) std::memcpy(buffer, value, copied);
}

template <typename T>
const T* UserArray(uint64_t pointer) {
  return reinterpret_cast<const T*>(static_cast<uintptr_t>(pointer));
}

// Appends "drm-<stat>-<region>:\t<bytes>" in the largest of B, KiB and MiB
// that represents `bytes` exactly, as DRM core's fdinfo helpers do.
void AppendMemoryStat(std::string& out, const char* stat, const char* region,
                      uint64_t bytes) {
  static constexpr const char* kUnits[] = {"", " KiB", " MiB"};
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  absl::StrAppendFormat(&out, "drm-%s-%s:\t%u%s\n", stat, region, bytes,
                        kUnits[unit]);
}

}  // namespace

SoftNpuFile::SoftNpuFile(std::shared_ptr<SoftNpu> device, uint64_t client_id)
    : device_(std::move(device)),
      context_(std::make_shared<FileContext>(client_id)) {}

std::string SoftNpuFile::Describe() const {
  return "software NPU (in-process lnpu device)";
}

std::string SoftNpuFile::LastRejection() const { return device_->last_rejection_message(); }

std::string SoftNpuFile::FdInfo() const {
  uint64_t device_bytes = 0;
  uint64_t imported_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [handle, buffer] : handles_) {
      (buffer->imported() ? imported_bytes : device_bytes) += buffer->size();
    }
  }
  std::string out = absl::StrFormat("drm-driver:\t%s\ndrm-client-id:\t%u\n",
                                    LNPU_DRIVER_NAME, context_->client_id);
  for (uint32_t engine = 0; engine < DRM_LNPU_ENGINE_COUNT; ++engine) {
    absl::StrAppendFormat(
        &out, "drm-engine-%s:\t%u ns\n", EngineName(engine),
        context_->busy_ns[engine].load(std::memory_order_relaxed));
  }
  // Nothing is shared between files; device memory is always resident.
  AppendMemoryStat(out, "total", "memory", device_bytes);
  AppendMemoryStat(out, "shared", "memory", 0);
  AppendMemoryStat(out, "resident", "memory", device_bytes);
  AppendMemoryStat(out, "total", "userptr", imported_bytes);
  AppendMemoryStat(out, "shared", "userptr", 0);
  absl::StrAppendFormat(
      &out, "lnpu-jobs-submitted:\t%u\n",
      context_->jobs_submitted.load(std::memory_order_relaxed));
  return out;
}

int SoftNpuFile::Ioctl(unsigned long request, void* arg) {
  if (_IOC_TYPE(request) == DRM_IOCTL_BASE) {
    switch (_IOC_NR(request)) {
      case _IOC_NR(DRM_IOCTL_VERSION):
        return Call(&SoftNpuFile::Version, request, arg);
      case _IOC_NR(DRM_IOCTL_GEM_CLOSE):
        return Call(&SoftNpuFile::GemClose, request, arg);
      case DRM_COMMAND_BASE + DRM_LNPU_GET_PARAM:
        return Call(&SoftNpuFile::GetParam, request, arg);
      case DRM_COMMAND_BASE + DRM_LNPU_BO_CREATE:
        return Call(&SoftNpuFile::BoCreate, request, arg);
      case DRM_COMMAND_BASE + DRM_LNPU_BO_INFO:
        return Call(&SoftNpuFile::BoInfo, request, arg);
      case DRM_COMMAND_BASE + DRM_LNPU_SUBMIT:
        return Call(&SoftNpuFile::Submit, request, arg);
      case DRM_COMMAND_BASE + DRM_LNPU_WAIT:
        return Call(&SoftNpuFile::Wait, request, arg);
      default:
        break;
    }
  }
  return device_->log_->Reject(ENOTTY,
                               "ioctl 0x%x is not an lnpu ioctl; see "
                               "kernel_iface/uapi/drm/lnpu_accel.h",
                               request);
}

template <typename Args>
int SoftNpuFile::Call(int (SoftNpuFile::*handler)(Args&),
                      unsigned long request, void* arg) {
  const size_t user_size = _IOC_SIZE(request);
  if (arg == nullptr && user_size != 0) {
    return device_->log_->Reject(EFAULT, "ioctl argument pointer is null");
  }
  // drm_ioctl(): a shorter user struct is zero-extended, a longer one's
  // extra bytes are ignored.
  const size_t copied = std::min(user_size, sizeof(Args));
  Args args{};
  if ((_IOC_DIR(request) & _IOC_WRITE) != 0 && copied != 0) {
    std::memcpy(&args, arg, copied);
  }
  const int error = (this->*handler)(args);
  if ((_IOC_DIR(request) & _IOC_READ) != 0 && copied != 0) {
    std::memcpy(arg, &args, copied);
  }
  return error;
}

int SoftNpuFile::Version(drm_version& args) {
  args.version_major = LNPU_UAPI_VERSION_MAJOR;
  args.version_minor = LNPU_UAPI_VERSION_MINOR;
  args.version_patchlevel = 0;
  CopyVersionField(LNPU_DRIVER_NAME, &args.name_len, args.name);
  CopyVersionField(kDriverDate, &args.date_len, args.date);
  CopyVersionField(kDriverDescription, &args.desc_len, args.desc);
  return 0;
}

int SoftNpuFile::GemClose(drm_gem_close& args) {
  DiagnosticLog& log = *device_->log_;
  if (args.pad != 0) {
    return log.Reject(EINVAL, "GEM_CLOSE: pad is %u, must be 0", args.pad);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(args.handle);
  if (it == handles_.end()) {
    return log.Reject(ENOENT,
                      "GEM_CLOSE: handle %u is not open in this file (closed "
                      "already, or from another file)",
                      args.handle);
  }
  if (!it->second->imported()) mmap_offsets_.erase(it->second->mmap_offset());
  handles_.erase(it);
  return 0;
}

int SoftNpuFile::GetParam(drm_lnpu_get_param& args) {
  DiagnosticLog& log = *device_->log_;
  if (args.pad != 0) {
    return log.Reject(EINVAL, "GET_PARAM: pad is %u, must be 0", args.pad);
  }
  const SoftNpuOptions& options = device_->options_;
  const JobCounters& counters = device_->counters_;
  switch (args.param) {
    case DRM_LNPU_PARAM_UAPI_VERSION:
      args.value = (LNPU_UAPI_VERSION_MAJOR << 16) | LNPU_UAPI_VERSION_MINOR;
      return 0;
    case DRM_LNPU_PARAM_DEVICE_ID:
      args.value = kSoftNpuDeviceId;
      return 0;
    case DRM_LNPU_PARAM_CAPABILITIES:
      args.value = DRM_LNPU_CAP_DTYPE_F16 | DRM_LNPU_CAP_IN_FENCES |
                   DRM_LNPU_CAP_SOFTWARE | DRM_LNPU_CAP_USERPTR |
                   DRM_LNPU_CAP_DTYPE_Q8_0_P16 | DRM_LNPU_CAP_DTYPE_Q4_0_P16 |
                   DRM_LNPU_CAP_DTYPE_Q6_K | DRM_LNPU_CAP_DTYPE_Q8_0_P16S |
                   DRM_LNPU_CAP_DTYPE_Q4_0_P16S |
                   (compute::ActiveQuantMatmulPath().q8_0_p16_kernels
                        ? DRM_LNPU_CAP_Q8_0_P16_PREFERRED | DRM_LNPU_CAP_Q8_0_P16S_PREFERRED
                        : 0) |
                   (compute::ActiveQuantMatmulPath().q4_0_p16_kernels
                        ? DRM_LNPU_CAP_Q4_0_P16_PREFERRED | DRM_LNPU_CAP_Q4_0_P16S_PREFERRED
                        : 0) |
                   (compute::Q6_KGemvPreferred() ? DRM_LNPU_CAP_Q6_K_PREFERRED : 0) |
                   (options.profiling ? DRM_LNPU_CAP_PROFILING : 0);
      return 0;
    case DRM_LNPU_PARAM_MEMORY_SIZE:
      args.value = device_->memory_->capacity();
      return 0;
    case DRM_LNPU_PARAM_MEMORY_USED:
      args.value = device_->memory_->used();
      return 0;
    case DRM_LNPU_PARAM_ENGINE_MASK:
      args.value =
          (1u << DRM_LNPU_ENGINE_COMPUTE) | (1u << DRM_LNPU_ENGINE_DMA);
      return 0;
    case DRM_LNPU_PARAM_BO_ALIGNMENT:
      args.value = kBufferAlignment;
      return 0;
    case DRM_LNPU_PARAM_MAX_CMD_SIZE:
      args.value = kMaxCommandBytes;
      return 0;
    case DRM_LNPU_PARAM_MAX_JOB_BOS:
      args.value = kMaxJobBuffers;
      return 0;
    case DRM_LNPU_PARAM_JOB_TIMEOUT_MS:
      args.value = options.job_timeout_ms;
      return 0;
    case DRM_LNPU_PARAM_COMPUTE_UNITS:
      args.value = static_cast<uint64_t>(options.compute_threads);
      return 0;
    case DRM_LNPU_PARAM_MAX_IN_FENCES:
      args.value = kMaxFences;
      return 0;
    case DRM_LNPU_PARAM_JOBS_SUBMITTED:
      args.value = counters.submitted.load(std::memory_order_relaxed);
      return 0;
    case DRM_LNPU_PARAM_JOBS_COMPLETED:
      args.value = counters.completed.load(std::memory_order_relaxed);
      return 0;
    case DRM_LNPU_PARAM_JOB_FAULTS:
      args.value = counters.faulted.load(std::memory_order_relaxed);
      return 0;
    case DRM_LNPU_PARAM_RESETS:
      args.value = counters.timed_out.load(std::memory_order_relaxed);
      return 0;
    case DRM_LNPU_PARAM_MEMORY_FREE:
      args.value = device_->memory_->capacity() - device_->memory_->used();
      return 0;
    case DRM_LNPU_PARAM_MEMORY_IMPORTED:
      args.value = device_->memory_->imported();
      return 0;
    case DRM_LNPU_PARAM_JOBS_CANCELLED:
      args.value = counters.cancelled.load(std::memory_order_relaxed);
      return 0;
    default:
      return log.Reject(EINVAL,
                        "GET_PARAM: param %u is unknown; ids below "
                        "DRM_LNPU_PARAM_COUNT (%u) exist",
                        args.param, DRM_LNPU_PARAM_COUNT);
  }
}

int SoftNpuFile::BoCreate(drm_lnpu_bo_create& args) {
  DiagnosticLog& log = *device_->log_;
  if ((args.flags & ~DRM_LNPU_BO_FLAGS_ALL) != 0) {
    return log.Reject(EINVAL,
                      "BO_CREATE: unknown flags 0x%x; only DRM_LNPU_BO_* "
                      "(0x%x) exist",
                      args.flags & ~DRM_LNPU_BO_FLAGS_ALL,
                      DRM_LNPU_BO_FLAGS_ALL);
  }
  const bool userptr = (args.flags & DRM_LNPU_BO_USERPTR) != 0;
  if ((args.flags & DRM_LNPU_BO_CMDBUF) != 0 &&
      (args.flags & (DRM_LNPU_BO_USERPTR | DRM_LNPU_BO_READ_ONLY)) != 0) {
    return log.Reject(EINVAL,
                      "BO_CREATE: flags 0x%x combine DRM_LNPU_BO_CMDBUF with "
                      "USERPTR or READ_ONLY; command buffers are plain device "
                      "memory",
                      args.flags);
  }
  if (!userptr && args.user_ptr != 0) {
    return log.Reject(EINVAL,
                      "BO_CREATE: user_ptr is 0x%x without "
                      "DRM_LNPU_BO_USERPTR; set the flag to import memory, "
                      "else leave user_ptr 0",
                      args.user_ptr);
  }
  std::shared_ptr<BufferObject> buffer;
  if (const int error =
          userptr ? device_->memory_->Import(args.user_ptr, args.size,
                                             args.flags, log, &buffer)
                  : device_->memory_->Allocate(args.size, args.flags, log,
                                               &buffer);
      error != 0) {
    return error;
  }
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t handle;
  do {
    handle = next_handle_++;
  } while (handle == 0 || handles_.contains(handle));
  args.handle = handle;
  args.device_addr = buffer->device_addr();
  if (!userptr) mmap_offsets_.emplace(buffer->mmap_offset(), buffer);
  handles_.emplace(handle, std::move(buffer));
  return 0;
}

int SoftNpuFile::BoInfo(drm_lnpu_bo_info& args) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(args.handle);
  if (it == handles_.end()) {
    return device_->log_->Reject(
        ENOENT, "BO_INFO: handle %u is not open in this file", args.handle);
  }
  const BufferObject& buffer = *it->second;
  args.flags = buffer.flags();
  args.size = buffer.size();
  args.mmap_offset = buffer.mmap_offset();
  args.device_addr = buffer.device_addr();
  return 0;
}

int SoftNpuFile::Mmap(uint64_t length, uint64_t offset, void** addr) {
  DiagnosticLog& log = *device_->log_;
  if (addr == nullptr) {
    return log.Reject(EINVAL, "mmap: the result pointer is null");
  }
  if (length == 0) return log.Reject(EINVAL, "mmap: length is 0");
  if (offset % kBufferAlignment != 0) {
    return log.Reject(EINVAL, "mmap: offset 0x%x is not a multiple of %u",
                      offset, kBufferAlignment);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = mmap_offsets_.find(offset);
  if (it == mmap_offsets_.end()) {
    return log.Reject(EINVAL,
                      "mmap: no buffer open in this file has mmap offset "
                      "0x%x; pass the mmap_offset from BO_INFO",
                      offset);
  }
  const std::shared_ptr<BufferObject>& buffer = it->second;
  if (length > buffer->size()) {
    return log.Reject(EINVAL,
                      "mmap: length %u exceeds the %u-byte buffer at offset "
                      "0x%x",
                      length, buffer->size(), offset);
  }
  Mapping& mapping =
      mappings_[{reinterpret_cast<uintptr_t>(buffer->data()), length}];
  if (mapping.count++ == 0) mapping.buffer = buffer;
  *addr = buffer->data();
  return 0;
}

int SoftNpuFile::Munmap(void* addr, uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it =
      mappings_.find(std::make_pair(reinterpret_cast<uintptr_t>(addr), length));
  if (it == mappings_.end()) {
    return device_->log_->Reject(
        EINVAL, "munmap: %p with length %u is not a mapping of this file", addr,
        length);
  }
  if (--it->second.count == 0) mappings_.erase(it);
  return 0;
}

int SoftNpuFile::Submit(drm_lnpu_submit& args) {
  DiagnosticLog& log = *device_->log_;
  if ((args.flags & ~DRM_LNPU_SUBMIT_FLAGS_ALL) != 0) {
    return log.Reject(EINVAL,
                      "SUBMIT: flags 0x%x has bits outside "
                      "DRM_LNPU_SUBMIT_FLAGS_ALL (0x%x)",
                      args.flags, DRM_LNPU_SUBMIT_FLAGS_ALL);
  }
  if (args.out_fence_fd != 0) {
    return log.Reject(EINVAL,
                      "SUBMIT: out_fence_fd is %d on entry, must be 0 (the "
                      "device sets it)",
                      args.out_fence_fd);
  }
  if (args.pad != 0) {
    return log.Reject(EINVAL, "SUBMIT: pad is %u, must be 0", args.pad);
  }
  if ((args.flags & DRM_LNPU_SUBMIT_PROFILE) == 0 && args.profile_handle != 0) {
    return log.Reject(EINVAL,
                      "SUBMIT: profile_handle is %u without "
                      "DRM_LNPU_SUBMIT_PROFILE; set the flag or pass 0",
                      args.profile_handle);
  }
  if (args.engine >= DRM_LNPU_ENGINE_COUNT) {
    return log.Reject(EINVAL, "SUBMIT: engine %u is not a DRM_LNPU_ENGINE_*",
                      args.engine);
  }
  if (args.bo_count > kMaxJobBuffers) {
    return log.Reject(EINVAL,
                      "SUBMIT: bo_count %u exceeds DRM_LNPU_PARAM_MAX_JOB_BOS "
                      "(%u)",
                      args.bo_count, kMaxJobBuffers);
  }
  if (args.in_fence_count > kMaxFences) {
    return log.Reject(EINVAL,
                      "SUBMIT: in_fence_count %u exceeds "
                      "DRM_LNPU_PARAM_MAX_IN_FENCES (%u)",
                      args.in_fence_count, kMaxFences);
  }
  if ((args.flags & DRM_LNPU_SUBMIT_PROFILE) != 0 &&
      !device_->options_.profiling) {
    return log.Reject(EOPNOTSUPP,
                      "SUBMIT: DRM_LNPU_SUBMIT_PROFILE on a device without "
                      "DRM_LNPU_CAP_PROFILING; submit without the flag");
  }
  if (args.bo_count > 0 && args.bo_handles == 0) {
    return log.Reject(EFAULT, "SUBMIT: bo_handles is null with bo_count %u",
                      args.bo_count);
  }
  if (args.in_fence_count > 0 && args.in_fences == 0) {
    return log.Reject(EFAULT,
                      "SUBMIT: in_fences is null with in_fence_count %u",
                      args.in_fence_count);
  }
  if (args.cmd_size == 0 || args.cmd_size % 8 != 0 ||
      args.cmd_size > kMaxCommandBytes) {
    return log.Reject(EINVAL,
                      "SUBMIT: cmd_size %u must be a non-zero multiple of 8 "
                      "up to DRM_LNPU_PARAM_MAX_CMD_SIZE (%u)",
                      args.cmd_size, kMaxCommandBytes);
  }
  if (args.cmd_offset % 8 != 0) {
    return log.Reject(EINVAL, "SUBMIT: cmd_offset %u is not a multiple of 8",
                      args.cmd_offset);
  }
  if (context_->banned.load(std::memory_order_relaxed)) {
    return log.Reject(ECANCELED,
                      "SUBMIT: this file was banned after one of its jobs "
                      "exceeded the job timeout (or hung); open the device "
                      "again");
  }

  Engine& engine = *device_->engines_[args.engine];
  std::unique_ptr<Job> job = engine.AcquireJob();
  if (const int error = PrepareJob(args, *job); error != 0) {
    engine.RecycleJob(std::move(job));
    return error;
  }
  // The exported fence: an eventfd the fence makes readable when it
  // signals (a sync_file needs a kernel; poll sees the same readiness).
  // One descriptor for the fence, one for the caller.
  int fence_fds[2] = {-1, -1};
  if ((args.flags & DRM_LNPU_SUBMIT_OUT_FENCE_FD) != 0) {
    fence_fds[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
    if (fence_fds[0] >= 0) fence_fds[1] = fcntl(fence_fds[0], F_DUPFD_CLOEXEC, 0);
    if (fence_fds[1] < 0) {
      const int error = errno == ENFILE ? EMFILE : errno;
      if (fence_fds[0] >= 0) close(fence_fds[0]);
      engine.RecycleJob(std::move(job));
      return log.Reject(error,
                        "SUBMIT: no file descriptor for the out-fence "
                        "(DRM_LNPU_SUBMIT_OUT_FENCE_FD): %s",
                        std::strerror(error));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  RetireSignalledFences();
  auto fence = std::make_shared<Fence>();
  if (fence_fds[0] >= 0) {
    fence->SetSignalEventFd(fence_fds[0]);
    args.out_fence_fd = fence_fds[1];
  }
  unretired_fences_.push_back(fence);
  args.fence = next_fence_++;
  job->Arm(context_, std::move(fence));
  device_->counters_.submitted.fetch_add(1, std::memory_order_relaxed);
  context_->jobs_submitted.fetch_add(1, std::memory_order_relaxed);
  engine.Push(std::move(job));
  return 0;
}

int SoftNpuFile::PrepareJob(const drm_lnpu_submit& args, Job& job) {
  DiagnosticLog& log = *device_->log_;
  std::shared_ptr<BufferObject> cmd;
  std::shared_ptr<BufferObject> profile;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(args.cmd_handle);
    if (it == handles_.end()) {
      return log.Reject(ENOENT,
                        "SUBMIT: cmd_handle %u is not open in this file",
                        args.cmd_handle);
    }
    cmd = it->second;
    const uint32_t* handles = UserArray<uint32_t>(args.bo_handles);
    for (uint32_t i = 0; i < args.bo_count; ++i) {
      auto bo = handles_.find(handles[i]);
      if (bo == handles_.end()) {
        return log.Reject(ENOENT,
                          "SUBMIT: bo_handles[%u] = %u is not open in this "
                          "file",
                          i, handles[i]);
      }
      if (handles[i] == args.cmd_handle) {
        return log.Reject(EINVAL,
                          "SUBMIT: bo_handles[%u] is the command buffer "
                          "(cmd_handle %u); commands cannot touch their own "
                          "stream",
                          i, handles[i]);
      }
      if ((bo->second->flags() & DRM_LNPU_BO_CMDBUF) != 0) {
        return log.Reject(EINVAL,
                          "SUBMIT: bo_handles[%u] = %u is a "
                          "DRM_LNPU_BO_CMDBUF buffer; only data buffers may "
                          "be listed",
                          i, handles[i]);
      }
      job.AddBuffer(bo->second);
    }
    const uint64_t* in_fences = UserArray<uint64_t>(args.in_fences);
    for (uint32_t i = 0; i < args.in_fence_count; ++i) {
      std::shared_ptr<Fence> fence;
      if (!LookupFence(in_fences[i], &fence)) {
        return log.Reject(ENOENT,
                          "SUBMIT: in_fences[%u] = %u was not issued by this "
                          "file",
                          i, in_fences[i]);
      }
      if (fence != nullptr) job.AddInFence(std::move(fence));
    }
    if ((args.flags & DRM_LNPU_SUBMIT_PROFILE) != 0) {
      auto it = handles_.find(args.profile_handle);
      if (it == handles_.end()) {
        return log.Reject(ENOENT,
                          "SUBMIT: profile_handle %u is not open in this file",
                          args.profile_handle);
      }
      profile = it->second;
    }
  }
  if (profile != nullptr) {
    if ((profile->flags() & (DRM_LNPU_BO_CMDBUF | DRM_LNPU_BO_READ_ONLY)) != 0) {
      return log.Reject(EINVAL,
                        "SUBMIT: profile_handle %u is a DRM_LNPU_BO_CMDBUF or "
                        "DRM_LNPU_BO_READ_ONLY buffer; the device writes the "
                        "profile into it: use a plain data buffer",
                        args.profile_handle);
    }
    const uint32_t* handles = UserArray<uint32_t>(args.bo_handles);
    for (uint32_t i = 0; i < args.bo_count; ++i) {
      if (handles[i] == args.profile_handle) {
        return log.Reject(EINVAL,
                          "SUBMIT: profile_handle %u is also bo_handles[%u]; "
                          "the commands must not touch the profile buffer",
                          args.profile_handle, i);
      }
    }
  }
  if ((cmd->flags() & DRM_LNPU_BO_CMDBUF) == 0) {
    return log.Reject(EINVAL,
                      "SUBMIT: cmd_handle %u was not created with "
                      "DRM_LNPU_BO_CMDBUF",
                      args.cmd_handle);
  }
  if (args.cmd_offset > cmd->size() ||
      args.cmd_size > cmd->size() - args.cmd_offset) {
    return log.Reject(EINVAL,
                      "SUBMIT: cmd_offset %u + cmd_size %u exceed the %u-byte "
                      "command buffer",
                      args.cmd_offset, args.cmd_size, cmd->size());
  }
  if (const int error = job.LoadCommands(
          args.engine,
          absl::MakeConstSpan(cmd->data() + args.cmd_offset, args.cmd_size),
          validated_streams_, log);
      error != 0) {
    return error;
  }
  if (profile == nullptr) return 0;
  const uint64_t needed = DRM_LNPU_PROFILE_BYTES(job.command_count());
  if (profile->size() < needed) {
    return log.Reject(EINVAL,
                      "SUBMIT: profile buffer %u has %u bytes; a job of %u "
                      "commands needs DRM_LNPU_PROFILE_BYTES(%u) = %u",
                      args.profile_handle, profile->size(), job.command_count(),
                      job.command_count(), needed);
  }
  job.SetProfile(std::move(profile));
  return 0;
}

int SoftNpuFile::Wait(drm_lnpu_wait& args) {
  DiagnosticLog& log = *device_->log_;
  if ((args.flags & ~DRM_LNPU_WAIT_FLAGS_ALL) != 0) {
    return log.Reject(EINVAL, "WAIT: unknown flags 0x%x",
                      args.flags & ~DRM_LNPU_WAIT_FLAGS_ALL);
  }
  if (args.fence_count == 0 || args.fence_count > kMaxFences) {
    return log.Reject(EINVAL,
                      "WAIT: fence_count %u must lie in [1, %u] "
                      "(DRM_LNPU_PARAM_MAX_IN_FENCES)",
                      args.fence_count, kMaxFences);
  }
  if (args.fences == 0) {
    return log.Reject(EFAULT, "WAIT: fences is null");
  }
  // Null entries completed without error before the lookup.
  std::array<std::shared_ptr<Fence>, kMaxFences> fences;
  const uint64_t* ids = UserArray<uint64_t>(args.fences);
  const uint32_t count = args.fence_count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t i = 0; i < count; ++i) {
      if (!LookupFence(ids[i], &fences[i])) {
        return log.Reject(ENOENT,
                          "WAIT: fences[%u] = %u was not issued by this file",
                          i, ids[i]);
      }
    }
  }
  auto is_signalled = [&](uint32_t i) {
    return fences[i] == nullptr || fences[i]->signalled();
  };
  auto error_of = [&](uint32_t i) {
    return fences[i] == nullptr ? 0 : fences[i]->error();
  };
  const bool any = (args.flags & DRM_LNPU_WAIT_ANY) != 0;
  uint32_t signalled = 0;
  const auto done = [&] {
    for (uint32_t i = 0; i < count; ++i) {
      if (is_signalled(i) == any) {
        signalled = i;
        return any;
      }
    }
    return !any;
  };
  const MonotonicClock::time_point deadline{
      std::chrono::nanoseconds(args.timeout_ns)};
  // While it polls, the waiter runs each job of its file that may start on
  // an idle engine, rather than waking the engine's worker and then being
  // woken by it (Engine): the head job at once, and a job chained on one
  // another thread runs (the DMA job of a decode step after its compute
  // job) as soon as its in-fence signals. Other files' jobs are left to the
  // engines' workers.
  // Only when the deadline is further away than the job timeout, which
  // bounds a job: a short wait must not overrun its deadline by running one.
  MonotonicClock::duration spin = kWaitSpin;
  const auto job_timeout = std::chrono::milliseconds(device_->options().job_timeout_ms);
  if (deadline - MonotonicClock::now() > job_timeout) {
    MonotonicClock::time_point spin_end = MonotonicClock::now() + kWaitSpin;
    while (!done()) {
      if (device_->RunNextJob(*context_)) {
        spin_end = MonotonicClock::now() + kWaitSpin;
        continue;
      }
      if (MonotonicClock::now() >= spin_end) break;
      WaitQueue::RelaxBetweenPolls();
    }
    spin = MonotonicClock::duration::zero();
  }
  if (!context_->fence_waiters.WaitUntil(done, spin, deadline)) {
    return ETIMEDOUT;
  }
  int job_error = 0;
  if (any) {
    job_error = error_of(signalled);
  } else {
    signalled = 0;
    for (uint32_t i = 0; i < count && job_error == 0; ++i) {
      job_error = error_of(i);
    }
  }
  args.job_error = job_error;
  args.signalled = signalled;
  return 0;
}

bool SoftNpuFile::LookupFence(uint64_t id, std::shared_ptr<Fence>* fence) {
  if (id == 0 || id >= next_fence_) return false;
  if (id >= first_unretired_fence_) {
    *fence = unretired_fences_[id - first_unretired_fence_];
    return true;
  }
  auto it = failed_fences_.find(id);
  *fence = it == failed_fences_.end() ? nullptr : it->second;
  return true;
}

void SoftNpuFile::RetireSignalledFences() {
  while (!unretired_fences_.empty() && unretired_fences_.front()->signalled()) {
    if (unretired_fences_.front()->error() != 0) {
      failed_fences_.emplace(first_unretired_fence_,
                             std::move(unretired_fences_.front()));
    }
    unretired_fences_.pop_front();
    ++first_unretired_fence_;
  }
}

}  // namespace lnpu::softnpu
