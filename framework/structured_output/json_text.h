// Grammar expressions for the lexical pieces of JSON text (RFC 8259):
// string characters, numbers, integers. Shared by the schema compiler and
// the string-pattern translator.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_JSON_TEXT_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_JSON_TEXT_H_

#include "framework/structured_output/grammar.h"

namespace lnpu::framework::structured_output {

// One character of a JSON string as written between the quotes: a
// well-formed UTF-8 character other than '"', '\\' and controls, or (when
// `escapes`) a backslash escape; \u escapes never spell a surrogate.
// Characters whose first byte is in `excluded` are left out.
Expr JsonStringCharacter(const ByteSet& excluded, bool escapes);

// A JSON number with at most kMaxIntegerDigits integer digits,
// kMaxFractionDigits fraction digits and 2 exponent digits (so always a
// finite double); an integer: the same without fraction and exponent.
inline constexpr int kMaxIntegerDigits = 16;
inline constexpr int kMaxFractionDigits = 16;
Expr JsonNumber();
Expr JsonInteger();

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_JSON_TEXT_H_
