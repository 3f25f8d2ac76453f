// Requests and results of text generation.
#ifndef FRAMEWORK_GENERATION_H_
#define FRAMEWORK_GENERATION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "framework/token_constraint.h"

namespace lnpu::framework {

enum class FinishReason {
  kStop,       // the model produced an end-of-generation token
  kLength,     // max_new_tokens reached, or the KV cache is full
  kCancelled,  // the stream callback asked to stop
  kError,      // a device or token-constraint error, or a step with no
               // token left to pick, ended generation;
               // GenerationResult::error says why
};

std::string_view FinishReasonName(FinishReason reason);  // "stop", ...

class Session;

// Speculative decoding (docs/speculative-decoding.md): each decode step
// proposes up to max_draft_tokens tokens cheaply and runs them with the
// last sampled token through the model's verify graph in one run; the
// tokens the model agrees with are kept (greedy: the same tokens as without
// speculation; sampling: the acceptance rule keeps the model's
// distribution), the cache positions of the others are dropped. Needs an
// artifact compiled with a verify graph (npu-compile --verify-rows) and the
// finish cache policy (a ring's evictions cannot be undone).
struct SpeculativeConfig {
  enum class Kind {
    kNone,
    // Proposes the tokens that followed the latest earlier occurrence of
    // the context's last n tokens (n from max_ngram down to min_ngram), in
    // the prompt or the reply: no second model; pays off on text that
    // repeats its input (summaries, edits, code).
    kPromptLookup,
    // Proposes the tokens a smaller model of the same vocabulary picks.
    kDraftModel,
  };
  Kind kind = Kind::kNone;
  // >= 1; at most the largest verify graph's rows - 1. 3 proposals and the
  // last token fill a 4-row verify graph, the most rows the software NPU
  // streams the weights for in one pass (docs/speculative-decoding.md).
  int max_draft_tokens = 3;
  // kDraftModel: the draft stops proposing at a token it is less sure of
  // than this (Sampler::TopProbability of its logits below it), so that a
  // step does not pay verify rows for guesses; 0 always proposes
  // max_draft_tokens. In [0, 1]. (llama.cpp's --draft-p-min, 0.75 there.)
  float min_draft_probability = 0.75f;
  int min_ngram = 1;         // kPromptLookup: 1 <= min_ngram <= max_ngram
  int max_ngram = 3;
  // kDraftModel: a session of the draft model (same vocabulary), not
  // owned, used only by the generation; its conversation is replaced.
  Session* draft = nullptr;
};

std::string_view SpeculativeKindName(SpeculativeConfig::Kind kind);  // "none", ...

// What to generate and how to pick tokens. Sampler::Validate checks every
// field; docs/chat-and-sampling.md gives the order the sampling controls
// apply in (logit bias, penalties, top-k, top-p, min-p, temperature).
struct GenerationConfig {
  int max_new_tokens = 128;   // >= 1
  float temperature = 0.0f;   // 0 = greedy (argmax, lowest id on ties)
  int top_k = 0;              // 0 = no limit
  float top_p = 1.0f;         // nucleus mass in (0, 1]
  // Keeps tokens whose probability is at least min_p times the most likely
  // one's; in [0, 1], 0 = off.
  float min_p = 0.0f;
  uint64_t seed = 0;          // sampling is reproducible for a given seed
  bool add_bos = true;        // prepend BOS when the vocabulary asks for it
  bool stop_at_eos = true;    // end at an end-of-generation token

  // Penalties on the tokens among the last repeat_last_n of the history the
  // sampler is given (llama.cpp semantics). repetition_penalty > 0 (1 =
  // off) divides a positive logit and multiplies a negative one; then each
  // such token loses count * frequency_penalty + presence_penalty.
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;   // finite; 0 = off
  float frequency_penalty = 0.0f;  // finite; 0 = off
  int repeat_last_n = 64;          // >= 0 tokens; 0 = no penalties
  // Token id -> bias added to its logit before anything else; -infinity
  // bans the token. Biases are finite or -infinity.
  std::map<int32_t, float> logit_bias;

  // Tokens that end generation like an end-of-generation token (also when
  // stop_at_eos is false); not part of the result.
  std::vector<int32_t> stop_token_ids;
  // Texts that end generation when the output contains one; neither the
  // stop string nor anything after it is returned or streamed
  // (StopStringMatcher). Non-empty, well-formed UTF-8.
  std::vector<std::string> stop_strings;

  // When set, every step picks only among the tokens it allows, and the
  // picked token advances it (e.g. a grammar for structured output). Not
  // owned: it must outlive the generation call, and is used by it. Its
  // errors end generation with FinishReason::kError (an Internal
  // GenerationResult::error).
  TokenConstraint* constraint = nullptr;

  SpeculativeConfig speculative;
};

struct GenerationStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  double time_to_first_token_ms = 0;  // request start to first token
  double prefill_ms = 0;              // the prompt's forward passes
  double decode_ms = 0;               // first token to the end
  double decode_tokens_per_second = 0;  // (generated - 1) / decode time
  // Speculative decoding: tokens proposed and checked, and how many of them
  // the model accepted (accepted / drafted is the acceptance rate).
  int drafted_tokens = 0;
  int accepted_tokens = 0;
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated tokens (no prompt, no EOS)
  std::string text;             // their text, whole UTF-8
  FinishReason finish_reason = FinishReason::kStop;
  // With kError, why: InvalidArgument when the request's logit_bias banned
  // every token the constraint (or the vocabulary) allowed at a step;
  // Internal for a constraint's error; otherwise the device's error. OK
  // when the reply did not end with kError.
  absl::Status error;
  GenerationStats stats;
};

// Called once per generated token with the text that became complete with
// it (possibly empty while a multi-byte character is still incomplete).
// Return false to stop generation (FinishReason::kCancelled). After the
// last token, a held incomplete character is flushed as U+FFFD through
// one more call with token -1.
using StreamCallback = std::function<bool(int32_t token, std::string_view text)>;

}  // namespace lnpu::framework

#endif  // FRAMEWORK_GENERATION_H_
