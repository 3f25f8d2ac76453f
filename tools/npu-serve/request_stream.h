// The channel between the scheduler's thread, which generates a request's
// reply, and the HTTP thread that answers it: text as it is generated, the
// outcome at the end, and cancellation the other way when the client goes
// away.
//
// Thread-safety: every method may be called from any thread; the producer
// methods (AppendText, Finish) are the scheduler's.
#ifndef TOOLS_NPU_SERVE_REQUEST_STREAM_H_
#define TOOLS_NPU_SERVE_REQUEST_STREAM_H_

#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "framework/generation.h"

namespace lnpu::serve {

// How a request ended.
struct RequestOutcome {
  // Not OK when nothing was generated: the input was refused
  // (InvalidArgument, ResourceExhausted) or the device failed while
  // running it (Internal). A device error while decoding is
  // result.finish_reason kError with result.error instead.
  absl::Status status = absl::OkStatus();
  framework::GenerationResult result = {};
  int cached_tokens = 0;  // prompt tokens restored from the prefix cache
};

class RequestStream {
 public:
  // Consumer side. Waits until there is new text or the request finished,
  // at most `timeout`; moves the new text into `text` (replacing its
  // content). Returns true once the request has finished and all of its
  // text was taken.
  bool Wait(absl::Duration timeout, std::string& text);
  // The outcome; only after Wait returned true.
  const RequestOutcome& outcome() const { return outcome_; }
  // Asks the scheduler to stop the generation (the client went away).
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }

  // Producer side.
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  void AppendText(std::string_view text);
  void Finish(RequestOutcome outcome);

 private:
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::string text_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // Written once by Finish before finished_ is set under mu_; read after
  // Wait saw finished_.
  RequestOutcome outcome_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_REQUEST_STREAM_H_
