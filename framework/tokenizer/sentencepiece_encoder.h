// SentencePiece-style BPE encoding, token for token as llama.cpp's
// llm_tokenizer_spm: spaces become U+2581, characters merge pairwise by the
// score of the merged token (highest first, leftmost on ties), and
// characters that are no token fall back to byte tokens. Immutable;
// thread-safe.
#ifndef FRAMEWORK_TOKENIZER_SENTENCEPIECE_ENCODER_H_
#define FRAMEWORK_TOKENIZER_SENTENCEPIECE_ENCODER_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "framework/tokenizer/token_ids.h"

namespace lnpu::framework {

// U+2581 LOWER ONE EIGHTH BLOCK, which SentencePiece vocabularies use for
// the space character.
inline constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";

class SentencePieceEncoder {
 public:
  // `token_ids` and `scores` (one per token id) must outlive the encoder;
  // byte_fallback[b] is the token emitted for byte b of a character that is
  // no token.
  SentencePieceEncoder(const TokenIds& token_ids,
                       absl::Span<const float> scores,
                       const std::array<int32_t, 256>& byte_fallback);

  // Appends the tokens of well-formed UTF-8 `text`, with a space prepended
  // when `add_space_prefix` and `text` is not empty.
  void Encode(std::string_view text, bool add_space_prefix,
              std::vector<int32_t>& out) const;

 private:
  const TokenIds* token_ids_;
  absl::Span<const float> scores_;
  std::array<int32_t, 256> byte_fallback_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_SENTENCEPIECE_ENCODER_H_
