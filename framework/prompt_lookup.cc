#include "framework/prompt_lookup.h"

#include <algorithm>

namespace lnpu::framework {

std::vector<int32_t> PromptLookupDraft(absl::Span<const int32_t> context, int min_ngram,
                                       int max_ngram, size_t max_tokens) {
  const size_t size = context.size();
  for (size_t n = static_cast<size_t>(max_ngram); n >= static_cast<size_t>(min_ngram) && n >= 1;
       --n) {
    if (max_tokens == 0 || n >= size) continue;
    const absl::Span<const int32_t> ending = context.subspan(size - n);
    // Latest earlier occurrence first: it starts at `start` < size - n.
    for (size_t start = size - n; start-- > 0;) {
      if (!std::equal(ending.begin(), ending.end(), context.begin() + start)) continue;
      const size_t from = start + n;
      const size_t count = std::min(max_tokens, size - from);
      return std::vector<int32_t>(context.begin() + from, context.begin() + from + count);
    }
  }
  return {};
}

}  // namespace lnpu::framework
