// One conversation with a loaded model: its own KV cache and mask on the
// device (the model's weights are shared), the conversation's tokens, and
// generation that continues it.
//
// Multi-turn without re-prefill: each Generate* call runs only its new
// tokens after the ones already in the cache; the history's K/V stay where
// they are. A conversation's tokens are those run through the model plus
// "pending" ones not run yet: the last token of a reply (its K/V would only
// be needed by a following turn), and input the cache refused. The next
// call runs the pending tokens first, so a conversation continued over
// several calls equals one prefill of all of its tokens.
//
// Saved prefixes: SaveToFile/LoadFromFile keep the cache (K/V rows, mask,
// token ids, positions, pending tokens, the model's identity) in a file;
// CopyPrefixFrom shares e.g. a system prompt between live sessions without
// recomputing it.
//
// Lifetime: created by Llm::CreateSession; shares ownership of the device,
// weights and tokenizer, so it may outlive that Llm. Thread-safety: a Session is used by one thread at a time; different
// sessions of one Llm may run on different threads at once.
#ifndef FRAMEWORK_SESSION_H_
#define FRAMEWORK_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "framework/generation.h"
#include "framework/tokenizer/tokenizer.h"
#include "runtime/sequence.h"

namespace lnpu::framework {

class Llm;

class Session {
 public:
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  // Tokenizes `text` (with BOS first when the conversation is empty and
  // config.add_bos and the vocabulary ask for it) and continues the
  // conversation with it: see GenerateFromTokens.
  absl::StatusOr<GenerationResult> Generate(std::string_view text,
                                            const GenerationConfig& config,
                                            const StreamCallback& on_token = nullptr);

  // Runs the pending tokens and `tokens` (may be empty when tokens are
  // pending) through the model and generates a reply, streaming each
  // token's text to `on_token`. Generation ends at an end-of-generation
  // token (config.stop_at_eos) or one of config.stop_token_ids (kStop, the
  // token is not returned), a stop string (kStop, neither it nor text after
  // it is returned or streamed), max_new_tokens or a full cache without
  // ring policy (kLength), the callback returning false (kCancelled), or a
  // device error after the input was run or an error of config.constraint
  // (kError, with the tokens so far and GenerationResult::error; the
  // session stays usable).
  //
  // Errors (nothing generated): InvalidArgument for a bad config, no input,
  // a token outside the vocabulary, or a first input longer than the
  // compiled max_prompt_len; ResourceExhausted when the input does not fit
  // in the free slots without ring policy; device errors while running the
  // input (its tokens that were not run stay pending).
  //
  // framework/generator.h runs the same generation one step at a time.
  absl::StatusOr<GenerationResult> GenerateFromTokens(absl::Span<const int32_t> tokens,
                                                      const GenerationConfig& config,
                                                      const StreamCallback& on_token = nullptr);

  // The tokens of `text` / `prompt` to run now: BOS first when the
  // conversation is empty (nothing run, nothing pending) and `add_bos` and
  // the vocabulary ask for it. `text` is plain text (Tokenizer::Encode);
  // `prompt` is in segments, e.g. a chat turn from
  // ChatTemplate::RenderSegments, whose special-token spellings become
  // their tokens only where marked parse_special (Tokenizer::EncodeSegments).
  // The tokenizer's errors.
  absl::StatusOr<std::vector<int32_t>> Tokenize(std::string_view text, bool add_bos) const;
  absl::StatusOr<std::vector<int32_t>> TokenizeSegments(absl::Span<const TextSegment> prompt,
                                                        bool add_bos) const;

  // Runs `text` / `tokens` (after the pending ones) through the model
  // without generating, e.g. a system prompt to share or save. BOS as in
  // Generate when `add_bos`. Errors as GenerateFromTokens' input errors.
  absl::Status Append(std::string_view text, bool add_bos = true);
  absl::Status AppendTokens(absl::Span<const int32_t> tokens);

  // InvalidArgument when the ring cannot hold the largest compiled prefill
  // chunk; FailedPrecondition after the ring wrapped under another policy
  // (Reset first).
  absl::Status SetCacheFullPolicy(const runtime::CacheFullPolicy& policy);
  const runtime::CacheFullPolicy& cache_full_policy() const { return runtime_->cache().policy(); }

  // Forgets the conversation (the policy stays).
  void Reset();

  // The conversation's tokens still visible to the model (with a ring: the
  // sinks and the kept window), then the pending ones.
  std::vector<int32_t> Tokens() const;
  // Tokens run through the model since the last Reset (including evicted
  // ones): the RoPE position of the next one.
  int64_t processed_tokens() const;
  // Free cache slots (0 once the ring wrapped: it reuses slots).
  uint32_t free_slots() const;

  // Writes the conversation to `path` (runtime/cache_snapshot.h format).
  // InvalidArgument when `path` is the model's artifact or not a regular
  // file.
  absl::Status SaveToFile(const std::string& path) const;
  // Replaces the conversation by the one saved at `path`. The file
  // reader's errors (NotFound, InvalidArgument for a corrupt or truncated
  // file, ...); FailedPrecondition naming both values when it was saved
  // from another model or cache capacity. The session is unchanged on
  // error.
  absl::Status LoadFromFile(const std::string& path);
  // The same in memory.
  absl::StatusOr<runtime::CacheSnapshot> SaveState() const;
  absl::Status RestoreState(const runtime::CacheSnapshot& state);

  // Makes this conversation the first `tokens` tokens of `source`'s (which
  // must have run them through the model and not wrapped), copying their
  // K/V instead of recomputing them. `source` must not be used by another
  // thread meanwhile. Errors as runtime::Sequence::CopyPrefixFrom.
  absl::Status CopyPrefixFrom(const Session& source, uint32_t tokens);

  // Device memory of this session's own buffers (KV cache, activations,
  // IO, commands), excluding the shared weights.
  uint64_t device_memory_bytes() const { return runtime_->device_memory_bytes(); }
  const runtime::SequenceStats& runtime_stats() const { return runtime_->stats(); }
  // Observes every graph run of this session (traces, profiles); see
  // runtime::Sequence::SetStepObserver.
  absl::Status SetStepObserver(runtime::Sequence::StepObserver observer) {
    return runtime_->SetStepObserver(std::move(observer));
  }

 private:
  friend class Llm;
  friend class Generator;
  Session(std::shared_ptr<const Tokenizer> tokenizer, std::string artifact_path,
          std::unique_ptr<runtime::Sequence> runtime);

  // The input errors of GenerateFromTokens for `input` (pending tokens
  // first) run now.
  absl::Status CheckInput(absl::Span<const int32_t> input) const;
  // Runs the first `count` (>= 1) pending tokens and removes those that
  // ran from pending_ (all of them unless a device error stopped the run);
  // the last token's logits.
  absl::StatusOr<absl::Span<const float>> RunPending(size_t count);
  // Checks and runs pending_ + `tokens`; on success pending_ is empty and
  // the last token's logits are returned. On a device error, the tokens
  // not run become pending_.
  absl::StatusOr<absl::Span<const float>> RunInput(absl::Span<const int32_t> tokens);
  // Whether a prompt tokenized now starts with BOS (see Tokenize).
  bool StartsWithBos(bool add_bos) const;

  const std::shared_ptr<const Tokenizer> tokenizer_;
  const std::string artifact_path_;  // never replaced by SaveToFile
  std::unique_ptr<runtime::Sequence> runtime_;
  std::vector<int32_t> pending_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_SESSION_H_
