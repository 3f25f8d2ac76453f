// Test support: random walks through a grammar on a real vocabulary. Each
// step takes the GrammarMatcher's mask, checks it (on sampled steps)
// against a token-by-token oracle, checks that sampled disallowed tokens
// are rejected, and picks an allowed token uniformly (seeded); in the
// second half of the step budget it prefers tokens that close strings,
// arrays and objects, so walks end.
#ifndef TESTS_STRUCTURED_OUTPUT_RANDOM_WALK_H_
#define TESTS_STRUCTURED_OUTPUT_RANDOM_WALK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/structured_output/grammar.h"
#include "framework/structured_output/token_trie.h"

namespace lnpu::framework::structured_output::testing {

struct WalkOptions {
  uint64_t seed = 0;
  int max_steps = 600;
  // Every this many steps, the whole mask is compared with the oracle
  // (0: never).
  int oracle_every = 16;
};

struct Walk {
  std::string text;     // the concatenated bytes of the tokens
  bool ended = false;   // an end-of-generation token was picked
  std::vector<double> mask_microseconds;  // per step
};

// Runs the walk; test failures (gtest) for mask errors, oracle mismatches
// and accepted disallowed tokens.
Walk RandomWalk(const std::shared_ptr<const Grammar>& grammar,
                const std::shared_ptr<const TokenTrie>& trie, const WalkOptions& options);

// "mean M us, p50 P us, p90 Q us, max X us over N masks".
std::string DescribeTimes(std::vector<double> microseconds);

}  // namespace lnpu::framework::structured_output::testing

#endif  // TESTS_STRUCTURED_OUTPUT_RANDOM_WALK_H_
