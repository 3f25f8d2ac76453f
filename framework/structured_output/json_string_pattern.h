// JSON Schema "pattern" (an ECMA-262 regular expression) -> the grammar of
// a JSON string's content (between the quotes) whose value it matches.
//
// The subset: literal characters, '.', classes [...] and [^...] of ASCII
// characters and ranges, \d \w \s and escaped punctuation, groups (...)
// and (?:...), alternation |, quantifiers ? * + {n} {n,} {n,m}, and '^' /
// '$' only at the start / end. As in JSON Schema, the pattern is not
// anchored: without '^' (or '$') any characters may come before (after)
// the match. Unimplemented, naming the construct and its offset, for the
// rest (backreferences, lookaround, lazy quantifiers, \b, \D, \uXXXX,
// non-ASCII in classes, ...).
//
// The grammar is a subset where JSON spelling would be ambiguous: '.'
// and negated classes never produce escapes, and never '"' or '\\'.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_JSON_STRING_PATTERN_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_JSON_STRING_PATTERN_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "framework/structured_output/grammar.h"

namespace lnpu::framework::structured_output {

absl::StatusOr<Expr> JsonStringPattern(std::string_view pattern);

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_JSON_STRING_PATTERN_H_
