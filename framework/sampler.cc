#include "framework/sampler.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

int32_t Argmax(absl::Span<const float> logits) {
  int32_t best = 0;
  float best_value = -INFINITY;
  bool found = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isfinite(logits[i]) && (!found || logits[i] > best_value)) {
      best = static_cast<int32_t>(i);
      best_value = logits[i];
      found = true;
    }
  }
  return best;
}

absl::Status CheckTokenId(const char* field, int32_t id,
                          std::optional<int32_t> vocab_size) {
  if (id < 0 || (vocab_size.has_value() && id >= *vocab_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " names token ", id, ", which is not in the vocabulary",
        vocab_size.has_value() ? absl::StrCat(" [0, ", *vocab_size, ")") : ""));
  }
  return absl::OkStatus();
}

bool InVocabulary(int32_t id, size_t vocab_size) {
  return id >= 0 && static_cast<size_t>(id) < vocab_size;
}

}  // namespace

absl::Status Sampler::Validate(const GenerationConfig& config,
                               std::optional<int32_t> vocab_size) {
  if (!(config.temperature >= 0.0f) || !std::isfinite(config.temperature)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "temperature ", config.temperature,
        " is invalid: use 0 for greedy decoding or a positive value"));
  }
  if (config.top_k < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top_k ", config.top_k, " is negative: use 0 for no limit"));
  }
  if (!(config.top_p > 0.0f && config.top_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top_p ", config.top_p, " is outside (0, 1]: use 1 for no limit"));
  }
  if (!(config.min_p >= 0.0f && config.min_p <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "min_p ", config.min_p, " is outside [0, 1]: use 0 for no limit"));
  }
  if (!(config.repetition_penalty > 0.0f) ||
      !std::isfinite(config.repetition_penalty)) {
    return absl::InvalidArgumentError(
        absl::StrCat("repetition_penalty ", config.repetition_penalty,
                     " is invalid: use a positive value (1 for none)"));
  }
  for (const auto& [name, value] :
       {std::pair<const char*, float>{"presence_penalty",
                                      config.presence_penalty},
        {"frequency_penalty", config.frequency_penalty}}) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " ", value, " is not finite: use 0 for none"));
    }
  }
  if (config.repeat_last_n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeat_last_n ", config.repeat_last_n,
                     " is negative: use 0 to turn the penalties off"));
  }
  for (const auto& [id, bias] : config.logit_bias) {
    LNPU_RETURN_IF_ERROR(CheckTokenId("logit_bias", id, vocab_size));
    if (std::isnan(bias) || bias == INFINITY) {
      return absl::InvalidArgumentError(absl::StrCat(
          "logit_bias for token ", id, " is ", bias,
          ": use a finite bias, or -inf to ban the token"));
    }
  }
  for (int32_t id : config.stop_token_ids) {
    LNPU_RETURN_IF_ERROR(CheckTokenId("stop_token_ids", id, vocab_size));
  }
  for (size_t i = 0; i < config.stop_strings.size(); ++i) {
    const std::string& stop = config.stop_strings[i];
    if (stop.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stop_strings[", i, "] is empty: every stop string needs text"));
    }
    // Validate() fails with InvalidArgument.
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(utf8::Validate(stop), "stop_strings[", i,
                                     "] is not well-formed UTF-8: ");
  }
  return absl::OkStatus();
}

Sampler::Sampler(const GenerationConfig& config)
    : temperature_(config.temperature),
      top_k_(config.top_k),
      top_p_(config.top_p),
      min_p_(config.min_p),
      repetition_penalty_(config.repetition_penalty),
      presence_penalty_(config.presence_penalty),
      frequency_penalty_(config.frequency_penalty),
      repeat_last_n_(config.repeat_last_n),
      logit_bias_(config.logit_bias.begin(), config.logit_bias.end()),
      rng_(config.seed) {}

void Sampler::AdjustLogits(absl::Span<const float> logits,
                           absl::Span<const int32_t> history,
                           absl::Span<const uint64_t> allowed_tokens) {
  const size_t n = logits.size();
  adjusted_.assign(logits.begin(), logits.end());
  if (!allowed_tokens.empty()) {
    for (size_t i = 0; i < n; ++i) {
      const bool allowed = i / 64 < allowed_tokens.size() &&
                           (allowed_tokens[i / 64] >> (i % 64) & 1) != 0;
      if (!allowed) adjusted_[i] = -INFINITY;
    }
  }
  for (const auto& [id, bias] : logit_bias_) {
    if (InVocabulary(id, n)) adjusted_[id] += bias;
  }
  const bool penalize = repeat_last_n_ > 0 &&
                        (repetition_penalty_ != 1.0f ||
                         presence_penalty_ != 0.0f || frequency_penalty_ != 0.0f);
  if (!penalize || history.empty()) return;
  if (counts_.size() != n) counts_.assign(n, 0);
  const absl::Span<const int32_t> window = history.subspan(
      history.size() - std::min(history.size(),
                                static_cast<size_t>(repeat_last_n_)));
  for (int32_t id : window) {
    if (InVocabulary(id, n)) ++counts_[id];
  }
  // Each distinct token once: its count is reset after use.
  for (int32_t id : window) {
    if (!InVocabulary(id, n) || counts_[id] == 0) continue;
    float& logit = adjusted_[id];
    if (logit <= 0.0f) {
      logit *= repetition_penalty_;
    } else {
      logit /= repetition_penalty_;
    }
    logit -= static_cast<float>(counts_[id]) * frequency_penalty_ +
             presence_penalty_;
    counts_[id] = 0;
  }
}

int32_t Sampler::Sample(absl::Span<const float> logits,
                        absl::Span<const int32_t> history,
                        absl::Span<const uint64_t> allowed_tokens) {
  AdjustLogits(logits, history, allowed_tokens);
  if (temperature_ == 0.0f || top_k_ == 1) {
    const int32_t best = Argmax(adjusted_);
    nothing_left_ = !std::isfinite(adjusted_[static_cast<size_t>(best)]);
    return best;
  }
  const double total = Candidates();
  nothing_left_ = candidates_.empty();
  if (nothing_left_) return 0;
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (const auto& [p, id] : candidates_) {
    if (r < p) return id;
    r -= p;
  }
  return candidates_.back().second;
}

void Sampler::Distribution(absl::Span<const float> logits, absl::Span<const int32_t> history,
                           absl::Span<const uint64_t> allowed_tokens,
                           std::vector<float>* probabilities) {
  AdjustLogits(logits, history, allowed_tokens);
  probabilities->assign(logits.size(), 0.0f);
  if (temperature_ == 0.0f || top_k_ == 1) {
    const size_t best = static_cast<size_t>(Argmax(adjusted_));
    nothing_left_ = !std::isfinite(adjusted_[best]);
    (*probabilities)[best] = 1.0f;
    return;
  }
  const double total = Candidates();
  nothing_left_ = candidates_.empty();
  if (nothing_left_) {
    (*probabilities)[0] = 1.0f;  // as Sample()
    return;
  }
  for (const auto& [p, id] : candidates_) {
    (*probabilities)[static_cast<size_t>(id)] = static_cast<float>(p / total);
  }
}

int32_t Sampler::Draw(absl::Span<const float> probabilities) {
  double total = 0;
  int32_t last = 0;
  for (size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] > 0.0f) {
      total += probabilities[i];
      last = static_cast<int32_t>(i);
    }
  }
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] <= 0.0f) continue;
    if (r < probabilities[i]) return static_cast<int32_t>(i);
    r -= probabilities[i];
  }
  return last;
}

int32_t Sampler::AcceptOrResample(absl::Span<const float> target, absl::Span<const float> draft,
                                  int32_t proposed) {
  const size_t d = static_cast<size_t>(proposed);
  const double q = draft.empty() ? 1.0 : draft[d];
  // u < p / q, written without dividing (q > 0 for a token drawn from it).
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (uniform(rng_) * q < target[d]) return proposed;
  residual_.resize(target.size());
  double mass = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    const float q_i = draft.empty() ? (i == d ? 1.0f : 0.0f) : draft[i];
    residual_[i] = std::max(0.0f, target[i] - q_i);
    mass += residual_[i];
  }
  residual_[d] = 0.0f;
  if (mass <= 0) {
    // Only rounding leaves nothing: the target without the rejected token.
    residual_.assign(target.begin(), target.end());
    residual_[d] = 0.0f;
    if (std::all_of(residual_.begin(), residual_.end(), [](float p) { return p <= 0.0f; })) {
      return proposed;
    }
  }
  return Draw(residual_);
}

double Sampler::Candidates() {
  candidates_.clear();
  for (size_t i = 0; i < adjusted_.size(); ++i) {
    if (std::isfinite(adjusted_[i])) {
      candidates_.emplace_back(adjusted_[i], static_cast<int32_t>(i));
    }
  }
  if (candidates_.empty()) return 0;
  // Highest logit first; ties by lower id, so results do not depend on the
  // standard library's sort.
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (top_k_ > 0 && static_cast<size_t>(top_k_) < keep) {
    keep = static_cast<size_t>(top_k_);
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep,
                      candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  candidates_.resize(keep);

  const float max_logit = candidates_.front().first;
  // Nucleus at temperature 1: the smallest prefix whose mass reaches top_p.
  if (top_p_ < 1.0f) {
    double total = 0;
    for (const auto& [logit, id] : candidates_) {
      total += std::exp(static_cast<double>(logit) - max_logit);
    }
    double mass = 0;
    size_t n = 0;
    while (n < candidates_.size()) {
      mass += std::exp(static_cast<double>(candidates_[n].first) - max_logit) /
              total;
      ++n;
      if (mass >= top_p_) break;
    }
    candidates_.resize(n);
  }
  // min-p: p >= min_p * p_max, i.e. logit >= max_logit + log(min_p).
  if (min_p_ > 0.0f) {
    const double threshold = max_logit + std::log(static_cast<double>(min_p_));
    size_t n = 1;  // the most likely token always stays
    while (n < candidates_.size() && candidates_[n].first >= threshold) ++n;
    candidates_.resize(n);
  }

  // Softmax at the temperature, in place (first = unnormalized probability).
  double total = 0;
  for (auto& [value, id] : candidates_) {
    value = static_cast<float>(
        std::exp((static_cast<double>(value) - max_logit) / temperature_));
    total += value;
  }
  return total;
}

}  // namespace lnpu::framework
