// Engine: one execution engine of the software NPU (DRM_LNPU_ENGINE_*),
// with its job queue, worker thread ("lnpu-compute", "lnpu-dma") and
// job-timeout watchdog ("lnpu-compute-wd", ...) (the scheduler layer).
//
// Jobs run one at a time in FIFO order across all files. The head job
// starts once its in-fences signalled; a job whose in-fence failed, or whose
// file context is banned, is not run and fails with -ECANCELED. A command
// that returns an error faults the job (-EIO).
//
// Timeouts (drm_sched's timedout_job, i915's hangcheck): a watchdog thread
// checks the running job against the job timeout, independently of the
// worker, so it also catches an engine that stopped making progress. On a
// timeout it resets the engine: the job is aborted (-ECANCELED), its file
// context banned and the reset counted; the engine goes on with the next
// queued job. Commands are not preemptible, so a long command finishes
// before the abort takes effect; a hung engine (fault injection) is
// released at once. While jobs run the watchdog wakes at the running job's
// deadline or every quarter timeout, whichever comes first; after two idle
// periods it sleeps until the next job starts.
//
// Who runs a job: the engine's worker thread, or a thread of the job's
// file that waits for a fence (RunNextJob, called from WAIT). Either holds
// exec_mu_ while it takes the head job and runs it, so jobs still run one
// at a time in FIFO order. A waiter that runs the job itself needs no
// wake-up of the worker nor of itself, which on a CPU shared with other
// processes can each cost a scheduler tick.
//
// When the worker starts a job (the doorbell latency of this model): a job
// that may start on an idle engine is left to a waiter of its file for
// `start_delay`, and the worker starts it then (its Doorbell's timer is set
// to that time, which wakes no thread, and cancelled when a waiter takes
// the job); a job that may start when the job before it ends follows at
// once, on the worker if it ran that one, on a waiter if it ran that one
// and the job is of its file, else on the worker woken at once. The
// runtime waits for each step's jobs right after submitting them, so they
// run on the waiting thread and the worker is not woken at all. It used to
// be woken per job (a futex wake, then the woken thread competing with the
// compute threads for the cores); without that, stories260K decodes 7.8%
// faster on a 2-vCPU VM (docs/performance.md, "Engine wake-ups").
//
// Thread-safety: all public methods may be called concurrently, except that
// Stop() and the destructor must not race with Push() or RunNextJob().
#ifndef KERNEL_IFACE_SOFTNPU_ENGINE_H_
#define KERNEL_IFACE_SOFTNPU_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/softnpu/diagnostic_log.h"
#include "kernel_iface/softnpu/doorbell.h"
#include "kernel_iface/softnpu/fault_injection.h"
#include "kernel_iface/softnpu/job.h"
#include "kernel_iface/softnpu/job_counters.h"
#include "kernel_iface/softnpu/wait_queue.h"

namespace lnpu::softnpu {

// The name of engine `id` (a DRM_LNPU_ENGINE_*) in messages and in fdinfo's
// drm-engine-<name> keys: "compute" or "dma".
const char* EngineName(uint32_t id);

class Engine {
 public:
  // `id` is a DRM_LNPU_ENGINE_*; `threads` (>= 1) is the number of compute
  // workers per command; `start_delay` how long an idle engine leaves a job
  // to a waiter (class comment); the worker sleeps on `doorbell`. Every job
  // outcome is counted in `counters`. `on_fence_signalled` runs after each
  // fence the engine signals, on the thread that ran the job, with the file
  // of that thread if it is a waiter (else null), to schedule the head jobs
  // of engines that wait for the fence. Starts the worker and watchdog
  // threads.
  Engine(uint32_t id, int threads, MonotonicClock::duration job_timeout,
         MonotonicClock::duration start_delay, Doorbell doorbell,
         DiagnosticLog& log, JobCounters& counters,
         std::function<void(const FileContext* waiter)> on_fence_signalled);
  // Stop()s.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // An empty job, recycled when possible. Hand it back with Push() or,
  // if the submit is rejected, RecycleJob().
  std::unique_ptr<Job> AcquireJob();
  void RecycleJob(std::unique_ptr<Job> job);

  // Queues an armed job (Job::Arm called).
  void Push(std::unique_ptr<Job> job);

  // While paused the engine starts no job (a running one finishes); queued
  // jobs stay queued. Once Pause() returns, no further job starts.
  void Pause();
  void Resume();

  // The next `count` jobs that start on this engine hang or fault (see
  // FaultInjection::Kind), after the injections queued before.
  void InjectFaults(FaultInjection::Kind kind, uint32_t count);

  // Runs the head job on the calling thread if it is a job of `context`,
  // may start now and no other thread is running a job of this engine;
  // returns whether it ran one. Other files' jobs are left to the engine's
  // worker, so a waiter never spends its time on them. The job runs under
  // the job timeout like any other, so the call can take up to that long
  // (longer for a single long command).
  bool RunNextJob(const FileContext& context);

  // A fence of some file signalled, on a thread that is a waiter of file
  // `waiter` (null: not a waiter): re-check the head job's in-fences. Cheap
  // unless the head job waits for fences.
  void ScheduleForFences(const FileContext* waiter);

  // Stops the worker: a running job is aborted at its next command boundary
  // (a hung one at once) and queued jobs are cancelled, all with
  // -ECANCELED. Idempotent.
  void Stop();

 private:
  enum class Outcome { kCompleted, kFaulted, kTimedOut, kCancelled };

  // The worker thread.
  void Run();
  // The worker's turn after a ring of its doorbell: runs the head job if it
  // is due, then every job that may start after it.
  void RunDueJobs();
  // Which thread takes a job.
  enum class Taker {
    kWaiter,        // RunNextJob's caller: jobs of its file only
    kWorkerIfDue,   // the worker, once the head job's start delay passed
    kWorkerAtOnce,  // the worker, right after it ran the job before
  };
  // Pops the head job if it may start (not stopping or paused, in-fences
  // signalled) and `taker` may take it (of `context` for a waiter); else
  // returns null.
  std::unique_ptr<Job> TakeStartableJob(Taker taker, const FileContext* context = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(exec_mu_);
  // If the head job may start on an idle engine: sets its start time
  // (head_due_), `delay` from now the first time, and the doorbell by
  // then. waiting_for_fences_ when its in-fences hold it back.
  void ScheduleHeadLocked(MonotonicClock::duration delay) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs (or cancels) a taken job and finishes it; the taker is the worker
  // (`waiter` null) or a waiter of file `waiter`.
  void RunAndFinish(std::unique_ptr<Job> job, const FileContext* waiter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(exec_mu_);
  // The injection for the job about to start, if any.
  bool TakeInjection(FaultInjection::Kind* kind);
  // Runs a job that may start, under the watchdog.
  Outcome RunJob(Job& job, MonotonicClock::duration* busy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(exec_mu_);
  Outcome Execute(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(exec_mu_);
  // Blocks like hung hardware until the watchdog resets the engine or the
  // engine stops.
  void Hang();
  // The watchdog thread.
  void Watch();
  // Aborts the running job: it exceeded the job timeout.
  void ResetLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(run_mu_);
  // Counts the outcome, releases the job's resources, then signals its
  // fence.
  void Finish(std::unique_ptr<Job> job, Outcome outcome,
              MonotonicClock::duration busy, const FileContext* waiter);

  const uint32_t id_;
  const char* const name_;
  const MonotonicClock::duration job_timeout_;
  const MonotonicClock::duration start_delay_;
  const MonotonicClock::duration watchdog_period_;
  DiagnosticLog& log_;
  JobCounters& counters_;
  const std::function<void(const FileContext* waiter)> on_fence_signalled_;
  // Held while taking and running a job (see the class comment).
  std::mutex exec_mu_;
  ComputeContext compute_ ABSL_GUARDED_BY(exec_mu_);
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::deque<std::unique_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  // Pending injections in order: kind and jobs left.
  std::deque<std::pair<FaultInjection::Kind, uint32_t>> injections_
      ABSL_GUARDED_BY(mu_);
  // Jobs left in injections_, readable without mu_.
  std::atomic<uint64_t> injected_jobs_{0};
  // A taken job has not finished yet.
  bool job_running_ ABSL_GUARDED_BY(mu_) = false;
  // When the worker may start the head job; max() until it first may.
  MonotonicClock::time_point head_due_ ABSL_GUARDED_BY(mu_) =
      MonotonicClock::time_point::max();
  // The doorbell's deadline (RingAt); max() when there is none or it passed.
  MonotonicClock::time_point bell_at_ ABSL_GUARDED_BY(mu_) =
      MonotonicClock::time_point::max();
  // The head job may start except that an in-fence has not signalled.
  std::atomic<bool> waiting_for_fences_{false};
  Doorbell doorbell_;  // the worker sleeps here

  // The running job, shared by the worker and the watchdog.
  std::mutex run_mu_;
  // Wakes the watchdog (a job started while it slept; stop) and a hung job
  // (reset; stop).
  std::condition_variable run_cv_;
  bool running_ ABSL_GUARDED_BY(run_mu_) = false;
  MonotonicClock::time_point run_start_ ABSL_GUARDED_BY(run_mu_);
  FileContext* run_context_ ABSL_GUARDED_BY(run_mu_) = nullptr;
  uint32_t run_command_count_ ABSL_GUARDED_BY(run_mu_) = 0;
  bool watchdog_sleeping_ ABSL_GUARDED_BY(run_mu_) = false;
  // Set (under run_mu_) when the watchdog aborts the running job; read by
  // the worker between commands.
  std::atomic<bool> abort_requested_{false};
  // Index of the command the running job is at (for the timeout report).
  std::atomic<uint32_t> run_command_{0};

  std::mutex free_mu_;
  std::vector<std::unique_ptr<Job>> free_jobs_ ABSL_GUARDED_BY(free_mu_);

  // Last: they start once everything above exists.
  std::thread worker_;
  std::thread watchdog_;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_ENGINE_H_
