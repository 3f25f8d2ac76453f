// Byte-level BPE pre-tokenizers: split text into the words that merges
// never cross, exactly as the regexes of the Hugging Face tokenizers (and
// llama.cpp) do, with hand-written matchers instead of a regex engine.
// Stateless and thread-safe.
#ifndef FRAMEWORK_TOKENIZER_PRE_TOKENIZER_H_
#define FRAMEWORK_TOKENIZER_PRE_TOKENIZER_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace lnpu::framework {

enum class PreTokenizer {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kLlama3,
  // As kLlama3, with \p{N} (one digit per word) instead of \p{N}{1,3}.
  kQwen2,
};

// The pre-tokenizer for a GGUF tokenizer.ggml.pre name; InvalidArgument
// naming the supported ones for anything else.
absl::StatusOr<PreTokenizer> PreTokenizerNamed(std::string_view name);

// Splits well-formed UTF-8 `text` into consecutive, non-empty words that
// together are `text`.
std::vector<std::string_view> SplitWords(PreTokenizer pre_tokenizer,
                                         std::string_view text);

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_PRE_TOKENIZER_H_
