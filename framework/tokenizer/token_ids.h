// The reverse of a vocabulary's token list.
#ifndef FRAMEWORK_TOKENIZER_TOKEN_IDS_H_
#define FRAMEWORK_TOKENIZER_TOKEN_IDS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace lnpu::framework {

// Hashing and equality for std::string keys that also take std::string_view
// lookups (the system Abseil's absl::string_view is not std::string_view,
// so its own string hash does not).
struct TokenTextHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const {
    return absl::Hash<absl::string_view>{}(
        absl::string_view(text.data(), text.size()));
  }
};
struct TokenTextEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const {
    return a == b;
  }
};

// Token text -> token id. A text that occurs more than once maps to its
// highest id, as in llama.cpp.
using TokenIds =
    absl::flat_hash_map<std::string, int32_t, TokenTextHash, TokenTextEq>;

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_TOKEN_IDS_H_
