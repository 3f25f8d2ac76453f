#include "framework/tokenizer/sentencepiece_encoder.h"

#include <queue>
#include <string>

#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

// A run of the escaped text; length 0 once merged into its left neighbour.
struct SpmSymbol {
  size_t offset;
  size_t length;
  int prev;  // -1: none
  int next;  // -1: none
};

struct SpmBigram {
  float score;    // of the merged token
  int left;       // symbol indices
  int right;
  size_t length;  // bytes of the merged text when the bigram was queued
};

// Orders the queue: highest score on top, then leftmost.
struct SpmBigramBelow {
  bool operator()(const SpmBigram& a, const SpmBigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SentencePieceEncoder::SentencePieceEncoder(
    const TokenIds& token_ids, absl::Span<const float> scores,
    const std::array<int32_t, 256>& byte_fallback)
    : token_ids_(&token_ids), scores_(scores), byte_fallback_(byte_fallback) {}

void SentencePieceEncoder::Encode(std::string_view text, bool add_space_prefix,
                                  std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string escaped;
  escaped.reserve(text.size() + kSentencePieceSpace.size());
  if (add_space_prefix) escaped += kSentencePieceSpace;
  for (const char c : text) {
    if (c == ' ') {
      escaped += kSentencePieceSpace;
    } else {
      escaped += c;
    }
  }

  std::vector<SpmSymbol> symbols;
  for (size_t offset = 0; offset < escaped.size();) {
    const size_t length = utf8::CharLength(escaped[offset]);
    const int index = static_cast<int>(symbols.size());
    offset += length;
    symbols.push_back(
        {offset - length, length, index - 1,
         offset == escaped.size() ? -1 : index + 1});
  }

  std::priority_queue<SpmBigram, std::vector<SpmBigram>, SpmBigramBelow> queue;
  auto try_add_bigram = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged(escaped.data() + symbols[left].offset,
                                  symbols[left].length + symbols[right].length);
    const auto token = token_ids_->find(merged);
    if (token == token_ids_->end()) return;
    queue.push({scores_[token->second], left, right, merged.size()});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) {
    try_add_bigram(i - 1, i);
  }

  while (!queue.empty()) {
    const SpmBigram bigram = queue.top();
    queue.pop();
    SpmSymbol& left = symbols[bigram.left];
    SpmSymbol& right = symbols[bigram.right];
    // Symbols only grow, so an unchanged total length means neither side
    // has merged since the bigram was queued.
    if (left.length == 0 || right.length == 0 ||
        left.length + right.length != bigram.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add_bigram(left.prev, bigram.left);
    try_add_bigram(bigram.left, left.next);
  }

  // Every merged symbol is a token; only single characters can be missing.
  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece(escaped.data() + symbols[i].offset,
                                 symbols[i].length);
    if (const auto token = token_ids_->find(piece); token != token_ids_->end()) {
      out.push_back(token->second);
      continue;
    }
    for (const char byte : piece) {
      out.push_back(byte_fallback_[static_cast<uint8_t>(byte)]);
    }
  }
}

}  // namespace lnpu::framework
