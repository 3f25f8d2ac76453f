// Sessions whose decode steps run together: the lanes of a
// runtime::DecodeBatch (runtime/decode_batch.h), one Session each. On a
// bandwidth-bound device one batched step streams the weights once for the
// next token of every session that decodes, so several conversations
// decode about as fast as one.
//
//   std::unique_ptr<SessionBatch> batch = *llm.CreateSessionBatch(4);
//   Generator a = *Generator::Start(batch->session(0), prompt_a, config, {});
//   Generator b = *Generator::Start(batch->session(1), prompt_b, config, {});
//   while (!a.done() || !b.done()) {
//     std::vector<Generator*> running;
//     for (Generator* g : {&a, &b}) if (!g->done()) running.push_back(g);
//     if (absl::Status s = batch->Step(running); !s.ok()) return s;
//   }
//
// Each session is a whole Session (prefill, save, restore, Reset, policy,
// GenerateFromTokens) and generates what it generates alone
// (runtime/decode_batch.h says how exactly).
//
// Lifetime: owns its sessions; a Generator on one of them must end first.
// Thread-safety: not thread-safe; use the batch and its sessions from one
// thread at a time.
#ifndef FRAMEWORK_SESSION_BATCH_H_
#define FRAMEWORK_SESSION_BATCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "framework/generator.h"
#include "framework/session.h"
#include "runtime/decode_batch.h"

namespace lnpu::framework {

class SessionBatch {
 public:
  SessionBatch(const SessionBatch&) = delete;
  SessionBatch& operator=(const SessionBatch&) = delete;
  ~SessionBatch();

  size_t lanes() const { return sessions_.size(); }
  Session& session(size_t lane) const { return *sessions_[lane]; }
  // The lane of `session`, or nullopt when it is not one of this batch's.
  std::optional<size_t> LaneOf(const Session& session) const;

  // One step of each of `generators` (distinct, each running on a session
  // of this batch and not done), as Generator::Step() of each would run
  // it: prefill steps and cancellations run one by one, the decode steps
  // of all the others as one batched device step. A device error of the
  // batched step ends each of its replies with FinishReason::kError (as a
  // failed decode step of Generator::Step() does).
  // Errors: a prefill step's device error (that generator is done then;
  // the others' steps ran); FailedPrecondition when a generator is done
  // or not on this batch's sessions, before anything ran.
  absl::Status Step(absl::Span<Generator* const> generators);

  // Device memory of the sessions' own buffers and the batch's commands.
  uint64_t device_memory_bytes() const;
  const runtime::DecodeBatchStats& stats() const { return batch_->stats(); }
  // Observes every batched device step (traces, profiles); the steps a
  // lane runs alone are its session's (Session::SetStepObserver). See
  // runtime::DecodeBatch::SetStepObserver.
  absl::Status SetStepObserver(runtime::DecodeBatch::StepObserver observer) {
    return batch_->SetStepObserver(std::move(observer));
  }

 private:
  friend class Llm;
  SessionBatch(std::vector<std::unique_ptr<Session>> sessions,
               std::unique_ptr<runtime::DecodeBatch> batch);

  const std::vector<std::unique_ptr<Session>> sessions_;
  const std::unique_ptr<runtime::DecodeBatch> batch_;  // over sessions_' sequences
  // Scratch of Step(), one entry per lane.
  std::vector<int32_t> tokens_;
  std::vector<Generator*> decoding_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_SESSION_BATCH_H_
