// The byte strings of a vocabulary's tokens in a trie, built once per
// vocabulary, so that GrammarMatcher checks the bytes shared by many
// tokens once per step.
//
// The bytes of a token are Tokenizer::TokenBytes: byte-level BPE texts
// translated from the GPT-2 byte alphabet, SentencePiece U+2581 read as a
// space and "<0xHH>" byte tokens as their byte, user-defined tokens as
// spelled. Control, unknown, unused and undefined tokens (and any token
// with no bytes) are not in the trie: a grammar never allows them, except
// the end-of-generation tokens (Tokenizer::IsEndOfGeneration), which
// GrammarMatcher allows where the grammar is complete.
//
// Immutable after Create and thread-safe; share one per vocabulary between
// matchers. Refers to the tokenizer, which must outlive it.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_TOKEN_TRIE_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_TOKEN_TRIE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "framework/tokenizer/tokenizer.h"

namespace lnpu::framework::structured_output {

class TokenTrie {
 public:
  static std::shared_ptr<const TokenTrie> Create(const Tokenizer& tokenizer);

  const Tokenizer& tokenizer() const { return tokenizer_; }
  int32_t vocab_size() const { return tokenizer_.vocab_size(); }

  // Nodes in depth-first preorder (the root excluded): node i spells the
  // bytes of its ancestors followed by byte(i); its subtree is the nodes
  // [i + 1, subtree_end(i)).
  int32_t node_count() const { return static_cast<int32_t>(bytes_.size()); }
  uint8_t byte(int32_t node) const { return bytes_[node]; }
  int depth(int32_t node) const { return depths_[node]; }  // >= 1
  int32_t subtree_end(int32_t node) const { return subtree_ends_[node]; }
  int max_depth() const { return max_depth_; }
  // The tokens whose bytes end at `node`.
  absl::Span<const int32_t> tokens_at(int32_t node) const {
    return absl::MakeConstSpan(token_ids_.data() + token_begins_[node],
                               token_begins_[node + 1] - token_begins_[node]);
  }
  // Whether `token` is in the trie.
  bool has_bytes(int32_t token) const { return in_trie_[token]; }
  // The end-of-generation tokens, ascending.
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  bool is_end_token(int32_t token) const;

 private:
  explicit TokenTrie(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  const Tokenizer& tokenizer_;
  std::vector<uint8_t> bytes_;
  std::vector<uint16_t> depths_;
  std::vector<int32_t> subtree_ends_;
  std::vector<int32_t> token_begins_;  // node_count() + 1 offsets
  std::vector<int32_t> token_ids_;
  std::vector<bool> in_trie_;
  std::vector<int32_t> end_tokens_;
  int max_depth_ = 0;
};

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_TOKEN_TRIE_H_
