// A restriction on which tokens generation may pick next, consulted once
// per step (e.g. a grammar for structured output:
// framework/structured_output/grammar_matcher.h). Generation asks for the
// allowed tokens, passes them to Sampler::Sample as its allowed-token mask,
// and reports the picked token back with Accept.
//
// Implementations are stateful and not thread-safe; one per generation.
#ifndef FRAMEWORK_TOKEN_CONSTRAINT_H_
#define FRAMEWORK_TOKEN_CONSTRAINT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace lnpu::framework {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Writes the tokens allowed next into `mask`, resized to
  // ceil(vocab_size / 64) words: bit (i % 64) of word i / 64 is set when
  // token i is allowed. An error (e.g. FailedPrecondition) when no token
  // can continue.
  virtual absl::Status AllowedTokens(std::vector<uint64_t>& mask) = 0;

  // Advances past `token`. InvalidArgument, naming the token, when it was
  // not allowed; the constraint is unchanged then.
  virtual absl::Status Accept(int32_t token) = 0;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKEN_CONSTRAINT_H_
