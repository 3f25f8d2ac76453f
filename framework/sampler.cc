#include "framework/sampler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

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

}  // namespace

absl::Status Sampler::Validate(const GenerationConfig& config) {
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
  return absl::OkStatus();
}

Sampler::Sampler(const GenerationConfig& config)
    : temperature_(config.temperature),
      top_k_(config.top_k),
      top_p_(config.top_p),
      rng_(config.seed) {}

int32_t Sampler::Sample(absl::Span<const float> logits) {
  if (temperature_ == 0.0f || top_k_ == 1) return Argmax(logits);

  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isfinite(logits[i])) {
      candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
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

  // Softmax at the temperature, in place (first = probability).
  const float max_logit = candidates_.front().first;
  double total = 0;
  for (auto& [value, id] : candidates_) {
    value = std::exp((value - max_logit) / temperature_);
    total += value;
  }
  // Nucleus: the smallest prefix whose mass reaches top_p.
  if (top_p_ < 1.0f) {
    double mass = 0;
    size_t n = 0;
    while (n < candidates_.size()) {
      mass += candidates_[n].first / total;
      ++n;
      if (mass >= top_p_) break;
    }
    candidates_.resize(n);
    total = 0;
    for (const auto& [p, id] : candidates_) total += p;
  }
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (const auto& [p, id] : candidates_) {
    if (r < p) return id;
    r -= p;
  }
  return candidates_.back().second;
}

}  // namespace lnpu::framework
