// Byte-level BPE encoding (GPT-2 style), token for token as llama.cpp's
// llm_tokenizer_bpe: the pre-tokenizer splits the text into words, each
// word's bytes are spelled in the byte-level alphabet, and adjacent pieces
// merge by merge-rule rank (lowest first, leftmost on ties).
//
// Gemma 4 vocabularies (pre-tokenizer kGemma4) use the same merging on
// characters instead: spaces become U+2581, each character of a word starts
// as its own piece, and a character that is no token falls back to the
// <0xHH> tokens of its bytes. Immutable; thread-safe.
#ifndef FRAMEWORK_TOKENIZER_BYTE_LEVEL_BPE_ENCODER_H_
#define FRAMEWORK_TOKENIZER_BYTE_LEVEL_BPE_ENCODER_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "framework/tokenizer/pre_tokenizer.h"
#include "framework/tokenizer/token_ids.h"
#include "base/vocabulary.h"

namespace lnpu::framework {

class ByteLevelBpeEncoder {
 public:
  // Checks `vocabulary.pre` and `vocabulary.merges` (each "left right",
  // with left, right and their concatenation all tokens) and that every
  // printable ASCII byte's character is a token. A byte whose character is
  // no token is dropped where no merge covers it, as llama.cpp does.
  // `token_ids` must outlive the encoder.
  static absl::StatusOr<ByteLevelBpeEncoder> Create(
      const Vocabulary& vocabulary, const TokenIds& token_ids);

  // Appends the tokens of well-formed UTF-8 `text`.
  void Encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    int32_t rank;    // lower merges first
    int32_t result;  // the merged token
  };

  ByteLevelBpeEncoder(const TokenIds& token_ids, PreTokenizer pre_tokenizer)
      : token_ids_(&token_ids), pre_tokenizer_(pre_tokenizer) {}

  void EncodeWord(std::string_view word, std::vector<int32_t>& out) const;
  const Merge* FindMerge(int32_t left, int32_t right) const;

  const TokenIds* token_ids_;
  PreTokenizer pre_tokenizer_;
  // Llama 3, Tekken: a word that is a token as a whole is not merged
  // piecewise.
  bool whole_word_tokens_first_ = false;
  // False for Gemma 4: pieces are characters, not byte-level characters.
  bool byte_alphabet_ = true;
  // The token of each byte: its byte-level character, or (Gemma 4) its
  // <0xHH> fallback token; kNoToken where the vocabulary has none.
  std::array<int32_t, 256> byte_tokens_{};
  // Key: left token << 32 | right token.
  absl::flat_hash_map<uint64_t, Merge> merges_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_BYTE_LEVEL_BPE_ENCODER_H_
