// UTF-8 decoding as the Unicode standard defines well-formedness (Table 3-7:
// no overlongs, no surrogates, nothing above U+10FFFF), with the "maximal
// subpart" rule for where an ill-formed sequence ends. Stateless and
// thread-safe.
#ifndef FRAMEWORK_TOKENIZER_UTF8_H_
#define FRAMEWORK_TOKENIZER_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace lnpu::framework::utf8 {

// U+FFFD REPLACEMENT CHARACTER, encoded.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

struct DecodedChar {
  enum class Kind {
    kValid,       // `code_point` spans the first `length` bytes
    kIncomplete,  // all `length` bytes are a valid start of a longer character
    kInvalid,     // the first `length` (>= 1) bytes are one ill-formed subpart
  };
  Kind kind;
  char32_t code_point;  // meaningful only for kValid
  size_t length;
};

// Decodes the character at the start of `bytes`, which must be non-empty.
DecodedChar DecodeChar(std::string_view bytes);

// The number of bytes of a character whose first byte is `lead` (1 for a
// byte that cannot start one). Meaningful for well-formed text only.
size_t CharLength(char lead);

// OK for well-formed UTF-8, else InvalidArgument naming the byte offset of
// the first problem.
absl::Status Validate(std::string_view text);

void AppendChar(char32_t code_point, std::string& out);

}  // namespace lnpu::framework::utf8

#endif  // FRAMEWORK_TOKENIZER_UTF8_H_
