#include "framework/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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

// Sampling order: the highest logit first, the lower id on ties, so that
// results do not depend on the standard library's sort.
struct SamplingOrder {
  bool operator()(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) const {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  }
};

typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));

// e^x as a float for x <= 0, within about 1 ulp of std::exp; 0 below -87
// (under 2e-38 of the largest weight, which is 1) and for NaN. Cephes'
// expf: e^x = 2^k e^f with |f| <= ln(2) / 2 and a degree-6 polynomial,
// four values at a time in the compiler's 128-bit vectors (SSE2, NEON).
F4 ExpNonPositive(F4 x) {
  const I4 in_range = x >= -87.0f;
  x = in_range ? x : F4{} - 87.0f;
  // k = round(x / ln 2), x <= 0.
  const I4 k = __builtin_convertvector(x * 1.44269504088896341f - 0.5f, I4);
  const F4 kf = __builtin_convertvector(k, F4);
  F4 f = x - kf * 0.693359375f;
  f = f - kf * -2.12194440e-4f;
  F4 p = F4{} + 1.9875691500e-4f;
  p = p * f + 1.3981999507e-3f;
  p = p * f + 8.3334519073e-3f;
  p = p * f + 4.1665795894e-2f;
  p = p * f + 1.6666665459e-1f;
  p = p * f + 5.0000001201e-1f;
  const F4 e = p * f * f + f + 1.0f;
  const I4 exponent = (k + 127) << 23;
  F4 scale;
  std::memcpy(&scale, &exponent, sizeof(scale));
  return in_range ? e * scale : F4{};
}

// The same, one value (bit for bit as in a vector).
float ExpNonPositive(float x) { return ExpNonPositive(F4{} + x)[0]; }

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

template <class Visit>
void Sampler::ForEachCandidate(const Visit& visit) const {
  if (complete_) {
    for (const auto& [logit, id] : candidates_) visit(logit, id);
    return;
  }
  for (size_t i = 0; i < logits_.size(); ++i) {
    const float logit = logits_[i];
    if (std::isfinite(logit) && logit >= candidate_floor_) visit(logit, static_cast<int32_t>(i));
  }
}

double Sampler::BinMass(double bins_per_logit, float scale) {
  bins_per_logit_ = bins_per_logit;
  mass_bins_.assign(kMassBins, 0.0);
  double total = 0;
  const auto add = [&](float logit, float weight) {
    total += weight;
    mass_bins_[MassBin((static_cast<double>(max_logit_) - logit) * bins_per_logit)] += weight;
  };
  if (complete_) {
    for (const auto& [logit, id] : candidates_) {
      add(logit, ExpNonPositive((logit - max_logit_) * scale));
    }
    return total;
  }
  // The candidates are the finite logits >= candidate_floor_, i.e. in
  // [max(candidate_floor_, lowest finite), largest finite].
  const float low = std::max(candidate_floor_, -std::numeric_limits<float>::max());
  const float high = std::numeric_limits<float>::max();
  const size_t n = logits_.size();
  const float* logits = logits_.data();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    F4 logit;
    std::memcpy(&logit, logits + i, sizeof(logit));
    const I4 kept = (logit >= low) & (logit <= high);
    if ((kept[0] | kept[1] | kept[2] | kept[3]) == 0) continue;
    const F4 weight = ExpNonPositive((logit - max_logit_) * scale);
    for (int j = 0; j < 4; ++j) {
      if (kept[j] != 0) add(logit[j], weight[j]);
    }
  }
  for (; i < n; ++i) {
    if (logits[i] >= low && logits[i] <= high) {
      add(logits[i], ExpNonPositive((logits[i] - max_logit_) * scale));
    }
  }
  return total;
}

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
      inverse_temperature_(config.temperature > 0.0f ? 1.0f / config.temperature : 0.0f),
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
  const bool penalize = repeat_last_n_ > 0 && !history.empty() &&
                        (repetition_penalty_ != 1.0f ||
                         presence_penalty_ != 0.0f || frequency_penalty_ != 0.0f);
  if (allowed_tokens.empty() && logit_bias_.empty() && !penalize) {
    // Nothing to adjust: no copy (the logits of a batched step were just
    // written by the device's threads on other cores).
    logits_ = logits;
    return;
  }
  adjusted_.assign(logits.begin(), logits.end());
  logits_ = adjusted_;
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
  if (!penalize) return;
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

float Sampler::TopProbability(absl::Span<const float> logits) {
  const float max = MaxFinite(logits);
  if (max == -INFINITY) return 0.0f;
  // Per draft token, over the whole vocabulary: four exps at a time
  // (151,936 logits: std::exp in double took 708 us).
  const size_t n = logits.size();
  F4 sums{};
  I4 above{};  // a NaN or +infinity logit (max is the largest finite one)
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    F4 logit;
    std::memcpy(&logit, logits.data() + i, sizeof(logit));
    const I4 below = logit <= max;
    above |= ~below;
    sums += ExpNonPositive(below ? logit - max : F4{});
  }
  double sum = static_cast<double>(sums[0]) + sums[1] + sums[2] + sums[3];
  bool not_finite = (above[0] | above[1] | above[2] | above[3]) != 0;
  for (; i < n; ++i) {
    not_finite = not_finite || !(logits[i] <= max);
    if (logits[i] <= max) sum += ExpNonPositive(logits[i] - max);
  }
  return not_finite ? 0.0f : static_cast<float>(1.0 / sum);
}

int32_t Sampler::Sample(absl::Span<const float> logits,
                        absl::Span<const int32_t> history,
                        absl::Span<const uint64_t> allowed_tokens) {
  AdjustLogits(logits, history, allowed_tokens);
  if (temperature_ == 0.0f || top_k_ == 1) {
    const int32_t best = Argmax(logits_);
    nothing_left_ = !std::isfinite(logits_[static_cast<size_t>(best)]);
    return best;
  }
  const double total = Candidates();
  nothing_left_ = total == 0;
  if (nothing_left_) return 0;
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  // The draw walks the candidates in sampling order: sorted only as far as
  // the mass of r needs.
  HeadForMass(r);
  for (size_t i = 0;; ++i) {
    if (i == candidates_.size()) {
      if (complete_) break;
      ExtendHead(-INFINITY);  // rounding took the draw past the head
      if (i == candidates_.size()) break;
    }
    const auto& [logit, id] = candidates_[i];
    const float p = Weight(logit);
    if (r < p) return id;
    r -= p;
  }
  return candidates_.back().second;  // rounding: the last
}

void Sampler::Distribution(absl::Span<const float> logits, absl::Span<const int32_t> history,
                           absl::Span<const uint64_t> allowed_tokens,
                           std::vector<float>* probabilities) {
  AdjustLogits(logits, history, allowed_tokens);
  probabilities->assign(logits.size(), 0.0f);
  if (temperature_ == 0.0f || top_k_ == 1) {
    const size_t best = static_cast<size_t>(Argmax(logits_));
    nothing_left_ = !std::isfinite(logits_[best]);
    (*probabilities)[best] = 1.0f;
    return;
  }
  const double total = Candidates();
  nothing_left_ = total == 0;
  if (nothing_left_) {
    (*probabilities)[0] = 1.0f;  // as Sample()
    return;
  }
  ForEachCandidate([&](float logit, int32_t id) {
    (*probabilities)[static_cast<size_t>(id)] = static_cast<float>(Weight(logit) / total);
  });
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
  return ExpNonPositive((logit - max_logit_) * inverse_temperature_);
}

void Sampler::ExtendHead(double floor) {
  if (complete_ || floor >= head_floor_) return;  // the head only grows
  const bool all = floor <= candidate_floor_;
  if (all) floor = candidate_floor_;
  const size_t begin = candidates_.size();
  for (size_t i = 0; i < logits_.size(); ++i) {
    const float logit = logits_[i];
    if (std::isfinite(logit) && logit >= floor && logit < head_floor_) {
      candidates_.emplace_back(logit, static_cast<int32_t>(i));
    }
  }
  // All below the head's candidates: they come after them.
  std::sort(candidates_.begin() + begin, candidates_.end(), SamplingOrder());
  head_floor_ = floor;
  complete_ = all;
}

void Sampler::HeadForMass(double mass) {
  if (complete_) return;
  double cumulative = 0;
  size_t bins = 0;
  while (bins < kMassBins && cumulative < mass) cumulative += mass_bins_[bins++];
  ++bins;  // one to spare for rounding
  // Bins [0, bins) hold the logits above the bound.
  ExtendHead(bins >= kMassBins ? -INFINITY
                               : max_logit_ - static_cast<double>(bins) / bins_per_logit_);
}

double Sampler::Candidates() {
  candidates_.clear();
  candidates_.reserve(logits_.size());  // allocates on the first call only
  complete_ = false;
  head_floor_ = INFINITY;
  max_logit_ = MaxFinite(logits_);
  if (max_logit_ == -INFINITY) {
    complete_ = true;
    return 0;
  }
  // min-p keeps the logits >= max + log(min_p). Without top-p, whose mass
  // counts the tokens under that, the others can go first: top-k keeps the
  // highest, so it keeps the same tokens of those left.
  const double min_p_threshold =
      min_p_ > 0.0f ? max_logit_ + std::log(static_cast<double>(min_p_)) : -INFINITY;
  const double floor = top_p_ < 1.0f ? -INFINITY : min_p_threshold;
  // The smallest float >= the bound: the same test on float logits.
  candidate_floor_ = static_cast<float>(floor);
  if (static_cast<double>(candidate_floor_) < floor) {
    candidate_floor_ = std::nextafter(candidate_floor_, INFINITY);
  }
  if (top_k_ > 0) {
    ForEachCandidate([&](float logit, int32_t id) { candidates_.emplace_back(logit, id); });
    const size_t keep = std::min(candidates_.size(), static_cast<size_t>(top_k_));
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(),
                      SamplingOrder());
    candidates_.resize(keep);
    complete_ = true;
  }
  // Nucleus at temperature 1: the smallest prefix whose mass reaches top_p.
  if (top_p_ < 1.0f) {
    const auto weight = [&](float logit) { return ExpNonPositive(logit - max_logit_); };
    const double total = BinMass(kBinsPerLogit, 1.0f);
    HeadForMass(top_p_ * total);
    double mass = 0;
    size_t n = 0;
    for (;;) {
      if (n == candidates_.size()) {
        if (complete_) break;
        ExtendHead(-INFINITY);
        if (n == candidates_.size()) break;
      }
      mass += static_cast<double>(weight(candidates_[n].first)) / total;
      ++n;
      if (mass >= top_p_) break;
    }
    candidates_.resize(n);
    complete_ = true;
    // min-p on the sorted nucleus (the most likely token always stays).
    if (min_p_ > 0.0f) {
      size_t kept = 1;
      while (kept < candidates_.size() && candidates_[kept].first >= min_p_threshold) ++kept;
      candidates_.resize(kept);
    }
  }
  // The draw's mass, binned for Sample() when the head is not all.
  if (!complete_) return BinMass(kBinsPerLogit / temperature_, inverse_temperature_);
  double total = 0;
  for (const auto& [logit, id] : candidates_) total += Weight(logit);
  return total;
}

}  // namespace lnpu::framework
