// Prompt-lookup drafting for speculative decoding (SpeculativeConfig::
// kPromptLookup): proposes the continuation of an earlier occurrence of
// the text's ending, with no second model.
#ifndef FRAMEWORK_PROMPT_LOOKUP_H_
#define FRAMEWORK_PROMPT_LOOKUP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace lnpu::framework {

// For n from max_ngram down to min_ngram (1 <= min_ngram <= max_ngram):
// when the last n tokens of `context` occurred earlier in it, returns the
// up to `max_tokens` tokens that followed their latest earlier occurrence
// (which may run into the ending itself). Empty when no such n-gram
// repeats or max_tokens is 0. Pure; O(context.size() * max_ngram).
std::vector<int32_t> PromptLookupDraft(absl::Span<const int32_t> context, int min_ngram,
                                       int max_ngram, size_t max_tokens);

}  // namespace lnpu::framework

#endif  // FRAMEWORK_PROMPT_LOOKUP_H_
