#include "kernel_iface/softnpu/engine.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lnpu::softnpu {
namespace {

// Recycled job objects kept per engine; more than the usual queue depth.
constexpr size_t kMaxFreeJobs = 32;

// Watchdog periods without a running job before the watchdog sleeps until
// the next job starts.
constexpr int kIdlePeriodsBeforeSleep = 2;

MonotonicClock::duration WatchdogPeriod(MonotonicClock::duration timeout) {
  return std::clamp<MonotonicClock::duration>(
      timeout / 4, std::chrono::milliseconds(1), std::chrono::seconds(1));
}

int64_t Milliseconds(MonotonicClock::duration duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration)
      .count();
}

// Records the commands `group` (the first is command `index` of `job`),
// which ran together from `start` to `end`: consecutive intervals that
// divide [start, end] in proportion to CommandGroupShare.
void ProfileGroup(Job& job, uint32_t index, absl::Span<const lnpu_cmd_header* const> group,
                  MonotonicClock::time_point start, MonotonicClock::time_point end) {
  uint64_t total = 0;
  for (const lnpu_cmd_header* command : group) total += CommandGroupShare(*command);
  const double per_share = static_cast<double>((end - start).count()) / static_cast<double>(total);
  uint64_t done = 0;
  MonotonicClock::time_point from = start;
  for (size_t i = 0; i < group.size(); ++i) {
    done += CommandGroupShare(*group[i]);
    const MonotonicClock::time_point to =
        i + 1 == group.size()
            ? end
            : start + MonotonicClock::duration(static_cast<MonotonicClock::rep>(
                          per_share * static_cast<double>(done)));
    job.ProfileCommand(index + static_cast<uint32_t>(i), from, to);
    from = to;
  }
}

}  // namespace

const char* EngineName(uint32_t id) {
  return id == DRM_LNPU_ENGINE_DMA ? "dma" : "compute";
}

Engine::Engine(uint32_t id, int threads, MonotonicClock::duration job_timeout,
               MonotonicClock::duration start_delay, Doorbell doorbell,
               DiagnosticLog& log, JobCounters& counters,
               std::function<void(const FileContext* waiter)> on_fence_signalled)
    : id_(id),
      name_(EngineName(id)),
      job_timeout_(job_timeout),
      start_delay_(start_delay),
      watchdog_period_(WatchdogPeriod(job_timeout)),
      log_(log),
      counters_(counters),
      on_fence_signalled_(std::move(on_fence_signalled)),
      compute_(threads),
      doorbell_(std::move(doorbell)),
      worker_([this] { Run(); }),
      watchdog_([this] { Watch(); }) {}

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
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(job));
  // The submitter most likely waits for it next.
  ScheduleHeadLocked(start_delay_);
}

void Engine::Pause() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = true;
}

void Engine::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = false;
  // Its waiters may have given up polling meanwhile.
  ScheduleHeadLocked(MonotonicClock::duration::zero());
}

void Engine::InjectFaults(FaultInjection::Kind kind, uint32_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  injections_.emplace_back(kind, count);
  injected_jobs_.fetch_add(count, std::memory_order_relaxed);
}

void Engine::ScheduleForFences(const FileContext* waiter) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waiting_for_fences_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(mu_);
    // The waiter that ran the signalling job goes on with the head job if
    // it is of its file.
    ScheduleHeadLocked(waiter != nullptr && !queue_.empty() &&
                               &queue_.front()->context() == waiter
                           ? start_delay_
                           : MonotonicClock::duration::zero());
  }
}

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_.store(true, std::memory_order_relaxed);
  }
  doorbell_.Ring();
  {
    // Orders the wake-up after a hung job's or the watchdog's check of
    // stopping_, so that it cannot be lost.
    std::lock_guard<std::mutex> lock(run_mu_);
  }
  run_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  {
    // A waiter running a job (RunNextJob) finishes it: stopping_ aborts it
    // at its next command, the notify above releases a hung one.
    std::lock_guard<std::mutex> exec(exec_mu_);
  }
  if (watchdog_.joinable()) watchdog_.join();
  std::deque<std::unique_ptr<Job>> cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled.swap(queue_);
  }
  for (std::unique_ptr<Job>& job : cancelled) {
    job->ClearProfile(id_);
    Finish(std::move(job), Outcome::kCancelled, {}, nullptr);
  }
}

void Engine::Run() {
  // "lnpu-compute" or "lnpu-dma" in top -H, perf and debuggers.
  pthread_setname_np(pthread_self(), absl::StrCat("lnpu-", name_).c_str());
  while (!stopping_.load(std::memory_order_relaxed)) {
    doorbell_.Wait();
    RunDueJobs();
  }
}

void Engine::RunDueJobs() {
  // A waiter may hold it (running a job, or looking for one of its file).
  std::lock_guard<std::mutex> exec(exec_mu_);
  Taker taker = Taker::kWorkerIfDue;
  while (std::unique_ptr<Job> job = TakeStartableJob(taker)) {
    RunAndFinish(std::move(job), nullptr);
    taker = Taker::kWorkerAtOnce;
  }
}

bool Engine::RunNextJob(const FileContext& context) {
  std::unique_lock<std::mutex> exec(exec_mu_, std::try_to_lock);
  if (!exec.owns_lock()) return false;
  std::unique_ptr<Job> job = TakeStartableJob(Taker::kWaiter, &context);
  if (job == nullptr) return false;
  RunAndFinish(std::move(job), &context);
  return true;
}

std::unique_ptr<Job> Engine::TakeStartableJob(Taker taker, const FileContext* context) {
  std::lock_guard<std::mutex> lock(mu_);
  const MonotonicClock::time_point now =
      taker == Taker::kWorkerIfDue ? MonotonicClock::now() : MonotonicClock::time_point{};
  if (taker == Taker::kWorkerIfDue && bell_at_ <= now) {
    bell_at_ = MonotonicClock::time_point::max();  // the doorbell rang
  }
  if (stopping_.load(std::memory_order_relaxed) || paused_ || queue_.empty() ||
      (taker == Taker::kWaiter && &queue_.front()->context() != context) ||
      (taker == Taker::kWorkerIfDue && now < head_due_) ||
      !queue_.front()->InFencesSignalled()) {
    ScheduleHeadLocked(start_delay_);
    return nullptr;
  }
  std::unique_ptr<Job> job = std::move(queue_.front());
  queue_.pop_front();
  job_running_ = true;
  head_due_ = MonotonicClock::time_point::max();
  // The bell was for this job: a spurious ring would take a core from the
  // job's compute threads.
  if (bell_at_ != MonotonicClock::time_point::max()) {
    doorbell_.Cancel();
    bell_at_ = MonotonicClock::time_point::max();
  }
  return job;
}

void Engine::ScheduleHeadLocked(MonotonicClock::duration delay) {
  waiting_for_fences_.store(false, std::memory_order_relaxed);
  if (job_running_ || paused_ || queue_.empty() || stopping_.load(std::memory_order_relaxed)) {
    return;
  }
  waiting_for_fences_.store(true, std::memory_order_relaxed);
  // Pairs with ScheduleForFences(): either the signaller sees the flag or
  // this check sees the signalled fence.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!queue_.front()->InFencesSignalled()) return;
  waiting_for_fences_.store(false, std::memory_order_relaxed);
  // Kept from the first time this head could start (a pause between does
  // not postpone it).
  const MonotonicClock::time_point now = MonotonicClock::now();
  if (head_due_ == MonotonicClock::time_point::max()) head_due_ = now + delay;
  // A bell that rings no later stays (the worker then finds the head not
  // due and sets the bell again).
  if (bell_at_ <= head_due_) return;
  if (head_due_ <= now) {
    doorbell_.Ring();
  } else {
    doorbell_.RingAt(head_due_);
  }
  bell_at_ = head_due_;
}

void Engine::RunAndFinish(std::unique_ptr<Job> job, const FileContext* waiter) {
  job->ClearProfile(id_);
  MonotonicClock::duration busy{};
  const Outcome outcome = job->context().banned.load(std::memory_order_relaxed) ||
                                  job->InFenceError() != 0
                              ? Outcome::kCancelled
                              : RunJob(*job, &busy);
  Finish(std::move(job), outcome, busy, waiter);
  std::lock_guard<std::mutex> lock(mu_);
  job_running_ = false;
  // The worker goes on with the next job itself (RunDueJobs).
  if (waiter == nullptr) return;
  // A waiter goes on with the next job only if it is of its file.
  ScheduleHeadLocked(!queue_.empty() && &queue_.front()->context() == waiter
                         ? start_delay_
                         : MonotonicClock::duration::zero());
}

bool Engine::TakeInjection(FaultInjection::Kind* kind) {
  if (injected_jobs_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (injections_.empty()) return false;
  *kind = injections_.front().first;
  if (--injections_.front().second == 0) injections_.pop_front();
  injected_jobs_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

Engine::Outcome Engine::RunJob(Job& job, MonotonicClock::duration* busy) {
  const MonotonicClock::time_point start = MonotonicClock::now();
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    running_ = true;
    run_start_ = start;
    run_context_ = &job.context();
    run_command_count_ = job.command_count();
    run_command_.store(0, std::memory_order_relaxed);
    if (watchdog_sleeping_) run_cv_.notify_all();
  }
  FaultInjection::Kind injected;
  Outcome outcome;
  if (!TakeInjection(&injected)) {
    outcome = Execute(job);
  } else if (injected == FaultInjection::Kind::kHang) {
    Hang();
    outcome = Outcome::kCancelled;  // kTimedOut below unless stopping
  } else {
    log_.RecordFault(absl::StrFormat(
        "%s engine: injected fault at command 0 of %u; the job faulted",
        name_, job.command_count()));
    outcome = Outcome::kFaulted;
  }
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    // The watchdog banned the job's file: whatever the job did, it ends as
    // timed out.
    if (abort_requested_.load(std::memory_order_relaxed)) {
      outcome = Outcome::kTimedOut;
    }
    abort_requested_.store(false, std::memory_order_relaxed);
    running_ = false;
    run_context_ = nullptr;
  }
  const MonotonicClock::time_point end = MonotonicClock::now();
  job.ProfileJob(start, end);
  *busy = end - start;
  return outcome;
}

Engine::Outcome Engine::Execute(Job& job) {
  const bool profiled = job.profiled();
  uint32_t index = 0;
  for (uint32_t offset = 0; offset < job.command_bytes(); ++index) {
    if (abort_requested_.load(std::memory_order_relaxed)) {
      return Outcome::kTimedOut;
    }
    if (stopping_.load(std::memory_order_relaxed)) {
      log_.RecordFault(absl::StrFormat(
          "%s engine: job aborted at command %u of %u: the device is "
          "shutting down",
          name_, index, job.command_count()));
      return Outcome::kCancelled;
    }
    run_command_.store(index, std::memory_order_relaxed);
    const uint32_t count = job.group_size(index);
    std::array<const lnpu_cmd_header*, kMaxCommandGroup> group;
    for (uint32_t i = 0; i < count; ++i) {
      group[i] = &job.command_at(offset);
      offset += group[i]->size;
    }
    const absl::Span<const lnpu_cmd_header* const> commands(group.data(), count);
    const MonotonicClock::time_point start =
        profiled ? MonotonicClock::now() : MonotonicClock::time_point{};
    const absl::Status status = ExecuteCommandGroup(commands, job, compute_);
    if (profiled) ProfileGroup(job, index, commands, start, MonotonicClock::now());
    if (!status.ok()) {
      log_.RecordFault(absl::StrFormat(
          "%s engine: job faulted at command %u of %u (opcode %u): %s", name_,
          index, job.command_count(), group[0]->opcode, status.message()));
      return Outcome::kFaulted;
    }
    index += count - 1;
  }
  return Outcome::kCompleted;
}

void Engine::Hang() {
  std::unique_lock<std::mutex> lock(run_mu_);
  run_cv_.wait(lock, [this] {
    return abort_requested_.load(std::memory_order_relaxed) ||
           stopping_.load(std::memory_order_relaxed);
  });
}

void Engine::Watch() {
  pthread_setname_np(pthread_self(), absl::StrCat("lnpu-", name_, "-wd").c_str());
  std::unique_lock<std::mutex> lock(run_mu_);
  int idle_periods = 0;
  while (!stopping_.load(std::memory_order_relaxed)) {
    const MonotonicClock::time_point now = MonotonicClock::now();
    MonotonicClock::time_point wake = now + watchdog_period_;
    if (running_ && !abort_requested_.load(std::memory_order_relaxed)) {
      idle_periods = 0;
      const MonotonicClock::time_point deadline = run_start_ + job_timeout_;
      if (now >= deadline) {
        ResetLocked();
      } else {
        wake = std::min(wake, deadline);
      }
    } else if (!running_ && ++idle_periods > kIdlePeriodsBeforeSleep) {
      watchdog_sleeping_ = true;
      run_cv_.wait(lock, [this] {
        return running_ || stopping_.load(std::memory_order_relaxed);
      });
      watchdog_sleeping_ = false;
      idle_periods = 0;
      continue;
    }
    run_cv_.wait_until(lock, wake);
  }
}

void Engine::ResetLocked() {
  abort_requested_.store(true, std::memory_order_relaxed);
  run_context_->banned.store(true, std::memory_order_relaxed);
  log_.RecordFault(absl::StrFormat(
      "%s engine: job exceeded the job timeout of %d ms at command %u of %u; "
      "engine reset, job aborted and its file banned (open the device "
      "again; split long streams into several jobs)",
      name_, Milliseconds(job_timeout_),
      run_command_.load(std::memory_order_relaxed), run_command_count_));
  run_cv_.notify_all();  // releases a hung engine
}

void Engine::Finish(std::unique_ptr<Job> job, Outcome outcome,
                    MonotonicClock::duration busy, const FileContext* waiter) {
  std::shared_ptr<FileContext> context = job->TakeContext();
  std::shared_ptr<Fence> fence = job->TakeFence();
  context->busy_ns[id_].fetch_add(
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(busy).count()),
      std::memory_order_relaxed);
  int error = -ECANCELED;
  switch (outcome) {
    case Outcome::kCompleted:
      error = 0;
      counters_.completed.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::kFaulted:
      error = -EIO;
      counters_.faulted.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::kTimedOut:
      counters_.timed_out.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::kCancelled:
      counters_.cancelled.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  // Buffers are released before the fence signals, so that a waiter sees
  // the memory of buffers it already closed returned.
  RecycleJob(std::move(job));
  fence->Signal(error);
  context->fence_waiters.WakeAll();
  on_fence_signalled_(waiter);
}

}  // namespace lnpu::softnpu
