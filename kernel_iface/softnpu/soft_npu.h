// The software NPU: an in-process device that serves the lnpu UAPI
// (kernel_iface/uapi/drm/lnpu_accel.h) as strictly as a Linux accel kernel
// driver, and the default device of the stack when no NPU node exists.
//
//   auto npu = lnpu::softnpu::SoftNpu::Default();
//   std::unique_ptr<lnpu::KernelFile> file = npu->Open();
//   file->Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create);
//
// Structure (one concern per file, as in drivers/accel): soft_npu (the
// device), soft_npu_file (an open file: handle, mapping and fence tables,
// ioctl handlers), buffer_object (buffers, device memory accounting), job
// (submit snapshot and validation), engine (queues and worker threads),
// fence, wait_queue, diagnostic_log, job_counters, fault_injection,
// user_memory (USERPTR checks); commands themselves are validated and
// executed by compute/command_set.h.
//
// Usage figures: GET_PARAM reports device-wide counters; each file's
// KernelFile::FdInfo() reports its own, in the keys Linux DRM drivers
// publish in /proc/<pid>/fdinfo (docs/uapi.md lists them).
//
// Lifetime: every open file holds the device, so the device lives while any
// file is open. Closing a file (destroying its KernelFile) frees everything
// it owns, including its mappings (unlike mmap(2), a mapping does not
// outlive its file). Jobs of a closed file still run, and a buffer that a
// queued or running job uses stays alive until the job ends. Destroying the
// device (when its last file closes and no SoftNpu reference remains)
// cancels the jobs still queued.
//
// Thread-safety: SoftNpu and its files may be used from any number of
// threads at once.
#ifndef KERNEL_IFACE_SOFTNPU_SOFT_NPU_H_
#define KERNEL_IFACE_SOFTNPU_SOFT_NPU_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kernel_iface/driver/kernel_file.h"
#include "kernel_iface/softnpu/fault_injection.h"
#include "kernel_iface/softnpu/file_context.h"
#include "kernel_iface/softnpu/job_counters.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {

class DeviceMemory;
class DiagnosticLog;
class Engine;

// Limits the device reports through DRM_IOCTL_LNPU_GET_PARAM.
inline constexpr uint64_t kSoftNpuDeviceId = 0x534e5055;  // "SNPU"
inline constexpr uint32_t kMaxCommandBytes = 1u << 20;   // MAX_CMD_SIZE
inline constexpr uint32_t kMaxJobBuffers = 4096;         // MAX_JOB_BOS
inline constexpr uint32_t kMaxFences = 32;               // MAX_IN_FENCES

struct SoftNpuOptions {
  // Device memory capacity in bytes: a multiple of 4096, at least 4096 and
  // at most 2^48.
  uint64_t memory_bytes = 4ull << 30;
  // A running job exceeding it is aborted (-ECANCELED) and its file banned
  // (later submits: ECANCELED). 1 .. 3'600'000.
  uint32_t job_timeout_ms = 5000;
  // Compute-engine worker threads; 0 = std::thread::hardware_concurrency().
  // 0 .. 1024.
  int compute_threads = 0;
  // How long an idle engine leaves a job that may start to a thread of its
  // file that waits for it (WAIT runs it on that thread) before the
  // engine's own worker starts it: the doorbell latency of this model
  // (Engine). 0 .. 1'000'000. The default is longer than a scheduler tick
  // (4 ms at HZ=250), so that setting and cancelling the doorbell's timer
  // for each job leaves the timer hardware alone. At 1 ms each set and
  // cancel reprogrammed it (a VM exit in a VM): stories260K decoded 15-22%
  // slower than with the wake-ups this replaced, on a 2-vCPU VM; left set
  // instead, the timer rang inside qwen2.5-0.5b's decode steps.
  uint32_t start_delay_us = 5000;
  // Reports DRM_LNPU_CAP_PROFILING and fills the profile BO of a SUBMIT
  // with DRM_LNPU_SUBMIT_PROFILE. false models a device without command
  // timestamps (the kernel module): the flag is refused with EOPNOTSUPP.
  bool profiling = true;

  // OK, or InvalidArgument naming the field outside its range.
  absl::Status Validate() const;
};

class SoftNpu : public std::enable_shared_from_this<SoftNpu> {
 public:
  // A new device. `options` must pass Validate(); a device cannot be built
  // from invalid options, so this terminates the process with the reason
  // (check user-supplied options with Validate() first).
  static std::shared_ptr<SoftNpu> Create(const SoftNpuOptions& options);

  // The process-wide device, created on first use and never destroyed.
  // Options come from the environment: LNPU_SOFTNPU_MEMORY_MB (device
  // memory in MiB), LNPU_SOFTNPU_THREADS (compute threads) and
  // LNPU_SOFTNPU_JOB_TIMEOUT_MS; LNPU_SOFTNPU_FAIL injects faults (syntax of
  // ParseFaultInjections, e.g. "hang:compute:1"). A value that does not
  // parse or is out of range is reported on stderr and ignored.
  static std::shared_ptr<SoftNpu> Default();

  ~SoftNpu();
  SoftNpu(const SoftNpu&) = delete;
  SoftNpu& operator=(const SoftNpu&) = delete;

  // A new open file of this device.
  std::unique_ptr<KernelFile> Open();

  // Test and diagnostic controls (a driver's debugfs). A paused engine
  // starts no job (a running one finishes) and keeps its queue, so waits
  // time out deterministically. `engine` is a DRM_LNPU_ENGINE_*; another
  // value terminates the process.
  void PauseEngine(uint32_t engine);
  void ResumeEngine(uint32_t engine);

  // Fault injection (ivpu's fail_hw): the next `injection.count` jobs that
  // start on `injection.engine` hang or fault; see FaultInjection.
  // Injections queue up in call order. InvalidArgument (and nothing
  // injected) if `injection` fails Validate().
  absl::Status InjectFault(const FaultInjection& injection);

  // The options in effect (compute_threads resolved to the actual count).
  const SoftNpuOptions& options() const { return options_; }
  // Bytes of device memory held by live buffers, all files.
  uint64_t memory_used() const;
  // Bytes of user memory wrapped by live USERPTR buffers, all files.
  uint64_t memory_imported() const;
  // Engine resets after job timeouts (and hangs), since creation.
  uint64_t reset_count() const;
  // Job counters since creation (DRM_LNPU_PARAM_JOBS_*).
  const JobCounters& job_counters() const { return counters_; }
  // Why the latest job faulted or was aborted, "" if none did.
  std::string last_fault_message() const;
  // Why the latest rejected ioctl failed, "" if none was rejected. With
  // LNPU_SOFTNPU_DEBUG=1 every rejection and fault is also printed to stderr.
  std::string last_rejection_message() const;

 private:
  friend class SoftNpuFile;
  explicit SoftNpu(const SoftNpuOptions& options);
  // The engine a debug control names; terminates on an invalid id.
  Engine& ControlledEngine(uint32_t engine, const char* control);
  // Runs, on the calling thread, one queued job of `context` that may
  // start now on some engine (Engine::RunNextJob); returns whether it ran
  // one.
  bool RunNextJob(const FileContext& context);

  const SoftNpuOptions options_;
  const std::unique_ptr<DiagnosticLog> log_;
  const std::shared_ptr<DeviceMemory> memory_;
  JobCounters counters_;
  // The drm-client-id of the next file opened.
  std::atomic<uint64_t> next_client_id_{1};
  std::array<std::unique_ptr<Engine>, DRM_LNPU_ENGINE_COUNT> engines_;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_SOFT_NPU_H_
