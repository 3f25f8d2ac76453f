#include "framework/generator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "framework/llm.h"
#include "framework/prompt_lookup.h"
#include "framework/session.h"

namespace lnpu::framework {
namespace {

double Milliseconds(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

// A constraint error ends generation as a server fault: the sampler only
// picks tokens the constraint allows, so it has no request to blame.
absl::Status ConstraintError(const absl::Status& error) {
  return absl::InternalError(absl::StrCat("the token constraint failed: ", error.message()));
}

// Why the step after `generated` tokens had no token to pick
// (Sampler::nothing_left()): a -infinity logit_bias (OpenAI's -100) on every
// token the constraint or the vocabulary left is the request's fault,
// anything else is the logits'.
absl::Status NoTokenLeftError(const GenerationConfig& config, size_t generated) {
  const bool bans = std::any_of(config.logit_bias.begin(), config.logit_bias.end(),
                                [](const auto& entry) { return entry.second == -INFINITY; });
  if (!bans) {
    return absl::InternalError(absl::StrCat("every logit was non-finite after ", generated,
                                            " generated tokens: no token to pick"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "logit_bias bans every token ",
      config.constraint != nullptr ? "the response format or tool grammar allows"
                                   : "of the vocabulary",
      " after ", generated,
      " generated tokens: lift the -100 (-inf) bias of a token the reply needs"));
}

}  // namespace

absl::StatusOr<Generator> Generator::Start(Session& session, absl::Span<const int32_t> tokens,
                                           const GenerationConfig& config, Options options) {
  if (config.max_new_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_new_tokens is ", config.max_new_tokens, ": ask for at least 1"));
  }
  LNPU_RETURN_IF_ERROR(
      Sampler::Validate(config, static_cast<int32_t>(session.runtime_->info().vocab_size)));
  LNPU_RETURN_IF_ERROR(CheckSpeculative(session, config));
  std::vector<int32_t> input = session.pending_;
  input.insert(input.end(), tokens.begin(), tokens.end());
  LNPU_RETURN_IF_ERROR(session.CheckInput(input));
  // After text, a generated token's leading space separates it from that
  // text; after a lone BOS starting the conversation it starts the text.
  const bool fresh = session.processed_tokens() == 0;
  const bool after_text =
      !fresh || input.size() != 1 || input[0] != session.tokenizer_->bos_id();
  const size_t input_size = input.size();
  session.pending_ = std::move(input);
  return Generator(session, config, std::move(options), input_size, after_text);
}

absl::Status Generator::CheckSpeculative(const Session& session, const GenerationConfig& config) {
  const SpeculativeConfig& speculative = config.speculative;
  if (speculative.kind == SpeculativeConfig::Kind::kNone) return absl::OkStatus();
  const runtime::ModelInfo& info = session.runtime_->info();
  if (info.verify_rows < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "speculative decoding needs a verify graph of at least 2 rows; this model has ",
        info.verify_rows == 0 ? std::string("none") : absl::StrCat(info.verify_rows, " row"),
        ": recompile it with npu-compile --verify-rows K (e.g. 8)"));
  }
  if (speculative.max_draft_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat("speculative max_draft_tokens is ",
                                                   speculative.max_draft_tokens,
                                                   ": propose at least 1 token per step"));
  }
  if (session.runtime_->cache().policy().ring()) {
    return absl::FailedPreconditionError(
        "speculative decoding drops rejected tokens from the cache, which a ring cannot undo "
        "once it evicted the oldest tokens: use the finish cache policy, or no speculation");
  }
  if (speculative.kind == SpeculativeConfig::Kind::kPromptLookup &&
      !(speculative.min_ngram >= 1 && speculative.min_ngram <= speculative.max_ngram)) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt lookup n-gram sizes [", speculative.min_ngram, ", ",
                     speculative.max_ngram, "] are invalid: use 1 <= min_ngram <= max_ngram"));
  }
  if (speculative.kind == SpeculativeConfig::Kind::kDraftModel) {
    if (!(speculative.min_draft_probability >= 0.0f &&
          speculative.min_draft_probability <= 1.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("speculative min_draft_probability is ", speculative.min_draft_probability,
                       ": use a probability in [0, 1] (0: no threshold)"));
    }
    const Session* draft = speculative.draft;
    if (draft == nullptr || draft == &session) {
      return absl::InvalidArgumentError(
          "draft-model speculation needs a session of the draft model other than the "
          "generating one: set speculative.draft");
    }
    const uint32_t draft_vocab = draft->runtime_->info().vocab_size;
    if (draft_vocab != info.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("the draft model has ", draft_vocab,
                                                     " tokens but the model has ", info.vocab_size,
                                                     ": a draft model needs the same vocabulary"));
    }
    if (draft->runtime_->cache().policy().ring()) {
      return absl::FailedPreconditionError(
          "the draft model's session uses the ring cache policy, whose evictions cannot be "
          "undone: give it the finish policy");
    }
  }
  return absl::OkStatus();
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
  if (config.speculative.kind == SpeculativeConfig::Kind::kDraftModel) {
    GenerationConfig draft_config = config;
    draft_config.seed = config.seed ^ 0x9e3779b97f4a7c15ull;  // proposals independent of picks
    draft_sampler_ = std::make_unique<Sampler>(draft_config);
    config.speculative.draft->pending_.clear();
  }
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
  const bool speculative = config_.speculative.kind != SpeculativeConfig::Kind::kNone;
  if (speculative && logits_.empty()) return SpeculativeStep();
  const std::optional<int32_t> token = SampleNextToken();
  if (!token.has_value()) return;
  if (speculative) {
    // The token stays pending: the next step runs it with proposals.
    logits_ = {};
    return;
  }
  RanNextToken(session_->runtime_->Forward(absl::MakeConstSpan(&*token, 1)));
}

std::optional<int32_t> Generator::SampleNextToken() {
  const std::optional<int32_t> token = PickToken(logits_);
  if (!token.has_value() || !EmitToken(*token, session_->runtime_->cache().free_slots())) {
    return std::nullopt;
  }
  return token;
}

void Generator::RanNextToken(absl::StatusOr<absl::Span<const float>> next) {
  if (!next.ok()) {
    result_.error = next.status();
    return Finish(FinishReason::kError);
  }
  session_->pending_.clear();
  logits_ = *next;
}

void Generator::SpeculativeStep() {
  runtime::Sequence& model = *session_->runtime_;
  const uint32_t free_before = model.cache().free_slots();
  const uint32_t vocab = model.info().vocab_size;
  // Tokens emitted in this step: one per verified row. More rows than
  // the reply or the cache can take would be wasted (EmitToken ends the
  // reply when 1 slot is left, and free_before >= 2 here).
  const size_t left = static_cast<size_t>(config_.max_new_tokens) - result_.tokens.size();
  const size_t max_draft =
      std::min({static_cast<size_t>(config_.speculative.max_draft_tokens),
                size_t{model.info().verify_rows} - 1, left - 1, size_t{free_before} - 2});
  const std::vector<int32_t> proposals = ProposeTokens(max_draft);
  const int32_t first_position = model.cache().next_position();
  std::vector<int32_t> rows = session_->pending_;
  rows.insert(rows.end(), proposals.begin(), proposals.end());
  absl::StatusOr<absl::Span<const float>> logits =
      proposals.empty() ? model.Forward(rows) : model.ForwardAllRows(rows);
  if (!logits.ok()) {
    result_.error = logits.status();
    return Finish(FinishReason::kError);
  }
  session_->pending_.clear();
  if (proposals.empty()) {
    logits_ = *logits;
    return;
  }
  result_.stats.drafted_tokens += static_cast<int>(proposals.size());
  // Row i's token follows rows[0..i]; the rows after the last emitted
  // token's row are dropped, so the cache holds exactly what a step
  // without speculation would have run.
  size_t row = 0;
  for (;; ++row) {
    const absl::Span<const float> row_logits = logits->subspan(row * vocab, vocab);
    const bool has_proposal = row < proposals.size();
    const absl::Span<const float> draft =
        has_proposal && !draft_probabilities_.empty()
            ? absl::MakeConstSpan(draft_probabilities_).subspan(row * vocab, vocab)
            : absl::Span<const float>();
    const std::optional<int32_t> token =
        PickToken(row_logits, has_proposal ? proposals[row] : -1, draft);
    if (!token.has_value()) break;
    const bool accepted = has_proposal && *token == proposals[row];
    if (accepted) ++result_.stats.accepted_tokens;
    if (!EmitToken(*token, free_before - static_cast<uint32_t>(row + 1)) || !accepted) break;
  }
  if (absl::Status dropped =
          model.Truncate(static_cast<uint32_t>(first_position) + static_cast<uint32_t>(row) + 1);
      !dropped.ok() && !done_) {
    result_.error = dropped;
    Finish(FinishReason::kError);
  }
  logits_ = {};
}

std::vector<int32_t> Generator::ProposeTokens(size_t max_tokens) {
  draft_probabilities_.clear();
  if (max_tokens == 0) return {};
  std::vector<int32_t> context = session_->runtime_->cache().TokensInContext();
  context.insert(context.end(), session_->pending_.begin(), session_->pending_.end());
  const SpeculativeConfig& speculative = config_.speculative;
  if (speculative.kind == SpeculativeConfig::Kind::kPromptLookup) {
    return PromptLookupDraft(context, speculative.min_ngram, speculative.max_ngram, max_tokens);
  }
  return ProposeWithDraftModel(context, max_tokens);
}

std::vector<int32_t> Generator::ProposeWithDraftModel(absl::Span<const int32_t> context,
                                                      size_t max_tokens) {
  if (draft_skips_ > 0) {
    --draft_skips_;
    return {};
  }
  runtime::Sequence& draft = *config_.speculative.draft->runtime_;
  // Keep the draft's cache where it agrees with the conversation, but run
  // at least the last token, whose logits give the first proposal.
  const std::vector<int32_t> cached = draft.cache().TokensInContext();
  const size_t limit = std::min(cached.size(), context.size() - 1);
  const size_t common =
      std::mismatch(cached.begin(), cached.begin() + static_cast<ptrdiff_t>(limit), context.begin())
          .first -
      cached.begin();
  // Drafting is best effort: when the draft's cache cannot take the
  // conversation, the step runs without proposals.
  if (!draft.Truncate(static_cast<uint32_t>(common)).ok()) return {};
  const uint32_t room = draft.cache().free_slots();
  if (room < context.size() - common) return {};
  max_tokens = std::min<size_t>(max_tokens, room - (context.size() - common) + 1);
  absl::StatusOr<absl::Span<const float>> logits = draft.Forward(context.subspan(common));
  std::vector<int32_t> proposals;
  const bool sampling = config_.temperature != 0.0f && config_.top_k != 1;
  const uint32_t vocab = draft.info().vocab_size;
  const float min_probability = config_.speculative.min_draft_probability;
  while (logits.ok()) {
    if (min_probability > 0.0f && Sampler::TopProbability(*logits) < min_probability) break;
    draft_sampler_->Distribution(*logits, history_, {}, &target_probabilities_);
    const int32_t token = draft_sampler_->Draw(target_probabilities_);
    proposals.push_back(token);
    if (sampling) {
      draft_probabilities_.insert(draft_probabilities_.end(), target_probabilities_.begin(),
                                  target_probabilities_.begin() + vocab);
    }
    if (proposals.size() == max_tokens) break;
    logits = draft.Forward(absl::MakeConstSpan(&proposals.back(), 1));
  }
  if (logits.ok() && proposals.empty()) {  // unsure of its first token
    draft_skips_ = draft_next_skips_;
    draft_next_skips_ = std::min(2 * draft_next_skips_, kMaxDraftSkips);
  } else if (!proposals.empty()) {
    draft_next_skips_ = 1;
  }
  return proposals;
}

std::optional<int32_t> Generator::PickToken(absl::Span<const float> logits, int32_t proposed,
                                            absl::Span<const float> draft) {
  if (options_.logits_filter) {
    filtered_logits_.assign(logits.begin(), logits.end());
    options_.logits_filter(result_.tokens, absl::MakeSpan(filtered_logits_));
    logits = filtered_logits_;
  }
  // A constraint (structured output) bans every token it does not allow
  // before any other sampling control, then follows the one picked.
  if (config_.constraint != nullptr) {
    if (absl::Status allowed = config_.constraint->AllowedTokens(allowed_tokens_); !allowed.ok()) {
      result_.error = ConstraintError(allowed);
      Finish(FinishReason::kError);
      return std::nullopt;
    }
  }
  int32_t token;
  if (proposed < 0) {
    token = sampler_->Sample(logits, history_, allowed_tokens_);
  } else {
    sampler_->Distribution(logits, history_, allowed_tokens_, &target_probabilities_);
    token = sampler_->nothing_left()
                ? 0
                : sampler_->AcceptOrResample(target_probabilities_, draft, proposed);
  }
  if (sampler_->nothing_left()) {
    result_.error = NoTokenLeftError(config_, result_.tokens.size());
    Finish(FinishReason::kError);
    return std::nullopt;
  }
  if (config_.constraint != nullptr) {
    if (absl::Status accepted = config_.constraint->Accept(token); !accepted.ok()) {
      result_.error = ConstraintError(accepted);
      Finish(FinishReason::kError);
      return std::nullopt;
    }
  }
  return token;
}

bool Generator::EmitToken(int32_t token, uint32_t free_slots) {
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
    return false;
  }
  result_.tokens.push_back(token);
  history_.push_back(token);
  const std::string text = stop_strings_->Push(detokenizer_->Push(token));
  result_.text += text;
  if (options_.on_token && !options_.on_token(token, text)) {
    Finish(FinishReason::kCancelled);
    return false;
  }
  if (stop_strings_->stopped()) {
    Finish(FinishReason::kStop);
    return false;
  }
  if (result_.tokens.size() >= static_cast<size_t>(config_.max_new_tokens) ||
      (!session_->runtime_->cache().policy().ring() && free_slots <= 1)) {
    // Without ring, the reply ends when the token takes the last free
    // slot, which stays for it: the conversation still fits the cache.
    Finish(FinishReason::kLength);
    return false;
  }
  return true;
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
