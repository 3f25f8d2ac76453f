#include "framework/generator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "framework/llm.h"
#include "framework/session.h"

namespace lnpu::framework {
namespace {

double Milliseconds(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

}  // namespace

absl::StatusOr<Generator> Generator::Start(Session& session, absl::Span<const int32_t> tokens,
                                           const GenerationConfig& config, Options options) {
  if (config.max_new_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_new_tokens is ", config.max_new_tokens, ": ask for at least 1"));
  }
  if (absl::Status valid =
          Sampler::Validate(config, static_cast<int32_t>(session.runtime_->info().vocab_size));
      !valid.ok()) {
    return valid;
  }
  std::vector<int32_t> input = session.pending_;
  input.insert(input.end(), tokens.begin(), tokens.end());
  if (absl::Status fits = session.CheckInput(input); !fits.ok()) return fits;
  // After text, a generated token's leading space separates it from that
  // text; after a lone BOS starting the conversation it starts the text.
  const bool fresh = session.processed_tokens() == 0;
  const bool after_text =
      !fresh || input.size() != 1 || input[0] != session.tokenizer_->bos_id();
  const size_t input_size = input.size();
  session.pending_ = std::move(input);
  return Generator(session, config, std::move(options), input_size, after_text);
}

Generator::Generator(Session& session, const GenerationConfig& config, Options options,
                     size_t input_size, bool after_text)
    : session_(&session),
      config_(config),
      options_(std::move(options)),
      start_(absl::Now()),
      input_left_(input_size),
      sampler_(std::make_unique<Sampler>(config)),
      detokenizer_(std::make_unique<StreamingDetokenizer>(
          *session.tokenizer_, after_text ? StreamingDetokenizer::Start::kContinuation
                                               : StreamingDetokenizer::Start::kStartOfText)),
      stop_strings_(std::make_unique<StopStringMatcher>(config.stop_strings)) {
  result_.stats.prompt_tokens = static_cast<int>(input_size);
}

Generator::Generator(Generator&&) noexcept = default;
Generator::~Generator() = default;

absl::Status Generator::Step() {
  if (done_) return absl::FailedPreconditionError("the generation is done");
  if (cancelled_) {
    Finish(FinishReason::kCancelled);
    return absl::OkStatus();
  }
  if (prefilling()) return PrefillStep();
  DecodeStep();
  return absl::OkStatus();
}

absl::Status Generator::PrefillStep() {
  const uint32_t limit = options_.max_prefill_tokens_per_step;
  const size_t count = limit == 0 ? input_left_ : std::min<size_t>(limit, input_left_);
  absl::StatusOr<absl::Span<const float>> logits = session_->RunPending(count);
  input_left_ = session_->pending_.size();
  if (!logits.ok()) {
    done_ = true;
    return logits.status();
  }
  if (input_left_ == 0) {
    logits_ = *logits;
    result_.stats.prefill_ms = Milliseconds(absl::Now() - start_);
    history_ = session_->runtime_->cache().TokensInContext();
  }
  return absl::OkStatus();
}

void Generator::DecodeStep() {
  if (const std::optional<int32_t> token = SampleNextToken()) {
    RanNextToken(session_->runtime_->Forward(absl::MakeConstSpan(&*token, 1)));
  }
}

std::optional<int32_t> Generator::SampleNextToken() {
  absl::Span<const float> logits = logits_;
  if (options_.logits_filter) {
    filtered_logits_.assign(logits.begin(), logits.end());
    options_.logits_filter(result_.tokens, absl::MakeSpan(filtered_logits_));
    logits = filtered_logits_;
  }
  // A constraint (structured output) bans every token it does not allow
  // before any other sampling control, then follows the one picked.
  if (config_.constraint != nullptr) {
    if (absl::Status allowed = config_.constraint->AllowedTokens(allowed_tokens_); !allowed.ok()) {
      result_.error = std::string(allowed.message());
      Finish(FinishReason::kError);
      return std::nullopt;
    }
  }
  const int32_t token = sampler_->Sample(logits, history_, allowed_tokens_);
  if (config_.constraint != nullptr) {
    if (absl::Status accepted = config_.constraint->Accept(token); !accepted.ok()) {
      result_.error = std::string(accepted.message());
      Finish(FinishReason::kError);
      return std::nullopt;
    }
  }
  if (result_.tokens.empty()) {
    first_token_time_ = absl::Now();
    result_.stats.time_to_first_token_ms = Milliseconds(first_token_time_ - start_);
  }
  // The token belongs to the conversation; its K/V are computed when the
  // conversation continues.
  session_->pending_.assign(1, token);
  const bool stop_token =
      (config_.stop_at_eos && session_->tokenizer_->IsEndOfGeneration(token)) ||
      std::find(config_.stop_token_ids.begin(), config_.stop_token_ids.end(), token) !=
          config_.stop_token_ids.end();
  if (stop_token) {
    Finish(FinishReason::kStop);
    return std::nullopt;
  }
  result_.tokens.push_back(token);
  history_.push_back(token);
  const std::string text = stop_strings_->Push(detokenizer_->Push(token));
  result_.text += text;
  if (options_.on_token && !options_.on_token(token, text)) {
    Finish(FinishReason::kCancelled);
    return std::nullopt;
  }
  if (stop_strings_->stopped()) {
    Finish(FinishReason::kStop);
    return std::nullopt;
  }
  const runtime::KvCacheState& cache = session_->runtime_->cache();
  if (result_.tokens.size() >= static_cast<size_t>(config_.max_new_tokens) ||
      (!cache.policy().ring() && cache.free_slots() <= 1)) {
    // Without ring, the reply ends when the token takes the last free
    // slot, which stays for it: the conversation still fits the cache.
    Finish(FinishReason::kLength);
    return std::nullopt;
  }
  return token;
}

void Generator::RanNextToken(absl::StatusOr<absl::Span<const float>> next) {
  if (!next.ok()) {
    result_.error = std::string(next.status().message());
    return Finish(FinishReason::kError);
  }
  session_->pending_.clear();
  logits_ = *next;
}

void Generator::Finish(FinishReason reason) {
  result_.finish_reason = reason;
  if (!stop_strings_->stopped()) {
    std::string tail = stop_strings_->Push(detokenizer_->Flush());
    tail += stop_strings_->Flush();
    if (!tail.empty()) {
      result_.text += tail;
      if (options_.on_token) options_.on_token(-1, tail);
    }
  }
  const absl::Time end = absl::Now();
  result_.stats.generated_tokens = static_cast<int>(result_.tokens.size());
  if (first_token_time_ != absl::Time()) {
    result_.stats.decode_ms = Milliseconds(end - first_token_time_);
  }
  if (result_.tokens.size() > 1 && result_.stats.decode_ms > 0) {
    result_.stats.decode_tokens_per_second =
        (result_.tokens.size() - 1) * 1000.0 / result_.stats.decode_ms;
  }
  done_ = true;
}

}  // namespace lnpu::framework
