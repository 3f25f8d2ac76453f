#include "compiler_artifacts/synthetic/synthetic_vocabulary.h"

#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler_artifacts/gguf/string_view_compat.h"
#include "compiler_artifacts/synthetic/english_words.h"

namespace lnpu::synthetic {
namespace {

using gguf::ToAbsl;

constexpr absl::string_view kWordStart = "\xE2\x96\x81";  // U+2581, SentencePiece's space.
constexpr uint32_t kSpecialAndByteTokens = 3 + 256;

// Builds the normal pieces in decreasing-score order, without duplicates.
class PieceList {
 public:
  explicit PieceList(size_t wanted) : wanted_(wanted) { pieces_.reserve(wanted); }

  bool full() const { return pieces_.size() >= wanted_; }
  void Add(std::string piece) {
    if (!full() && seen_.insert(piece).second) pieces_.push_back(std::move(piece));
  }
  std::vector<std::string> Take() && { return std::move(pieces_); }

 private:
  size_t wanted_;
  std::vector<std::string> pieces_;
  absl::flat_hash_set<std::string> seen_;
};

std::vector<std::string> MakeNormalPieces(size_t count) {
  PieceList pieces(count);
  for (char c = 'a'; c <= 'z'; ++c) pieces.Add(std::string(1, c));
  pieces.Add(std::string(kWordStart));
  for (char c = 'a'; c <= 'z'; ++c) pieces.Add(absl::StrCat(kWordStart, std::string(1, c)));
  for (char c = 'A'; c <= 'Z'; ++c) pieces.Add(std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) pieces.Add(absl::StrCat(kWordStart, std::string(1, c)));
  for (char c = '0'; c <= '9'; ++c) pieces.Add(std::string(1, c));
  for (char c : std::string_view(".,!?'\"-:;()")) pieces.Add(std::string(1, c));
  for (std::string_view gram : kCommonEnglishGrams) pieces.Add(std::string(gram));
  // Each word with all its "▁"-prefixed prefixes, so that SentencePiece
  // merges can reach it.
  for (std::string_view word : kCommonEnglishWords) {
    for (size_t length = 1; length <= word.size(); ++length) {
      pieces.Add(absl::StrCat(kWordStart, ToAbsl(word.substr(0, length))));
    }
  }
  // Letter n-grams, bare and word-initial, n = 2, 3, ... until full.
  for (size_t n = 2; !pieces.full(); ++n) {
    std::string gram(n, 'a');
    while (!pieces.full()) {
      pieces.Add(gram);
      pieces.Add(absl::StrCat(kWordStart, gram));
      size_t position = n;  // Next n-gram in lexicographic order.
      while (position > 0 && gram[position - 1] == 'z') gram[--position] = 'a';
      if (position == 0) break;
      ++gram[position - 1];
    }
  }
  return std::move(pieces).Take();
}

}  // namespace

absl::StatusOr<LlamaVocabulary> MakeLlamaVocabulary(uint32_t vocab_size) {
  if (vocab_size < kMinLlamaVocab || vocab_size > kMaxRandomLlamaVocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        "llama vocabulary size ", vocab_size, " must be in [", kMinLlamaVocab, ", ",
        kMaxRandomLlamaVocab, "] (3 control + 256 byte + 26 letter tokens at least)"));
  }
  LlamaVocabulary vocabulary;
  vocabulary.tokens.reserve(vocab_size);
  vocabulary.scores.reserve(vocab_size);
  vocabulary.token_types.reserve(vocab_size);
  auto add = [&](std::string token, float score, TokenType type) {
    vocabulary.tokens.push_back(std::move(token));
    vocabulary.scores.push_back(score);
    vocabulary.token_types.push_back(static_cast<int32_t>(type));
  };
  add("<unk>", 0.0f, TokenType::kUnknown);
  add("<s>", 0.0f, TokenType::kControl);
  add("</s>", 0.0f, TokenType::kControl);
  for (int byte = 0; byte < 256; ++byte) add(absl::StrFormat("<0x%02X>", byte), 0.0f, TokenType::kByte);
  std::vector<std::string> pieces = MakeNormalPieces(vocab_size - kSpecialAndByteTokens);
  for (size_t i = 0; i < pieces.size(); ++i) {
    add(std::move(pieces[i]), -static_cast<float>(i), TokenType::kNormal);
  }
  return vocabulary;
}

}  // namespace lnpu::synthetic
