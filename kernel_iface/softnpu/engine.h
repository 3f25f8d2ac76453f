// Engine: one execution engine of the software NPU (DRM_LNPU_ENGINE_*),
// with its job queue and worker thread (the scheduler layer).
//
// Jobs run one at a time in FIFO order across all files. The head job
// starts once its in-fences signalled; a job whose in-fence failed, or whose
// file context is banned, is not run and fails with -ECANCELED. A command
// that returns an error faults the job (-EIO). The running time of each job
// is checked between commands; a job over the timeout is aborted
// (-ECANCELED), its file context banned and the engine reset (counted).
//
// Thread-safety: all public methods may be called concurrently, except that
// Stop() and the destructor must not race with Push().
#ifndef KERNEL_IFACE_SOFTNPU_ENGINE_H_
#define KERNEL_IFACE_SOFTNPU_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/softnpu/diagnostic_log.h"
#include "kernel_iface/softnpu/job.h"
#include "kernel_iface/softnpu/wait_queue.h"

namespace lnpu::softnpu {

class Engine {
 public:
  // `id` is a DRM_LNPU_ENGINE_*; `threads` (>= 1) is the number of compute
  // workers per command. `on_fence_signalled` runs on the engine thread
  // after each fence the engine signals, to wake engines whose head job
  // waits for it. Starts the worker thread.
  Engine(uint32_t id, int threads, MonotonicClock::duration job_timeout,
         DiagnosticLog& log, std::function<void()> on_fence_signalled);
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

  // A fence of some file signalled: re-check the head job's in-fences.
  // Cheap unless the head job waits for fences.
  void WakeForFences();

  // Stops the worker: a running job is aborted at its next command boundary
  // and queued jobs are cancelled, all with -ECANCELED. Idempotent.
  void Stop();

  // Resets after a job timeout, since creation.
  uint64_t resets() const { return resets_.load(std::memory_order_relaxed); }

 private:
  void Run();
  // The next job that may start; null once stopping.
  std::unique_ptr<Job> NextJob();
  // Runs the job; returns 0 or the negative errno for its fence.
  int Execute(Job& job);
  // Releases the job's resources, then signals its fence with `error`.
  void Finish(std::unique_ptr<Job> job, int error);

  const char* const name_;
  const MonotonicClock::duration job_timeout_;
  DiagnosticLog& log_;
  const std::function<void()> on_fence_signalled_;
  ComputeContext compute_;  // used by the worker thread only
  std::atomic<uint64_t> resets_{0};
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::deque<std::unique_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  // The head job may start except that an in-fence has not signalled.
  std::atomic<bool> waiting_for_fences_{false};
  WaitQueue queue_waiters_;  // the worker sleeps here

  std::mutex free_mu_;
  std::vector<std::unique_ptr<Job>> free_jobs_ ABSL_GUARDED_BY(free_mu_);

  std::thread worker_;  // last: starts once everything above exists
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_ENGINE_H_
