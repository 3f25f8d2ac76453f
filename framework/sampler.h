// Picks the next token from logits: greedy, or temperature with top-k and
// top-p (nucleus) filtering, from a seeded generator.
//
// Not thread-safe; one per generation. Sample() does not allocate after the
// first call for a given vocabulary size.
#ifndef FRAMEWORK_SAMPLER_H_
#define FRAMEWORK_SAMPLER_H_

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "framework/generation.h"

namespace lnpu::framework {

class Sampler {
 public:
  // InvalidArgument for a negative or non-finite temperature, negative
  // top_k, or top_p outside (0, 1].
  static absl::Status Validate(const GenerationConfig& config);

  explicit Sampler(const GenerationConfig& config);

  // `logits` must be non-empty. Non-finite logits are never picked unless
  // all are.
  int32_t Sample(absl::Span<const float> logits);

 private:
  float temperature_;
  int top_k_;
  float top_p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_SAMPLER_H_
