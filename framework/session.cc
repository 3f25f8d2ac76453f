#include "framework/session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "framework/llm.h"
#include "framework/sampler.h"
#include "framework/stop_strings.h"
#include "framework/tokenizer/streaming_detokenizer.h"
#include "runtime/session_state.h"

namespace lnpu::framework {
namespace {

double Milliseconds(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

runtime::CacheFullPolicy RuntimePolicy(const ContextPolicy& policy) {
  runtime::CacheFullPolicy out;
  out.ring = policy.on_full == ContextPolicy::OnFull::kRing;
  out.sink_slots = out.ring ? policy.sink_tokens : 0;
  return out;
}

ContextPolicy FrameworkPolicy(const runtime::CacheFullPolicy& policy) {
  ContextPolicy out;
  if (policy.ring) {
    out.on_full = ContextPolicy::OnFull::kRing;
    out.sink_tokens = policy.sink_slots;
  }
  return out;
}

}  // namespace

Session::Session(const Llm& llm, std::unique_ptr<runtime::Session> runtime)
    : llm_(llm), runtime_(std::move(runtime)) {}

Session::~Session() = default;

absl::Status Session::SetContextPolicy(const ContextPolicy& policy) {
  absl::Status set = runtime_->SetCacheFullPolicy(RuntimePolicy(policy));
  if (set.ok()) policy_ = policy;
  return set;
}

void Session::Reset() {
  runtime_->Reset();
  pending_.clear();
}

std::vector<int32_t> Session::Tokens() const {
  std::vector<int32_t> tokens = runtime_->cache().TokensInContext();
  tokens.insert(tokens.end(), pending_.begin(), pending_.end());
  return tokens;
}

int64_t Session::processed_tokens() const { return runtime_->cache().next_position(); }

uint32_t Session::free_slots() const { return runtime_->cache().free_slots(); }

bool Session::StartsWithBos(bool add_bos) const {
  const bool empty = runtime_->cache().next_position() == 0 && pending_.empty();
  return add_bos && empty && llm_.tokenizer().vocabulary().add_bos;
}

absl::StatusOr<std::vector<int32_t>> Session::Tokenize(std::string_view text,
                                                       bool add_bos) const {
  return llm_.tokenizer().Encode(text, StartsWithBos(add_bos));
}

absl::StatusOr<std::vector<int32_t>> Session::TokenizeSegments(
    absl::Span<const TextSegment> prompt, bool add_bos) const {
  return llm_.tokenizer().EncodeSegments(prompt, StartsWithBos(add_bos));
}

absl::StatusOr<absl::Span<const float>> Session::RunInput(absl::Span<const int32_t> tokens) {
  const runtime::ModelInfo& info = llm_.info();
  std::vector<int32_t> input = pending_;
  input.insert(input.end(), tokens.begin(), tokens.end());
  if (input.empty()) {
    return absl::InvalidArgumentError("the input is empty: give at least one token");
  }
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i] < 0 || static_cast<uint32_t>(input[i]) >= info.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", input[i], " at index ", i,
                                                     " is outside the vocabulary [0, ",
                                                     info.vocab_size, ")"));
    }
  }
  const runtime::KvCacheState& cache = runtime_->cache();
  if (cache.next_position() == 0 && input.size() > info.max_prompt_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prompt has ", input.size(), " tokens but the model was compiled for at most ",
        info.max_prompt_len, ": shorten the prompt, or recompile with npu-compile "
        "--max-prompt-len ", input.size(), " or more"));
  }
  if (!cache.policy().ring && input.size() > cache.free_slots()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the conversation holds ", cache.written_slots(), " of ", cache.capacity(),
        " cache slots and the ", input.size(), " new tokens do not fit: reset the session, "
        "enable the ring context policy, or recompile with a larger capacity"));
  }
  const int64_t before = cache.next_position();
  absl::StatusOr<absl::Span<const float>> logits = runtime_->Forward(input);
  // Tokens that did not make it into the cache (a device error) stay
  // pending for the next call.
  const size_t run = static_cast<size_t>(cache.next_position() - before);
  pending_.assign(input.begin() + static_cast<ptrdiff_t>(run), input.end());
  return logits;
}

absl::Status Session::Append(std::string_view text, bool add_bos) {
  absl::StatusOr<std::vector<int32_t>> tokens = Tokenize(text, add_bos);
  if (!tokens.ok()) return tokens.status();
  return AppendTokens(*tokens);
}

absl::Status Session::AppendTokens(absl::Span<const int32_t> tokens) {
  return RunInput(tokens).status();
}

absl::StatusOr<GenerationResult> Session::Generate(std::string_view text,
                                                   const GenerationConfig& config,
                                                   const StreamCallback& on_token) {
  absl::StatusOr<std::vector<int32_t>> tokens = Tokenize(text, config.add_bos);
  if (!tokens.ok()) return tokens.status();
  return GenerateFromTokens(*tokens, config, on_token);
}

absl::StatusOr<GenerationResult> Session::GenerateFromTokens(absl::Span<const int32_t> tokens,
                                                             const GenerationConfig& config,
                                                             const StreamCallback& on_token) {
  const absl::Time start = absl::Now();
  const Tokenizer& tokenizer = llm_.tokenizer();
  if (config.max_new_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_new_tokens is ", config.max_new_tokens, ": ask for at least 1"));
  }
  if (absl::Status valid = Sampler::Validate(config, static_cast<int32_t>(llm_.info().vocab_size));
      !valid.ok()) {
    return valid;
  }
  const bool fresh = runtime_->cache().next_position() == 0;
  const size_t input_size = pending_.size() + tokens.size();
  // After text, a generated token's leading space separates it from that
  // text; after a lone BOS starting the conversation it starts the text.
  const bool after_text = !fresh || input_size != 1 ||
                          (tokens.empty() ? pending_[0] : tokens[0]) != tokenizer.bos_id();

  absl::StatusOr<absl::Span<const float>> logits = RunInput(tokens);
  if (!logits.ok()) return logits.status();

  GenerationResult result;
  result.stats.prompt_tokens = static_cast<int>(input_size);
  result.stats.prefill_ms = Milliseconds(absl::Now() - start);
  // The sampler's penalties look at the conversation so far plus the reply.
  std::vector<int32_t> history = runtime_->cache().TokensInContext();
  Sampler sampler(config);
  StreamingDetokenizer detokenizer(tokenizer, after_text
                                                  ? StreamingDetokenizer::Start::kContinuation
                                                  : StreamingDetokenizer::Start::kStartOfText);
  StopStringMatcher stop_strings(config.stop_strings);
  const runtime::KvCacheState& cache = runtime_->cache();
  absl::Time first_token_time;
  bool first = true;

  std::vector<uint64_t> allowed_tokens;  // empty unless config.constraint
  while (true) {
    if (config.constraint != nullptr) {
      if (absl::Status allowed = config.constraint->AllowedTokens(allowed_tokens); !allowed.ok()) {
        result.finish_reason = FinishReason::kError;
        result.error = std::string(allowed.message());
        break;
      }
    }
    const int32_t token = sampler.Sample(*logits, history, allowed_tokens);
    if (config.constraint != nullptr) {
      if (absl::Status accepted = config.constraint->Accept(token); !accepted.ok()) {
        result.finish_reason = FinishReason::kError;
        result.error = std::string(accepted.message());
        break;
      }
    }
    if (first) {
      first = false;
      first_token_time = absl::Now();
      result.stats.time_to_first_token_ms = Milliseconds(first_token_time - start);
    }
    // The token belongs to the conversation; its K/V are computed when
    // the conversation continues.
    pending_.assign(1, token);
    const bool stop_token =
        (config.stop_at_eos && tokenizer.IsEndOfGeneration(token)) ||
        std::find(config.stop_token_ids.begin(), config.stop_token_ids.end(), token) !=
            config.stop_token_ids.end();
    if (stop_token) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    result.tokens.push_back(token);
    history.push_back(token);
    const std::string text = stop_strings.Push(detokenizer.Push(token));
    result.text += text;
    if (on_token && !on_token(token, text)) {
      result.finish_reason = FinishReason::kCancelled;
      break;
    }
    if (stop_strings.stopped()) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    if (result.tokens.size() >= static_cast<size_t>(config.max_new_tokens) ||
        (!cache.policy().ring && cache.free_slots() <= 1)) {
      // Without ring, the reply ends when the token takes the last free
      // slot, which stays for it: the conversation still fits the cache.
      result.finish_reason = FinishReason::kLength;
      break;
    }
    logits = runtime_->Forward(pending_);
    if (!logits.ok()) {
      result.finish_reason = FinishReason::kError;
      result.error = std::string(logits.status().message());
      break;
    }
    pending_.clear();
  }

  if (!stop_strings.stopped()) {
    std::string tail = stop_strings.Push(detokenizer.Flush());
    tail += stop_strings.Flush();
    if (!tail.empty()) {
      result.text += tail;
      if (on_token) on_token(-1, tail);
    }
  }
  const absl::Time end = absl::Now();
  result.stats.generated_tokens = static_cast<int>(result.tokens.size());
  if (!first) {
    result.stats.decode_ms = Milliseconds(end - first_token_time);
  }
  if (result.tokens.size() > 1 && result.stats.decode_ms > 0) {
    result.stats.decode_tokens_per_second =
        (result.tokens.size() - 1) * 1000.0 / result.stats.decode_ms;
  }
  return result;
}

absl::StatusOr<runtime::SessionState> Session::SaveState() const {
  absl::StatusOr<runtime::SessionState> state = runtime_->SaveState();
  if (!state.ok()) return state.status();
  state->pending_tokens = pending_;
  return state;
}

absl::Status Session::RestoreState(const runtime::SessionState& state) {
  const uint32_t vocab_size = llm_.info().vocab_size;
  for (int32_t token : state.pending_tokens) {
    if (token < 0 || static_cast<uint32_t>(token) >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the saved session has pending token id ", token, " outside the vocabulary [0, ",
          vocab_size, ")"));
    }
  }
  absl::Status restored = runtime_->RestoreState(state);
  if (!restored.ok()) return restored;
  policy_ = FrameworkPolicy(state.policy);
  pending_ = state.pending_tokens;
  return absl::OkStatus();
}

absl::Status Session::SaveToFile(const std::string& path) const {
  absl::StatusOr<runtime::SessionState> state = SaveState();
  if (!state.ok()) return state.status();
  return runtime::WriteSessionStateFile(*state, path);
}

absl::Status Session::LoadFromFile(const std::string& path) {
  absl::StatusOr<runtime::SessionState> state = runtime::ReadSessionStateFile(path);
  if (!state.ok()) return state.status();
  absl::Status restored = RestoreState(*state);
  if (!restored.ok()) {
    return absl::Status(restored.code(),
                        absl::StrCat("session file '", path, "': ", restored.message()));
  }
  return absl::OkStatus();
}

absl::Status Session::CopyPrefixFrom(const Session& source, uint32_t tokens) {
  absl::Status copied = runtime_->CopyPrefixFrom(*source.runtime_, tokens);
  if (copied.ok()) pending_.clear();
  return copied;
}

}  // namespace lnpu::framework
