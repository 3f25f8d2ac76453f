#include "tools/npu-eval/logit_accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "base/argmax.h"

namespace lnpu::eval {
namespace {

// log(sum_i exp(x_i)), computed without overflow.
double LogSumExp(absl::Span<const float> logits, double max_logit) {
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - max_logit);
  return max_logit + std::log(sum);
}

}  // namespace

absl::Status LogitAccuracy::Add(absl::Span<const float> baseline,
                                absl::Span<const float> compared) {
  if (baseline.empty() || baseline.size() != compared.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "logit vectors of ", baseline.size(), " and ", compared.size(),
        " entries: both must have one entry per vocabulary token"));
  }
  for (size_t i = 0; i < baseline.size(); ++i) {
    if (!std::isfinite(baseline[i]) || !std::isfinite(compared[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "logit of token ", i, " is not finite (baseline ", baseline[i], ", compared ",
          compared[i], ")"));
    }
  }
  const double n = static_cast<double>(baseline.size());
  double mean = 0.0;
  for (const float b : baseline) mean += b;
  mean /= n;
  double variance = 0.0;
  for (const float b : baseline) variance += (b - mean) * (b - mean);
  const double stddev = std::sqrt(variance / n);
  const double scale = stddev > 0.0 ? 1.0 / stddev : 1.0;

  double error_sum = 0.0;
  double error_max = 0.0;
  for (size_t i = 0; i < baseline.size(); ++i) {
    const double error = std::fabs(static_cast<double>(compared[i]) - baseline[i]) * scale;
    error_sum += error;
    error_max = std::max(error_max, error);
  }

  // KL(P || Q) = sum_i P_i (log P_i - log Q_i), with log P_i = b_i - lse(b).
  const size_t top_b = static_cast<size_t>(Argmax(baseline));
  const size_t top_c = static_cast<size_t>(Argmax(compared));
  const double lse_b = LogSumExp(baseline, baseline[top_b]);
  const double lse_c = LogSumExp(compared, compared[top_c]);
  double kl = 0.0;
  for (size_t i = 0; i < baseline.size(); ++i) {
    const double log_p = baseline[i] - lse_b;
    const double log_q = compared[i] - lse_c;
    kl += std::exp(log_p) * (log_p - log_q);
  }
  kl = std::max(kl, 0.0);  // rounding can leave a tiny negative sum

  ++positions_;
  top1_matches_ += top_b == top_c ? 1 : 0;
  normalized_error_sum_ += error_sum / n;
  max_normalized_error_ = std::max(max_normalized_error_, error_max);
  kl_sum_ += kl;
  max_kl_ = std::max(max_kl_, kl);
  return absl::OkStatus();
}

LogitAccuracySummary LogitAccuracy::Summary() const {
  LogitAccuracySummary summary;
  summary.positions = positions_;
  summary.top1_matches = top1_matches_;
  if (positions_ == 0) return summary;
  const double n = static_cast<double>(positions_);
  summary.top1_agreement = static_cast<double>(top1_matches_) / n;
  summary.mean_normalized_error = normalized_error_sum_ / n;
  summary.max_normalized_error = max_normalized_error_;
  summary.mean_kl = kl_sum_ / n;
  summary.max_kl = max_kl_;
  return summary;
}

}  // namespace lnpu::eval
