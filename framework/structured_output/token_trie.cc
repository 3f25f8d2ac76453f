#include "framework/structured_output/token_trie.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "base/vocabulary.h"

namespace lnpu::framework::structured_output {

std::shared_ptr<const TokenTrie> TokenTrie::Create(const Tokenizer& tokenizer) {
  std::shared_ptr<TokenTrie> trie(new TokenTrie(tokenizer));
  const int32_t vocab_size = tokenizer.vocab_size();
  const std::vector<int32_t>& types = tokenizer.vocabulary().token_types;
  trie->in_trie_.assign(vocab_size, false);

  std::vector<std::pair<std::string, int32_t>> tokens;
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (tokenizer.IsEndOfGeneration(id)) {
      trie->end_tokens_.push_back(id);
      continue;
    }
    const auto type = static_cast<TokenType>(types[id]);
    if (type != TokenType::kNormal && type != TokenType::kByte &&
        type != TokenType::kUserDefined) {
      continue;
    }
    std::string bytes = tokenizer.TokenBytes(id);
    // Depths are 16-bit; no real vocabulary has tokens that long.
    if (bytes.empty() || bytes.size() > std::numeric_limits<uint16_t>::max()) {
      continue;
    }
    trie->in_trie_[id] = true;
    tokens.emplace_back(std::move(bytes), id);
  }
  std::sort(tokens.begin(), tokens.end());

  // Sorted, a token's bytes follow every prefix of them, so nodes are made
  // in preorder and the tokens of a node are added while it is the newest.
  const std::string* previous = nullptr;
  for (const auto& [bytes, id] : tokens) {
    size_t common = 0;
    if (previous != nullptr) {
      const size_t limit = std::min(previous->size(), bytes.size());
      while (common < limit && (*previous)[common] == bytes[common]) ++common;
    }
    for (size_t d = common; d < bytes.size(); ++d) {
      trie->bytes_.push_back(static_cast<uint8_t>(bytes[d]));
      trie->depths_.push_back(static_cast<uint16_t>(d + 1));
      trie->token_begins_.push_back(
          static_cast<int32_t>(trie->token_ids_.size()));
    }
    trie->token_ids_.push_back(id);
    trie->max_depth_ =
        std::max(trie->max_depth_, static_cast<int>(bytes.size()));
    previous = &bytes;
  }
  trie->token_begins_.push_back(static_cast<int32_t>(trie->token_ids_.size()));

  const int32_t n = static_cast<int32_t>(trie->bytes_.size());
  trie->subtree_ends_.assign(n, n);
  std::vector<int32_t> open;
  for (int32_t i = 0; i < n; ++i) {
    while (!open.empty() && trie->depths_[open.back()] >= trie->depths_[i]) {
      trie->subtree_ends_[open.back()] = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  return trie;
}

bool TokenTrie::is_end_token(int32_t token) const {
  return std::binary_search(end_tokens_.begin(), end_tokens_.end(), token);
}

}  // namespace lnpu::framework::structured_output
