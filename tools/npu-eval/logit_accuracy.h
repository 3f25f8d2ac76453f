// How far one model's next-token logits are from a baseline's, over many
// positions: top-1 agreement, the logit error in units of the baseline's
// spread, and the KL divergence of the softmax distributions.
#ifndef TOOLS_NPU_EVAL_LOGIT_ACCURACY_H_
#define TOOLS_NPU_EVAL_LOGIT_ACCURACY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace lnpu::eval {

// Summary over the positions added to a LogitAccuracy. With b the baseline
// and v the compared logits at one position, s = the population standard
// deviation of b over the vocabulary, P = softmax(b), Q = softmax(v):
struct LogitAccuracySummary {
  uint64_t positions = 0;
  uint64_t top1_matches = 0;  // positions where argmax v == argmax b
  // top1_matches / positions (1 with no positions).
  double top1_agreement = 1.0;
  // |v_i - b_i| / s averaged over the vocabulary, then over positions.
  double mean_normalized_error = 0.0;
  // max_i |v_i - b_i| / s, the largest over positions.
  double max_normalized_error = 0.0;
  // KL(P || Q) in nats: mean and largest over positions.
  double mean_kl = 0.0;
  double max_kl = 0.0;
};

// Accumulates positions one at a time. Ties in argmax go to the lowest
// index. Not thread-safe.
class LogitAccuracy {
 public:
  // Adds one position. InvalidArgument when the spans are empty or differ
  // in length, or a logit is not finite; nothing is added then. A constant
  // baseline (s = 0) counts its error against s = 1.
  absl::Status Add(absl::Span<const float> baseline, absl::Span<const float> compared);

  LogitAccuracySummary Summary() const;

 private:
  uint64_t positions_ = 0;
  uint64_t top1_matches_ = 0;
  double normalized_error_sum_ = 0.0;
  double max_normalized_error_ = 0.0;
  double kl_sum_ = 0.0;
  double max_kl_ = 0.0;
};

}  // namespace lnpu::eval

#endif  // TOOLS_NPU_EVAL_LOGIT_ACCURACY_H_
