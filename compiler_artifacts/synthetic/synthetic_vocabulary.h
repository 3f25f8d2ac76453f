// The synthetic SentencePiece-style vocabulary of random-weight llama
// models (random_llama.h): deterministic, English-flavoured, of any size
// from kMinLlamaVocab tokens up.
#ifndef LNPU_COMPILER_ARTIFACTS_SYNTHETIC_SYNTHETIC_VOCABULARY_H_
#define LNPU_COMPILER_ARTIFACTS_SYNTHETIC_SYNTHETIC_VOCABULARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/vocabulary.h"

namespace lnpu::synthetic {

// A SentencePiece-style vocabulary: "<unk>" (0), "<s>" (1), "</s>" (2), the
// byte tokens "<0x00>".."<0xFF>" (3..258), then normal pieces by decreasing
// score: the letters a..z, "▁" (U+2581, word start), "▁"-prefixed letters,
// capitals, digits, punctuation, frequent bigrams and suffixes, common
// English words with their prefixes (english_words.h),
// then letter n-grams until `vocab_size` pieces exist. Deterministic.
struct LlamaVocabulary {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> token_types;  // TokenType values (base/vocabulary.h)
};
// The size limits: 3 control + 256 byte + 26 letter tokens at least.
inline constexpr uint32_t kMinLlamaVocab = 3 + 256 + 26;
inline constexpr uint32_t kMaxRandomLlamaVocab = 1u << 22;
// InvalidArgument if vocab_size < kMinLlamaVocab or > kMaxRandomLlamaVocab.
absl::StatusOr<LlamaVocabulary> MakeLlamaVocabulary(uint32_t vocab_size);

}  // namespace lnpu::synthetic

#endif  // LNPU_COMPILER_ARTIFACTS_SYNTHETIC_SYNTHETIC_VOCABULARY_H_
