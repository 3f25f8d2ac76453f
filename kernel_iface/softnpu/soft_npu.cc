#include "kernel_iface/softnpu/soft_npu.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "kernel_iface/softnpu/buffer_object.h"
#include "kernel_iface/softnpu/diagnostic_log.h"
#include "kernel_iface/softnpu/engine.h"
#include "kernel_iface/softnpu/soft_npu_file.h"

namespace lnpu::softnpu {
namespace {

constexpr uint64_t kMaxMemoryBytes = uint64_t{1} << 48;
constexpr uint32_t kMaxJobTimeoutMs = 3'600'000;
constexpr int kMaxComputeThreads = 1024;
constexpr uint32_t kMaxStartDelayUs = 1'000'000;

[[noreturn]] void Die(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "softnpu: %s: %s\n", what,
               std::string(status.message()).c_str());
  std::abort();
}

SoftNpuOptions Resolve(SoftNpuOptions options) {
  if (options.compute_threads == 0) {
    options.compute_threads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  return options;
}

// Reads the integer environment variable `name` into *value if it is set,
// parses and lies in [min, max]; else reports why on stderr and leaves
// *value alone.
template <typename T>
void ReadEnv(const char* name, T min, T max, T* value) {
  const char* text = std::getenv(name);
  if (text == nullptr) return;
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(text, &parsed) || parsed < static_cast<int64_t>(min) ||
      parsed > static_cast<int64_t>(max)) {
    std::fprintf(stderr,
                 "softnpu: ignoring %s=\"%s\": expected an integer in "
                 "[%lld, %lld]; using %lld\n",
                 name, text, static_cast<long long>(min),
                 static_cast<long long>(max), static_cast<long long>(*value));
    return;
  }
  *value = static_cast<T>(parsed);
}

}  // namespace

absl::Status SoftNpuOptions::Validate() const {
  if (memory_bytes < kBufferAlignment || memory_bytes > kMaxMemoryBytes ||
      memory_bytes % kBufferAlignment != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "memory_bytes %u must be a multiple of %u in [%u, %u]", memory_bytes,
        kBufferAlignment, kBufferAlignment, kMaxMemoryBytes));
  }
  if (job_timeout_ms < 1 || job_timeout_ms > kMaxJobTimeoutMs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("job_timeout_ms %u must lie in [1, %u]",
                        job_timeout_ms, kMaxJobTimeoutMs));
  }
  if (compute_threads < 0 || compute_threads > kMaxComputeThreads) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "compute_threads %d must lie in [0, %d] (0: one per CPU)",
        compute_threads, kMaxComputeThreads));
  }
  if (start_delay_us > kMaxStartDelayUs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "start_delay_us %u must lie in [0, %u]", start_delay_us, kMaxStartDelayUs));
  }
  return absl::OkStatus();
}

std::shared_ptr<SoftNpu> SoftNpu::Create(const SoftNpuOptions& options) {
  if (absl::Status status = options.Validate(); !status.ok()) {
    Die("invalid SoftNpuOptions", status);
  }
  return std::shared_ptr<SoftNpu>(new SoftNpu(options));
}

std::shared_ptr<SoftNpu> SoftNpu::Default() {
  // Leaked on purpose: the device must outlive every static that may still
  // hold an open file at exit.
  static const std::shared_ptr<SoftNpu>* const instance = [] {
    SoftNpuOptions options;
    uint64_t memory_mb = options.memory_bytes >> 20;
    ReadEnv<uint64_t>("LNPU_SOFTNPU_MEMORY_MB", 1, kMaxMemoryBytes >> 20,
                      &memory_mb);
    options.memory_bytes = memory_mb << 20;
    ReadEnv<int>("LNPU_SOFTNPU_THREADS", 0, kMaxComputeThreads,
                 &options.compute_threads);
    ReadEnv<uint32_t>("LNPU_SOFTNPU_JOB_TIMEOUT_MS", 1, kMaxJobTimeoutMs,
                      &options.job_timeout_ms);
    auto* device = new std::shared_ptr<SoftNpu>(Create(options));
    if (const char* fail = std::getenv("LNPU_SOFTNPU_FAIL")) {
      absl::StatusOr<std::vector<FaultInjection>> injections =
          ParseFaultInjections(fail);
      if (!injections.ok()) {
        std::fprintf(stderr, "softnpu: ignoring LNPU_SOFTNPU_FAIL: %s\n",
                     std::string(injections.status().message()).c_str());
      } else {
        for (const FaultInjection& injection : *injections) {
          // Parsed injections always validate.
          (*device)->InjectFault(injection).IgnoreError();
        }
      }
    }
    return device;
  }();
  return *instance;
}

SoftNpu::SoftNpu(const SoftNpuOptions& options)
    : options_(Resolve(options)),
      log_(std::make_unique<DiagnosticLog>()),
      memory_(std::make_shared<DeviceMemory>(options.memory_bytes)) {
  const auto timeout = std::chrono::milliseconds(options_.job_timeout_ms);
  const auto start_delay = std::chrono::microseconds(options_.start_delay_us);
  auto schedule_engines = [this](const FileContext* waiter) {
    for (const std::unique_ptr<Engine>& engine : engines_) {
      engine->ScheduleForFences(waiter);
    }
  };
  for (const uint32_t id : {DRM_LNPU_ENGINE_COMPUTE, DRM_LNPU_ENGINE_DMA}) {
    absl::StatusOr<Doorbell> doorbell = Doorbell::Create();
    if (!doorbell.ok()) Die("cannot create the device", doorbell.status());
    engines_[id] = std::make_unique<Engine>(
        id, id == DRM_LNPU_ENGINE_COMPUTE ? options_.compute_threads : 1, timeout,
        start_delay, *std::move(doorbell), *log_, counters_, schedule_engines);
  }
}

SoftNpu::~SoftNpu() {
  // Stop every worker before destroying any engine: cancelling queued jobs
  // wakes all engines.
  for (const std::unique_ptr<Engine>& engine : engines_) engine->Stop();
}

std::unique_ptr<KernelFile> SoftNpu::Open() {
  return std::make_unique<SoftNpuFile>(
      shared_from_this(),
      next_client_id_.fetch_add(1, std::memory_order_relaxed));
}

absl::Status SoftNpu::InjectFault(const FaultInjection& injection) {
  if (absl::Status status = injection.Validate(); !status.ok()) {
    return status;
  }
  engines_[injection.engine]->InjectFaults(injection.kind, injection.count);
  return absl::OkStatus();
}

void SoftNpu::PauseEngine(uint32_t engine) {
  ControlledEngine(engine, "PauseEngine").Pause();
}

void SoftNpu::ResumeEngine(uint32_t engine) {
  ControlledEngine(engine, "ResumeEngine").Resume();
}

bool SoftNpu::RunNextJob(const FileContext& context) {
  bool ran = false;
  for (const std::unique_ptr<Engine>& engine : engines_) ran |= engine->RunNextJob(context);
  return ran;
}

Engine& SoftNpu::ControlledEngine(uint32_t engine, const char* control) {
  if (engine >= DRM_LNPU_ENGINE_COUNT) {
    Die(control, absl::InvalidArgumentError(absl::StrFormat(
                     "engine %u is not a DRM_LNPU_ENGINE_*", engine)));
  }
  return *engines_[engine];
}

uint64_t SoftNpu::memory_used() const { return memory_->used(); }

uint64_t SoftNpu::memory_imported() const { return memory_->imported(); }

uint64_t SoftNpu::reset_count() const {
  return counters_.timed_out.load(std::memory_order_relaxed);
}

std::string SoftNpu::last_fault_message() const { return log_->last_fault(); }

std::string SoftNpu::last_rejection_message() const {
  return log_->last_rejection();
}

}  // namespace lnpu::softnpu
