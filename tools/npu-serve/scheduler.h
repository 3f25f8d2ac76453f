// Runs the generations of several requests at once on one device by time
// slicing: each request gets its own framework::Session (a KV cache of its
// own; the weights are shared), and one thread advances them in rounds.
// In a round every decoding request runs one decode step (one token), in
// admission order, and at most one prefilling request runs one prefill
// chunk (the oldest first), so a long prompt never stalls the others for
// more than a chunk per token. Requests wait in a bounded FIFO queue for a
// free session.
//
// When the model has batched decode graphs (npu-compile --decode-batch)
// and batching is on, the sessions are the lanes of framework::
// SessionBatch groups (as many of the largest compiled lane count that
// fits the remaining sessions as possible; sessions left over are plain),
// and the decode steps of a round's requests on one group run as one
// batched device step. A request takes the free session of the lowest
// group and lane, so that few groups and small graphs run.
//
// Before a request's prompt runs, the prefix cache (prefix_cache.h) is
// asked for the longest common prefix of it, which is restored instead of
// recomputed; a finished request's conversation goes into the cache.
//
// Thread-safety: Submit, StopAccepting, Drain and Gauges may be called
// from any thread. The sessions are only used by the scheduler's thread.
#ifndef TOOLS_NPU_SERVE_SCHEDULER_H_
#define TOOLS_NPU_SERVE_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "framework/generation.h"
#include "framework/generator.h"
#include "framework/llm.h"
#include "framework/session.h"
#include "framework/token_constraint.h"
#include "runtime/cache_full_policy.h"
#include "runtime/step_timeline.h"
#include "framework/session_batch.h"
#include "tools/npu-serve/metrics.h"
#include "tools/npu-serve/prefix_cache.h"
#include "tools/npu-serve/request_stream.h"

namespace lnpu::serve {

struct SchedulerOptions {
  size_t sessions = 4;    // requests generating at once (>= 1)
  size_t max_queue = 16;  // requests waiting for a session
  // Prompt tokens per prefill step; 0: the model's largest compiled
  // prefill chunk.
  uint32_t prefill_chunk = 0;
  runtime::CacheFullPolicy context_policy = {};
  // Batch the decode steps of sessions when the model has batched decode
  // graphs.
  bool batch_decode = true;
  size_t prefix_cache_entries = 64;  // 0 disables the prefix cache
  uint64_t prefix_cache_bytes = uint64_t{256} << 20;
  // If set, observes every graph run on the scheduler's thread (--trace):
  // a session's own runs with `who` "session N" (1-based), a batched decode
  // step of several sessions with "sessions N-M" (the batch's lanes; the
  // step's `tokens` counts the active ones).
  std::function<void(const std::string& who, const runtime::StepTimeline& step)> step_observer =
      nullptr;
  // If set, observes the host's scheduling on the scheduler's thread
  // (--trace), each span named on a track:
  //   "round" on "scheduler": one RunRound (its steps, sampling and
  //     streaming; what lies outside the steps is the host's share);
  //   "admit" and "finish" on "scheduler": starting a request (prefix
  //     cache lookup) and ending it (its conversation into the cache);
  //   "queued" and "generating" on "request N" (N from 1 in order of
  //     Submit): arrival to admission, admission to the end.
  std::function<void(absl::string_view name, absl::string_view track,
                     const runtime::TimeSpan& span)>
      span_observer = nullptr;
};

class Scheduler {
 public:
  // Creates the sessions (their device memory) and starts the thread.
  // `llm` and `metrics` must outlive the scheduler. The sessions' errors;
  // InvalidArgument for 0 sessions or a context policy the model's cache
  // cannot hold.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(const framework::Llm& llm,
                                                           const SchedulerOptions& options,
                                                           Metrics& metrics);
  // Cancels what still runs and stops the thread.
  ~Scheduler();

  // Queues the generation of a reply to `prompt` (whole, BOS included),
  // timed from `arrival`, constrained by `constraint` when given (the
  // scheduler owns it until the request ends; it replaces
  // config.constraint). ResourceExhausted when the queue is full,
  // Unavailable after StopAccepting. The request's input errors (e.g. a
  // prompt longer than the cache) arrive through its stream.
  absl::StatusOr<std::shared_ptr<RequestStream>> Submit(
      std::vector<int32_t> prompt, framework::GenerationConfig config,
      absl::Time arrival = absl::Now(),
      std::unique_ptr<framework::TokenConstraint> constraint = nullptr);

  // New requests get Unavailable from now on; queued and active ones go on.
  void StopAccepting();
  // Waits until no request is queued or active, at most `timeout`, then
  // cancels those left and waits for them to end.
  void Drain(absl::Duration timeout);

  // Queue depth, active requests, sessions, device memory, prefix cache.
  MetricsGauges Gauges() const;

 private:
  struct Job {
    uint64_t number = 0;  // from 1, in order of Submit
    std::vector<int32_t> prompt;
    framework::GenerationConfig config;
    absl::Time arrival;
    int64_t arrival_ns = 0;  // `arrival` on runtime::MonotonicNanos()'s clock
    std::shared_ptr<RequestStream> stream;
    std::unique_ptr<framework::TokenConstraint> constraint;  // config.constraint
  };
  // A request holding a session.
  struct Active {
    Job job;
    framework::Session* session = nullptr;
    framework::SessionBatch* batch = nullptr;  // the group of `session`, if any
    std::optional<framework::Generator> generator = std::nullopt;
    int cached_tokens = 0;
    absl::Time last_token = {};
    int64_t admitted_ns = 0;  // runtime::MonotonicNanos() at admission
  };

  // The sessions: the lanes of `batches`, then `plain`.
  struct SessionPool {
    std::vector<std::unique_ptr<framework::SessionBatch>> batches;
    std::vector<std::unique_ptr<framework::Session>> plain;
  };

  Scheduler(const framework::Llm& llm, const SchedulerOptions& options, Metrics& metrics,
            SessionPool pool);

  void Run();
  // Restores the cached prefix and starts the generation; false (the
  // request finished with an error) when the input is refused.
  bool Admit(Active& active);
  // One step of every decoding request and one prefill chunk.
  void RunRound();
  // A step's status as the request's outcome: a device error is Internal.
  static absl::Status StepOutcome(absl::Status step);
  // Ends `active`: outcome to its stream, conversation to the prefix
  // cache, session back to the free list.
  void Finish(Active& active, absl::Status status);
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reports [start_ns, end_ns] to the span observer, if any: on the
  // "scheduler" track, or with `active` on its request's track.
  void ObserveSpan(absl::string_view name, int64_t start_ns,
                   int64_t end_ns = runtime::MonotonicNanos(),
                   const Active* active = nullptr) const;

  const SchedulerOptions options_;
  const uint32_t prefill_chunk_;
  Metrics& metrics_;
  const SessionPool pool_;
  // Every session in the order they are given out: batch by batch, lane by
  // lane, then the plain ones.
  std::vector<framework::Session*> sessions_;
  uint64_t device_memory_bytes_ = 0;

  mutable absl::Mutex mu_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  // Free sessions, the next one to give out last.
  std::vector<framework::Session*> free_sessions_ ABSL_GUARDED_BY(mu_);
  size_t active_count_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool cancel_all_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  // Prefix cache figures for Gauges(), updated by the thread.
  size_t cache_entries_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cache_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cache_hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cache_misses_ ABSL_GUARDED_BY(mu_) = 0;
  // The batches' figures for Gauges(), updated by the thread.
  uint64_t batched_decode_steps_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batched_decode_tokens_ ABSL_GUARDED_BY(mu_) = 0;

  // The scheduler thread's own.
  std::list<Active> active_;
  // Per batch, the generators whose decode step joins its batched step in
  // this round (RunRound's scratch).
  std::vector<std::vector<framework::Generator*>> batched_steps_;
  PrefixCache prefix_cache_;
  std::thread thread_;
};

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_SCHEDULER_H_
