#include "framework/structured_output/grammar_matcher.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace lnpu::framework::structured_output {
namespace {

void SetBit(std::vector<uint64_t>& mask, int32_t token) {
  mask[token / 64] |= uint64_t{1} << (token % 64);
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar,
                               std::shared_ptr<const TokenTrie> trie)
    : recognizer_(std::move(grammar)), trie_(std::move(trie)) {
  walk_.resize(trie_->max_depth() + 1);
}

void GrammarMatcher::ComputeMask(std::vector<uint64_t>& mask) {
  const TokenTrie& trie = *trie_;
  walk_[0] = recognizer_.state();
  const int32_t nodes = trie.node_count();
  for (int32_t i = 0; i < nodes;) {
    const GrammarRecognizer::StateId next =
        recognizer_.Next(walk_[trie.depth(i) - 1], trie.byte(i));
    if (next == GrammarRecognizer::kDead) {
      i = trie.subtree_end(i);
      continue;
    }
    walk_[trie.depth(i)] = next;
    for (int32_t token : trie.tokens_at(i)) SetBit(mask, token);
    ++i;
  }
}

absl::Status GrammarMatcher::AllowedTokens(std::vector<uint64_t>& mask) {
  const size_t words = (static_cast<size_t>(trie_->vocab_size()) + 63) / 64;
  mask.assign(words, 0);
  if (!finished_) {
    if (recognizer_.state_count() > kMaxStates) {
      recognizer_.Compact();
      cached_masks_.clear();
    }
    const GrammarRecognizer::StateId state = recognizer_.state();
    auto cached = cached_masks_.find(state);
    if (cached != cached_masks_.end()) {
      mask = cached->second;
    } else {
      ComputeMask(mask);
      if (cached_masks_.size() >= kMaxCachedMasks) cached_masks_.clear();
      cached_masks_.emplace(state, mask);
    }
  }
  if (finished_ || recognizer_.IsAccepting()) {
    for (int32_t token : trie_->end_tokens()) SetBit(mask, token);
  }
  if (std::all_of(mask.begin(), mask.end(),
                  [](uint64_t word) { return word == 0; })) {
    return absl::FailedPreconditionError(
        "no token of the vocabulary can continue the grammar here: the "
        "vocabulary has no token for any byte the grammar allows next, and "
        "no end-of-generation token");
  }
  return absl::OkStatus();
}

absl::Status GrammarMatcher::Accept(int32_t token) {
  if (token < 0 || token >= trie_->vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token ", token, " is outside the vocabulary [0, ",
        trie_->vocab_size(), ")"));
  }
  if (trie_->is_end_token(token)) {
    if (!finished_ && !recognizer_.IsAccepting()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "end-of-generation token ", token,
          " is not allowed: the output is not complete for the grammar yet"));
    }
    finished_ = true;
    return absl::OkStatus();
  }
  if (finished_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token ", token,
        " is not allowed: generation already ended with an "
        "end-of-generation token"));
  }
  if (!trie_->has_bytes(token)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token ", token,
        " is a control, unknown or unused token, which the grammar never "
        "allows"));
  }
  const std::string bytes = trie_->tokenizer().TokenBytes(token);
  if (absl::Status advanced = recognizer_.Advance(bytes); !advanced.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token ", token, " (\"", absl::CHexEscape(bytes),
        "\") is not allowed by the grammar here: ", advanced.message()));
  }
  return absl::OkStatus();
}

}  // namespace lnpu::framework::structured_output
