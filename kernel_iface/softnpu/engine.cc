#include "kernel_iface/softnpu/engine.h"

#include <cerrno>
#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace lnpu::softnpu {
namespace {

// How long an idle engine polls its queue before sleeping. A decode step
// submits its next jobs a few tens of microseconds after the previous ones
// finished; catching them while polling saves a thread wake-up per job.
constexpr MonotonicClock::duration kIdleSpin = std::chrono::microseconds(50);

// Recycled job objects kept per engine; more than the usual queue depth.
constexpr size_t kMaxFreeJobs = 32;

const char* EngineName(uint32_t id) {
  return id == DRM_LNPU_ENGINE_DMA ? "DMA" : "compute";
}

}  // namespace

Engine::Engine(uint32_t id, int threads, MonotonicClock::duration job_timeout,
               DiagnosticLog& log, std::function<void()> on_fence_signalled)
    : name_(EngineName(id)),
      job_timeout_(job_timeout),
      log_(log),
      on_fence_signalled_(std::move(on_fence_signalled)),
      compute_(threads),
      worker_([this] { Run(); }) {}

Engine::~Engine() { Stop(); }

std::unique_ptr<Job> Engine::AcquireJob() {
  {
    std::lock_guard<std::mutex> lock(free_mu_);
    if (!free_jobs_.empty()) {
      std::unique_ptr<Job> job = std::move(free_jobs_.back());
      free_jobs_.pop_back();
      return job;
    }
  }
  return std::make_unique<Job>();
}

void Engine::RecycleJob(std::unique_ptr<Job> job) {
  job->Clear();
  std::lock_guard<std::mutex> lock(free_mu_);
  if (free_jobs_.size() < kMaxFreeJobs) free_jobs_.push_back(std::move(job));
}

void Engine::Push(std::unique_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  queue_waiters_.WakeAll();
}

void Engine::Pause() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = true;
}

void Engine::Resume() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = false;
  }
  queue_waiters_.WakeAll();
}

void Engine::WakeForFences() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waiting_for_fences_.load(std::memory_order_relaxed)) {
    queue_waiters_.WakeAll();
  }
}

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_.store(true, std::memory_order_relaxed);
  }
  queue_waiters_.WakeAll();
  if (worker_.joinable()) worker_.join();
  std::deque<std::unique_ptr<Job>> cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled.swap(queue_);
  }
  for (std::unique_ptr<Job>& job : cancelled)
    Finish(std::move(job), -ECANCELED);
}

void Engine::Run() {
  while (std::unique_ptr<Job> job = NextJob()) {
    const int error = Execute(*job);
    Finish(std::move(job), error);
  }
}

std::unique_ptr<Job> Engine::NextJob() {
  std::unique_ptr<Job> job;
  queue_waiters_.WaitUntil(
      [&] {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_.load(std::memory_order_relaxed)) return true;
        if (paused_ || queue_.empty()) {
          waiting_for_fences_.store(false, std::memory_order_relaxed);
          return false;
        }
        waiting_for_fences_.store(true, std::memory_order_relaxed);
        // Pairs with WakeForFences(): either the signaller sees the flag or
        // this check sees the signalled fence.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!queue_.front()->InFencesSignalled()) return false;
        waiting_for_fences_.store(false, std::memory_order_relaxed);
        job = std::move(queue_.front());
        queue_.pop_front();
        return true;
      },
      kIdleSpin, MonotonicClock::time_point::max());
  return job;
}

int Engine::Execute(Job& job) {
  if (job.context().banned.load(std::memory_order_relaxed)) return -ECANCELED;
  if (job.InFenceError() != 0) return -ECANCELED;
  const MonotonicClock::time_point start = MonotonicClock::now();
  uint32_t index = 0;
  for (uint32_t offset = 0; offset < job.command_bytes(); ++index) {
    if (stopping_.load(std::memory_order_relaxed)) {
      log_.RecordFault(absl::StrFormat(
          "%s engine: job aborted at command %u of %u: the device is "
          "shutting down",
          name_, index, job.command_count()));
      return -ECANCELED;
    }
    const lnpu_cmd_header& command = job.command_at(offset);
    const absl::Status status = ExecuteCommand(command, job, compute_);
    if (!status.ok()) {
      log_.RecordFault(absl::StrFormat(
          "%s engine: job faulted at command %u of %u (opcode %u): %s", name_,
          index, job.command_count(), command.opcode, status.message()));
      return -EIO;
    }
    offset += command.size;
    if (offset < job.command_bytes() &&
        MonotonicClock::now() - start > job_timeout_) {
      job.context().banned.store(true, std::memory_order_relaxed);
      resets_.fetch_add(1, std::memory_order_relaxed);
      log_.RecordFault(absl::StrFormat(
          "%s engine: job exceeded the job timeout of %d ms after %u of %u "
          "commands; aborted, engine reset, and its file banned (open the "
          "device again; split long streams into several jobs)",
          name_,
          std::chrono::duration_cast<std::chrono::milliseconds>(job_timeout_)
              .count(),
          index + 1, job.command_count()));
      return -ECANCELED;
    }
  }
  return 0;
}

void Engine::Finish(std::unique_ptr<Job> job, int error) {
  std::shared_ptr<FileContext> context = job->TakeContext();
  std::shared_ptr<Fence> fence = job->TakeFence();
  // Buffers are released before the fence signals, so that a waiter sees
  // the memory of buffers it already closed returned.
  RecycleJob(std::move(job));
  fence->Signal(error);
  context->fence_waiters.WakeAll();
  on_fence_signalled_();
}

}  // namespace lnpu::softnpu
