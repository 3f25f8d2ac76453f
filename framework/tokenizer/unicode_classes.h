// The Unicode character classes the byte-level BPE pre-tokenizers match on:
// letters (\p{L}), numbers (\p{N}), marks (\p{M}), punctuation (\p{P}),
// symbols (\p{S}) and white space (\s). Stateless and
// thread-safe.
#ifndef FRAMEWORK_TOKENIZER_UNICODE_CLASSES_H_
#define FRAMEWORK_TOKENIZER_UNICODE_CLASSES_H_

#include <cstdint>

namespace lnpu::framework {

enum class UnicodeClass : uint8_t {
  kOther,
  kLetter,  // General_Category L* (Lu, Ll, Lt, Lm, Lo)
  kNumber,  // General_Category N* (Nd, Nl, No)
  kMark,    // General_Category M* (Mn, Mc, Me)
  kPunctuation,  // General_Category P* (Pc, Pd, Ps, Pe, Pi, Pf, Po)
  kSymbol,       // General_Category S* (Sm, Sc, Sk, So)
};

// The class of `code_point` (kOther for anything above U+10FFFF).
UnicodeClass ClassOf(char32_t code_point);

// The White_Space property, which is what \s matches in Unicode regexes.
bool IsWhiteSpace(char32_t code_point);

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_UNICODE_CLASSES_H_
