#include "framework/sampler.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/argmax.h"
#include "base/status_macros.h"
#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

// Candidates' mass by logit: bin b holds the logits between b and b + 1
// bins below the maximum, the last bin everything further down.
constexpr size_t kMassBins = 256;
constexpr double kBinsPerLogit = 8;  // at temperature 1: 32 logits, e^-32
// The fewest candidates sorted at a time.
constexpr size_t kMinSortBatch = 64;

// Sampling order: the highest logit first, the lower id on ties, so that
// results do not depend on the standard library's sort.
struct SamplingOrder {
  bool operator()(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) const {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  }
};

size_t MassBin(double bins_below_max) {
  return bins_below_max < static_cast<double>(kMassBins - 1)
             ? static_cast<size_t>(bins_below_max)
             : kMassBins - 1;
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
  // The draw walks the candidates in sampling order: sorted only as far as
  // the mass of r needs.
  SortForMass(r);
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (i == sorted_) SortAtLeast(i + 1);
    const auto& [logit, id] = candidates_[i];
    const float p = Weight(logit);
    if (r < p) return id;
    r -= p;
  }
  return candidates_.back().second;  // rounding: the last, all sorted by now
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
  for (const auto& [logit, id] : candidates_) {
    (*probabilities)[static_cast<size_t>(id)] = static_cast<float>(Weight(logit) / total);
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

float Sampler::Weight(float logit) const {
  return static_cast<float>(
      std::exp((static_cast<double>(logit) - max_logit_) / temperature_));
}

void Sampler::SortAtLeast(size_t count) {
  const size_t size = candidates_.size();
  if (sorted_ >= size) return;
  size_t end = std::max({count, 2 * sorted_, kMinSortBatch});
  if (end < size) {
    std::nth_element(candidates_.begin() + sorted_, candidates_.begin() + end,
                     candidates_.end(), SamplingOrder());
  } else {
    end = size;
  }
  std::sort(candidates_.begin() + sorted_, candidates_.begin() + end, SamplingOrder());
  sorted_ = end;
}

void Sampler::SortForMass(double mass) {
  if (sorted_ >= candidates_.size()) return;
  double cumulative = 0;
  size_t bins = 0;
  while (bins < kMassBins && cumulative < mass) cumulative += mass_bins_[bins++];
  ++bins;  // one to spare for rounding
  if (bins >= kMassBins) {
    SortAtLeast(candidates_.size());
    return;
  }
  // The candidates of bins [0, bins) and a few at the edge: every one left
  // behind comes after them in sampling order.
  const double threshold = max_logit_ - static_cast<double>(bins) / bins_per_logit_;
  const auto above = std::partition(
      candidates_.begin() + sorted_, candidates_.end(),
      [&](const std::pair<float, int32_t>& c) { return c.first > threshold; });
  std::sort(candidates_.begin() + sorted_, above, SamplingOrder());
  sorted_ = static_cast<size_t>(above - candidates_.begin());
}

void Sampler::BinMass(double bins_per_logit, absl::FunctionRef<double(float)> weight,
                      double* total) {
  bins_per_logit_ = bins_per_logit;
  mass_bins_.assign(kMassBins, 0.0);
  double sum = 0;
  for (const auto& [logit, id] : candidates_) {
    const double w = weight(logit);
    sum += w;
    mass_bins_[MassBin((static_cast<double>(max_logit_) - logit) * bins_per_logit)] += w;
  }
  *total = sum;
}

double Sampler::Candidates() {
  candidates_.clear();
  sorted_ = 0;
  max_logit_ = MaxFinite(adjusted_);
  if (max_logit_ == -INFINITY) return 0;
  // min-p keeps the logits >= max + log(min_p). Without top-p, whose mass
  // counts the tokens under that, the others can go first: top-k keeps the
  // highest, so it keeps the same tokens of those left.
  const double min_p_threshold =
      min_p_ > 0.0f ? max_logit_ + std::log(static_cast<double>(min_p_)) : -INFINITY;
  const double floor = top_p_ < 1.0f ? -INFINITY : min_p_threshold;
  candidates_.reserve(adjusted_.size());
  for (size_t i = 0; i < adjusted_.size(); ++i) {
    const float logit = adjusted_[i];
    if (std::isfinite(logit) && logit >= floor) {
      candidates_.emplace_back(logit, static_cast<int32_t>(i));
    }
  }
  if (top_k_ > 0 && static_cast<size_t>(top_k_) < candidates_.size()) {
    const size_t keep = static_cast<size_t>(top_k_);
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(),
                      SamplingOrder());
    candidates_.resize(keep);
    sorted_ = keep;
  }
  // Nucleus at temperature 1: the smallest prefix whose mass reaches top_p.
  if (top_p_ < 1.0f) {
    const auto weight = [&](float logit) {
      return std::exp(static_cast<double>(logit) - max_logit_);
    };
    double total = 0;
    BinMass(kBinsPerLogit, weight, &total);
    SortForMass(top_p_ * total);
    double mass = 0;
    size_t n = 0;
    while (n < candidates_.size()) {
      if (n == sorted_) SortAtLeast(n + 1);
      mass += weight(candidates_[n].first) / total;
      ++n;
      if (mass >= top_p_) break;
    }
    candidates_.resize(n);
    sorted_ = n;
    // min-p on the sorted nucleus (the most likely token always stays).
    if (min_p_ > 0.0f) {
      size_t kept = 1;
      while (kept < candidates_.size() && candidates_[kept].first >= min_p_threshold) ++kept;
      candidates_.resize(kept);
      sorted_ = kept;
    }
  }
  // The draw's mass, binned for Sample() when some candidates are unsorted.
  double total = 0;
  if (sorted_ < candidates_.size()) {
    BinMass(kBinsPerLogit / temperature_, [&](float logit) { return Weight(logit); }, &total);
  } else {
    for (const auto& [logit, id] : candidates_) total += Weight(logit);
  }
  return total;
}

}  // namespace lnpu::framework
