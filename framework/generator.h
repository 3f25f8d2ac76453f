// Step-wise generation of one reply on a Session: the loop of
// Session::GenerateFromTokens (which runs a Generator to the end), cut into
// steps so that a caller can interleave several sessions on one device,
// e.g. a server that gives each active request one decode step in turn and
// runs a long prompt in chunks between them.
//
//   absl::StatusOr<Generator> generator =
//       Generator::Start(session, prompt_tokens, config, {.on_token = print});
//   while (!generator->done()) {
//     if (absl::Status step = generator->Step(); !step.ok()) return step;
//   }
//   GenerationResult result = generator->TakeResult();
//
// A step is either a prefill step (runs up to
// Options::max_prefill_tokens_per_step of the input through the model) or,
// once the input has run, a decode step (samples one token, streams its
// text, and runs it through the model unless generation ends with it).
// With speculative decoding (GenerationConfig::speculative) a decode step
// after the first proposes tokens, runs the last sampled token and the
// proposals through the verify graph in one run, and emits every token it
// accepts plus one more, dropping the cache positions of the rejected
// proposals (greedy output is token for token that without speculation).
// Results, finish reasons and streaming are exactly those of
// Session::GenerateFromTokens (framework/session.h) for the same input and
// config, whatever the chunk size.
//
// Lifetime and thread-safety: the Generator uses `session` until done(),
// so the session must outlive it and must not be used otherwise
// meanwhile; a Generator is used by one thread at a time (any thread).
#ifndef FRAMEWORK_GENERATOR_H_
#define FRAMEWORK_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "framework/generation.h"
#include "framework/sampler.h"
#include "framework/stop_strings.h"
#include "framework/tokenizer/streaming_detokenizer.h"

namespace lnpu::framework {

class Session;

class Generator {
 public:
  // Restricts the next token before sampling: sets the logits of the tokens
  // not allowed next to -infinity (a per-request token mask, e.g. from a
  // grammar). `generated` are the reply's tokens so far. Called once per
  // decode step, on a copy of the model's logits; when it bans every token
  // the sampler picks token 0 (Sampler::Sample).
  using LogitsFilter =
      std::function<void(absl::Span<const int32_t> generated, absl::Span<float> logits)>;

  struct Options {
    // Input tokens run per prefill step; 0 runs the whole input in one
    // step (the runtime still splits it into its compiled chunks).
    uint32_t max_prefill_tokens_per_step = 0;
    StreamCallback on_token = nullptr;    // as in Session::GenerateFromTokens
    LogitsFilter logits_filter = nullptr;  // none by default
  };

  // Checks `config` and the input (the session's pending tokens, then
  // `tokens`) and makes them the session's pending tokens; nothing runs
  // yet. Errors as Session::GenerateFromTokens' input errors
  // (InvalidArgument, ResourceExhausted); the session is unchanged then.
  static absl::StatusOr<Generator> Start(Session& session, absl::Span<const int32_t> tokens,
                                         const GenerationConfig& config, Options options);

  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) = delete;
  ~Generator();

  // Runs one step. An error is a device error while running the input:
  // generation is over with nothing generated (done() is true, result()
  // must not be used) and the input tokens not run stay pending on the
  // session. A device error while decoding ends the reply with
  // FinishReason::kError instead (an OK step). FailedPrecondition when
  // done().
  absl::Status Step();

  // Ends generation before the next step samples a token: the reply so far
  // with FinishReason::kCancelled (like the stream callback returning
  // false). During prefill, the input not run yet stays pending.
  void Cancel() { cancelled_ = true; }

  bool done() const { return done_; }
  // Whether the next step is a prefill step.
  bool prefilling() const { return input_left_ > 0; }
  // Input tokens not run yet.
  size_t input_tokens_left() const { return input_left_; }
  // Tokens generated so far.
  size_t generated_tokens() const { return result_.tokens.size(); }

  // The reply; complete once done() (unless Step failed).
  const GenerationResult& result() const { return result_; }
  GenerationResult TakeResult() { return std::move(result_); }

 private:
  Generator(Session& session, const GenerationConfig& config, Options options,
            size_t input_size, bool after_text);

  // Checks config.speculative against the session's model and cache.
  static absl::Status CheckSpeculative(const Session& session, const GenerationConfig& config);
  friend class SessionBatch;  // runs the two halves of decode steps of several generators

  absl::Status PrefillStep();
  // SampleNextToken() and, unless generation ended with the sampled token,
  // its run on the session and RanNextToken().
  void DecodeStep();
  // With speculation, once the last sampled token is pending (logits_
  // empty): proposes tokens, verifies them and emits the accepted ones.
  void SpeculativeStep();
  // Up to `max_tokens` proposals to follow the conversation (the cache's
  // tokens and the pending one); with a draft model that samples,
  // draft_probabilities_ gets each proposal's draft distribution.
  std::vector<int32_t> ProposeTokens(size_t max_tokens);
  std::vector<int32_t> ProposeWithDraftModel(absl::Span<const int32_t> context, size_t max_tokens);
  // Picks the next token from `logits` (filter, constraint, sampler); with
  // `proposed` >= 0, by the acceptance rule against it and its draft
  // distribution `draft` (empty: a point mass). nullopt when a constraint
  // error ended generation.
  std::optional<int32_t> PickToken(absl::Span<const float> logits, int32_t proposed = -1,
                                   absl::Span<const float> draft = {});
  // Makes `token` the conversation's pending token and the reply's next,
  // streams it and finishes when it ends generation; `free_slots` are the
  // cache slots free before it. Returns whether generation goes on.
  bool EmitToken(int32_t token, uint32_t free_slots);
  // The first half of a decode step: samples and streams the next token,
  // which becomes the session's pending token. Returns it when generation
  // goes on and it must run through the model; nullopt when generation
  // ended (done()).
  std::optional<int32_t> SampleNextToken();
  // The second half: takes the logits of the sampled token's run (an error
  // ends the reply with FinishReason::kError) and empties pending.
  void RanNextToken(absl::StatusOr<absl::Span<const float>> next);
  // Flushes held text, fills the stats and marks the generation done.
  void Finish(FinishReason reason);

  Session* session_;
  GenerationConfig config_;
  Options options_;
  absl::Time start_;
  absl::Time first_token_time_;
  size_t input_left_;
  bool cancelled_ = false;
  bool done_ = false;
  // Logits of the last token run; valid until the session runs again.
  absl::Span<const float> logits_;
  std::vector<float> filtered_logits_;  // with a LogitsFilter
  std::vector<uint64_t> allowed_tokens_;  // config_.constraint's mask; empty without one
  std::vector<int32_t> history_;        // what the sampler's penalties look at
  std::vector<float> target_probabilities_;  // speculation: the model's distribution
  // Speculation with a sampling draft model: the draft distribution of
  // each proposal, vocab_size floats each.
  std::vector<float> draft_probabilities_;
  std::unique_ptr<Sampler> draft_sampler_;  // draws the draft model's proposals
  // A draft unsure of its first token proposes nothing, yet costs a run of
  // the draft model. After such a step the next draft_skips_ steps run
  // without it; each unsure step in a row doubles the skip (1, 2, 4, ...
  // up to kMaxDraftSkips), a proposal resets it. The draft catches up on
  // the skipped tokens when it runs again.
  static constexpr int kMaxDraftSkips = 16;
  int draft_skips_ = 0;       // steps left to run without the draft
  int draft_next_skips_ = 1;  // the skip after the next unsure step
  // Heap-held so that a moved Generator keeps them in place.
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<StreamingDetokenizer> detokenizer_;
  std::unique_ptr<StopStringMatcher> stop_strings_;
  GenerationResult result_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_GENERATOR_H_
