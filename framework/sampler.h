// Picks the next token from logits. An allowed-token mask (e.g. from a
// grammar: framework/token_constraint.h) bans every token it leaves out
// first; then the controls of GenerationConfig apply in this order
// (docs/chat-and-sampling.md):
//   1. logit bias (additive; -infinity bans a token),
//   2. repetition, frequency and presence penalties over the last
//      repeat_last_n tokens of the history,
//   3. greedy: when temperature is 0 (or top_k is 1), the argmax of the
//      adjusted logits, lowest id on ties; otherwise
//   4. top-k, 5. top-p and 6. min-p, on the softmax of the adjusted logits
//      (temperature 1, as llama.cpp's default chain),
//   7. temperature, then a draw from the seeded generator.
//
// Not thread-safe; one per generation. Sample() does not allocate after the
// first call for a given vocabulary size.
#ifndef FRAMEWORK_SAMPLER_H_
#define FRAMEWORK_SAMPLER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "framework/generation.h"

namespace lnpu::framework {

class Sampler {
 public:
  // InvalidArgument, naming the field and the accepted range, for: a
  // negative or non-finite temperature; negative top_k; top_p outside
  // (0, 1]; min_p outside [0, 1]; repetition_penalty not finite and > 0;
  // non-finite presence or frequency penalties; negative repeat_last_n; a
  // NaN or +infinity logit bias; an empty or ill-formed UTF-8 stop string;
  // and, when `vocab_size` is given, a logit_bias or stop_token_ids id
  // outside [0, vocab_size) (without it, only negative ids).
  static absl::Status Validate(const GenerationConfig& config,
                               std::optional<int32_t> vocab_size = std::nullopt);

  // `config` must pass Validate.
  explicit Sampler(const GenerationConfig& config);

  // `logits` must be non-empty. `history` is the sequence so far, oldest
  // first (prompt and generated tokens, as the caller chooses); its last
  // repeat_last_n tokens are penalized, and ids outside the vocabulary in
  // it are ignored, as are logit_bias ids outside it. Non-finite logits
  // (after the bias) are never picked unless all are, in which case the
  // result is 0. `allowed_tokens`, when not empty, is a bitmask (bit i % 64
  // of word i / 64 allows token i, as TokenConstraint::AllowedTokens
  // writes it): the logits of the other tokens, and of tokens past its
  // end, count as -infinity before anything else applies.
  // See nothing_left() for the result when no token is left.
  int32_t Sample(absl::Span<const float> logits,
                 absl::Span<const int32_t> history = {},
                 absl::Span<const uint64_t> allowed_tokens = {});

  // The distribution Sample() draws from for the same inputs, written to
  // `probabilities` (resized to logits.size()): probability 1 for the
  // greedy pick; otherwise the tokens left by top-k, top-p and min-p with
  // their softmax at the temperature, 0 for every other token. Does not
  // draw.
  void Distribution(absl::Span<const float> logits, absl::Span<const int32_t> history,
                    absl::Span<const uint64_t> allowed_tokens, std::vector<float>* probabilities);

  // The probability of the most likely token under the softmax of
  // `logits` at temperature 1 (the model's own confidence, whatever the
  // sampling settings); 0 when no logit is finite, or one is NaN or
  // +infinity (no confidence to speak of). `logits` must be non-empty.
  static float TopProbability(absl::Span<const float> logits);

  // Whether the last Sample() or Distribution() found no token with a
  // finite adjusted logit (every token masked out, banned by a -infinity
  // logit bias, or non-finite): its pick, token 0, then is no pick.
  bool nothing_left() const { return nothing_left_; }

  // A token drawn from `probabilities` (non-negative, summing to about 1;
  // the last token with a positive probability absorbs rounding).
  int32_t Draw(absl::Span<const float> probabilities);

  // The acceptance rule of speculative sampling (Leviathan et al. 2023,
  // Chen et al. 2023): `proposed` was drawn from the draft distribution
  // `draft` (empty: a deterministic proposal, i.e. a point mass on it);
  // `target` is the model's distribution (Distribution()). Returns
  // `proposed` with probability min(1, target[proposed] /
  // draft[proposed]), otherwise a token drawn from max(0, target - draft)
  // renormalized, which is never `proposed`. The result is distributed as
  // `target` whatever the draft distribution. When the residual is all 0
  // (rounding), draws from `target` without `proposed`, or returns
  // `proposed` when it holds all of the target's mass. `target` and a
  // non-empty `draft` have one entry per token; `proposed` indexes them.
  int32_t AcceptOrResample(absl::Span<const float> target, absl::Span<const float> draft,
                           int32_t proposed);

 private:
  // Steps 4 to 6 on logits_. The tokens left (the candidates) are either
  // all in candidates_ as (logit, id) in sampling order (highest logit
  // first, lower id on ties; complete_), or every finite logit >=
  // candidate_floor_ of logits_, of which candidates_ holds those >=
  // head_floor_ in sampling order (the head). Returns their total
  // unnormalized probability at the temperature (Weight()), 0 when no
  // logit is finite. Costs O(vocabulary) plus a sort of the tokens top-k or
  // top-p keep, or of the head the draw may reach (a full sort of a
  // 151,936-token vocabulary cost 12 ms per token).
  double Candidates();

  // e^((logit - max) / temperature) as a float (a polynomial within about
  // 1 ulp): a candidate's unnormalized probability.
  float Weight(float logit) const;

  // Calls visit(logit, id) for every candidate (in sampling order when
  // complete_, else in id order).
  template <class Visit>
  void ForEachCandidate(const Visit& visit) const;

  // Extends the head down to the candidates with logit >= floor (all of
  // them, complete_, when floor <= candidate_floor_).
  void ExtendHead(double floor);

  // Extends the head to at least the candidates whose cumulative mass in
  // the bins of the last BinMass reaches `mass`, with a bin to spare for
  // rounding.
  void HeadForMass(double mass);

  // Returns the total weight e^((logit - max) * scale) of the candidates
  // and bins it by logit:
  // mass_bins_[b] holds the candidates b to b + 1 bins below the maximum
  // (bins_per_logit bins per unit of logit; the last bin all further down).
  double BinMass(double bins_per_logit, float scale);

  // The mask, then steps 1 and 2: logits_ = `logits` when none of them
  // changes a logit, else adjusted_, an adjusted copy.
  void AdjustLogits(absl::Span<const float> logits,
                    absl::Span<const int32_t> history,
                    absl::Span<const uint64_t> allowed_tokens);

  float temperature_;
  float inverse_temperature_;  // 1 / temperature_ (0 for greedy)
  int top_k_;
  float top_p_;
  float min_p_;
  float repetition_penalty_;
  float presence_penalty_;
  float frequency_penalty_;
  int repeat_last_n_;
  std::vector<std::pair<int32_t, float>> logit_bias_;  // ascending ids
  std::mt19937_64 rng_;
  bool nothing_left_ = false;
  // Per-step scratch, sized to the vocabulary on first use.
  std::vector<float> adjusted_;
  // The adjusted logits, during a Sample() or Distribution() call.
  absl::Span<const float> logits_;
  std::vector<int32_t> counts_;  // occurrences in the window; zero between steps
  std::vector<std::pair<float, int32_t>> candidates_;
  bool complete_ = true;
  float candidate_floor_ = 0;
  double head_floor_ = 0;
  float max_logit_ = 0;  // the largest finite adjusted logit
  std::vector<double> mass_bins_;
  double bins_per_logit_ = 1;
  std::vector<float> residual_;  // AcceptOrResample's max(0, target - draft)
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_SAMPLER_H_
