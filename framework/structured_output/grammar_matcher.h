// Constrains generation to a Grammar token by token: the allowed-token
// mask for the next step over the whole vocabulary, and Accept(token) to
// advance. A token is allowed when the grammar allows all of its bytes
// from the current state, whatever grammar elements or UTF-8 characters
// they span; an end-of-generation token is allowed exactly when the
// grammar is complete.
//
// The mask walks the vocabulary's TokenTrie depth first from the current
// GrammarRecognizer state, one cached transition per trie node, skipping
// a node's whole subtree as soon as its bytes are refused. Masks of
// recently seen states are cached (inside a string, each step is the same
// state).
//
// Not thread-safe; one per generation. The trie (and its tokenizer) must
// outlive the matcher.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_MATCHER_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_MATCHER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "framework/structured_output/grammar.h"
#include "framework/structured_output/grammar_recognizer.h"
#include "framework/structured_output/token_trie.h"
#include "framework/token_constraint.h"

namespace lnpu::framework::structured_output {

class GrammarMatcher : public TokenConstraint {
 public:
  GrammarMatcher(std::shared_ptr<const Grammar> grammar,
                 std::shared_ptr<const TokenTrie> trie);

  // TokenConstraint. AllowedTokens: FailedPrecondition when the grammar
  // is not complete and no token of the vocabulary can continue it (the
  // vocabulary lacks the bytes it needs). Accept: InvalidArgument naming
  // the token when the grammar does not allow it here; after an
  // end-of-generation token only end-of-generation tokens are allowed.
  absl::Status AllowedTokens(std::vector<uint64_t>& mask) override;
  absl::Status Accept(int32_t token) override;

  // Whether the output so far is a complete sentence of the grammar.
  bool IsComplete() const { return recognizer_.IsAccepting(); }
  // Whether an end-of-generation token was accepted.
  bool IsFinished() const { return finished_; }

 private:
  // States beyond which the recognizer is compacted between steps.
  static constexpr size_t kMaxStates = 4096;
  // Masks kept per recognizer state.
  static constexpr size_t kMaxCachedMasks = 16;

  void ComputeMask(std::vector<uint64_t>& mask);

  GrammarRecognizer recognizer_;
  std::shared_ptr<const TokenTrie> trie_;
  bool finished_ = false;
  absl::flat_hash_map<GrammarRecognizer::StateId, std::vector<uint64_t>>
      cached_masks_;
  std::vector<GrammarRecognizer::StateId> walk_;  // state per trie depth
};

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_MATCHER_H_
