#include "framework/tokenizer/byte_level_bpe_encoder.h"

#include <limits>
#include <queue>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "framework/tokenizer/byte_level_alphabet.h"
#include "framework/tokenizer/sentencepiece_encoder.h"
#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

uint64_t MergeKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
         static_cast<uint32_t>(right);
}

// The token of a byte the vocabulary has no character for.
constexpr int32_t kNoToken = -2;

// One piece of a word: token -1 once merged into its left neighbour,
// kNoToken for a byte without a token (it takes part in no merge).
struct Symbol {
  int32_t token;
  int prev;  // -1: none
  int next;  // -1: none
};

struct Bigram {
  int32_t rank;
  int left;  // symbol indices
  int right;
  int32_t left_token;  // the symbols' tokens when the bigram was queued
  int32_t right_token;
  int32_t result;
};

// Orders the queue: lowest rank on top, then leftmost.
struct BigramBelow {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

absl::StatusOr<ByteLevelBpeEncoder> ByteLevelBpeEncoder::Create(
    const Vocabulary& vocabulary, const TokenIds& token_ids) {
  LNPU_ASSIGN_OR_RETURN(PreTokenizer pre_tokenizer, PreTokenizerNamed(vocabulary.pre));
  ByteLevelBpeEncoder encoder(token_ids, pre_tokenizer);
  encoder.whole_word_tokens_first_ = WholeWordTokensFirst(pre_tokenizer);
  encoder.byte_alphabet_ = UsesByteLevelAlphabet(pre_tokenizer);

  for (int byte = 0; byte < 256; ++byte) {
    if (!encoder.byte_alphabet_) {
      const auto token = token_ids.find(absl::StrFormat("<0x%02X>", byte));
      encoder.byte_tokens_[byte] =
          token == token_ids.end() ? kNoToken : token->second;
      continue;
    }
    const std::string_view spelled = ByteLevelChar(static_cast<uint8_t>(byte));
    const auto token = token_ids.find(spelled);
    if (token != token_ids.end()) {
      encoder.byte_tokens_[byte] = token->second;
      continue;
    }
    // Real vocabularies lack a few bytes that never occur in UTF-8 (0xC0,
    // 0xC1, 0xF5-0xFF) or in their training text (Falcon: most control
    // characters); llama.cpp drops such a byte where no merge covers it.
    // Printable ASCII is in every GPT-2 style vocabulary.
    if (byte > ' ' && byte < 0x7F) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the byte-level BPE vocabulary has no token \"%s\" for byte 0x%02X: "
          "every printable ASCII character must be a token (is this a GPT-2 "
          "style vocabulary?)",
          std::string(spelled), byte));
    }
    encoder.byte_tokens_[byte] = kNoToken;
  }

  if (vocabulary.merges.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("too many merge rules (", vocabulary.merges.size(), ")"));
  }
  encoder.merges_.reserve(vocabulary.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < vocabulary.merges.size(); ++rank) {
    const std::string& merge = vocabulary.merges[rank];
    auto invalid = [&](const char* problem) {
      return absl::InvalidArgumentError(
          absl::StrCat("merge rule ", rank, " \"", merge, "\" ", problem,
                       ": each rule must be \"left right\" where left, right "
                       "and leftright are tokens"));
    };
    const size_t space = merge.find(' ');
    if (space == std::string::npos || space == 0 ||
        space + 1 == merge.size() ||
        merge.find(' ', space + 1) != std::string::npos) {
      return invalid("is not two pieces separated by one space");
    }
    const std::string_view left_text = std::string_view(merge).substr(0, space);
    const std::string_view right_text =
        std::string_view(merge).substr(space + 1);
    const auto left = token_ids.find(left_text);
    const auto right = token_ids.find(right_text);
    joined.assign(left_text).append(right_text);
    const auto result = token_ids.find(joined);
    if (left == token_ids.end() || right == token_ids.end()) {
      return invalid("has a piece that is no token");
    }
    if (result == token_ids.end()) return invalid("merges into no token");
    // A repeated rule keeps its first (highest priority) rank.
    encoder.merges_.try_emplace(
        MergeKey(left->second, right->second),
        Merge{static_cast<int32_t>(rank), result->second});
  }
  return encoder;
}

const ByteLevelBpeEncoder::Merge* ByteLevelBpeEncoder::FindMerge(
    int32_t left, int32_t right) const {
  const auto merge = merges_.find(MergeKey(left, right));
  return merge == merges_.end() ? nullptr : &merge->second;
}

void ByteLevelBpeEncoder::Encode(std::string_view text,
                                 std::vector<int32_t>& out) const {
  if (byte_alphabet_) {
    for (const std::string_view word : SplitWords(pre_tokenizer_, text)) {
      EncodeWord(word, out);
    }
    return;
  }
  std::string escaped;
  for (const char c : text) {
    if (c == ' ') {
      escaped.append(kSentencePieceSpace);
    } else {
      escaped += c;
    }
  }
  for (const std::string_view word : SplitWords(pre_tokenizer_, escaped)) {
    EncodeWord(word, out);
  }
}

void ByteLevelBpeEncoder::EncodeWord(std::string_view word,
                                     std::vector<int32_t>& out) const {
  if (whole_word_tokens_first_) {
    std::string spelled;
    for (const char byte : word) {
      spelled += ByteLevelChar(static_cast<uint8_t>(byte));
    }
    if (const auto token = token_ids_->find(spelled);
        token != token_ids_->end()) {
      out.push_back(token->second);
      return;
    }
  }

  // The initial pieces: bytes, or (Gemma 4) characters.
  std::vector<std::string_view> pieces;
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < word.size();) {
    const size_t length =
        byte_alphabet_ ? 1 : utf8::DecodeChar(word.substr(offset)).length;
    const std::string_view piece = word.substr(offset, length);
    int32_t token = kNoToken;
    if (byte_alphabet_) {
      token = byte_tokens_[static_cast<uint8_t>(piece[0])];
    } else if (const auto found = token_ids_->find(piece);
               found != token_ids_->end()) {
      token = found->second;
    }
    pieces.push_back(piece);
    symbols.push_back({token, static_cast<int>(symbols.size()) - 1, -1});
    offset += length;
  }
  const int size = static_cast<int>(symbols.size());
  for (int i = 0; i + 1 < size; ++i) symbols[i].next = i + 1;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramBelow> queue;
  auto try_add_bigram = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t left_token = symbols[left].token;
    const int32_t right_token = symbols[right].token;
    if (const Merge* merge = FindMerge(left_token, right_token)) {
      queue.push(
          {merge->rank, left, right, left_token, right_token, merge->result});
    }
  };
  for (int i = 1; i < size; ++i) try_add_bigram(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // A symbol's token changes with every merge it takes part in, so equal
    // tokens mean the bigram is still current (and its sides adjacent).
    if (left.token != bigram.left_token || right.token != bigram.right_token) {
      continue;
    }
    left.token = bigram.result;
    right.token = -1;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add_bigram(left.prev, bigram.left);
    try_add_bigram(bigram.left, left.next);
  }

  // A piece without a token (never merged) falls back to its bytes' tokens,
  // where there are any.
  for (int i = 0; i != -1; i = symbols[i].next) {
    if (symbols[i].token != kNoToken) {
      out.push_back(symbols[i].token);
      continue;
    }
    for (const char byte : pieces[i]) {
      const int32_t token = byte_tokens_[static_cast<uint8_t>(byte)];
      if (token != kNoToken) out.push_back(token);
    }
  }
}

}  // namespace lnpu::framework
