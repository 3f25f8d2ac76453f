// Byte-level BPE pre-tokenizers: split text into the words that merges
// never cross, exactly as llama.cpp does for each GGUF tokenizer.ggml.pre
// name, with hand-written matchers instead of a regex engine.
//
// llama.cpp gives each pre-tokenizer a list of regexes (llama-vocab.cpp)
// and applies them in turn (unicode.cpp): each regex splits every word of
// the previous one into its matches and the unmatched text between them.
// The matchers here follow those regexes as llama.cpp runs them, including
// its quirks: \p{P} and \p{S} see ASCII through a fixed table that leaves
// out '~', and a non-ASCII white-space character is \s and nothing else.
// Stateless and thread-safe.
#ifndef FRAMEWORK_TOKENIZER_PRE_TOKENIZER_H_
#define FRAMEWORK_TOKENIZER_PRE_TOKENIZER_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace lnpu::framework {

enum class PreTokenizer {
  // gpt2, gpt-2, mpt, olmo, phi-2:
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
  kGpt2,
  // starcoder, refact, command-r, smollm, codeshell, exaone: \p{N}, then
  // kGpt2.
  kStarCoder,
  // falcon: [\p{P}$+<=>^~|`]+, then kGpt2, then [0-9][0-9][0-9].
  kFalcon,
  // llama-bpe, llama3, llama-v3:
  //   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kLlama3,
  // qwen2, deepseek-r1-qwen, stablelm2, megrez: kLlama3 with \p{N} (one
  // digit per word) instead of \p{N}{1,3}.
  kQwen2,
  // qwen35: kQwen2 with marks in words:
  //   ...|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+...
  kQwen35,
  // deepseek-llm: [\r\n], then \s?[Latin, Greek, Cyrillic... letters]+,
  // then \s?[ASCII and full-width punctuation]+, then \s+$, then
  // [CJK, Hangul]+, then \p{N}+.
  kDeepSeekLlm,
  // deepseek-coder: [\r\n], then \s?\p{L}+, then \s?\p{P}+, then
  // [CJK, Hangul]+, then \p{N}.
  kDeepSeekCoder,
  // deepseek-v3: \p{N}{1,3}, then [CJK, kana]+, then
  //   [ASCII punctuation][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
  //    ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kDeepSeekV3,
  // tekken (Mistral Nemo, Mistral v7+): words split at case changes:
  //   [^\r\n\p{L}\p{N}]?UPPER*LOWER+|[^\r\n\p{L}\p{N}]?UPPER+LOWER*|\p{N}|
  //    ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
  // where, as in llama.cpp, UPPER is a letter other than a-z and LOWER a
  // letter other than A-Z (a non-ASCII letter is both).
  kTekken,
  // gpt-4o, llama4 (Phi-4-mini): kTekken with an optional contraction
  // (?i:'s|'t|'re|'ve|'m|'ll|'d) after each word and \p{N}{1,3}.
  kGpt4o,
  // gemma4 (GGUF tokenizer.ggml.model "gemma4"): [^\n]+|[\n]+. Its BPE
  // runs on characters, not on the byte-level alphabet (see
  // ByteLevelBpeEncoder).
  kGemma4,
};

// The pre-tokenizer for a GGUF tokenizer.ggml.pre name; InvalidArgument
// naming the supported ones for anything else.
absl::StatusOr<PreTokenizer> PreTokenizerNamed(std::string_view name);

// Whether llama.cpp sets ignore_merges for this pre-tokenizer: a word that
// is a token as a whole becomes that token without merging.
bool WholeWordTokensFirst(PreTokenizer pre_tokenizer);

// Whether vocabularies of this pre-tokenizer spell tokens in GPT-2's
// byte-level alphabet: all but kGemma4, whose tokens are text with U+2581
// for spaces and <0xHH> byte tokens.
bool UsesByteLevelAlphabet(PreTokenizer pre_tokenizer);

// Splits well-formed UTF-8 `text` into consecutive, non-empty words that
// together are `text`.
std::vector<std::string_view> SplitWords(PreTokenizer pre_tokenizer,
                                         std::string_view text);

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_PRE_TOKENIZER_H_
