// Grammar expressions for the JSON numbers within inclusive decimal bounds
// (JSON Schema minimum / maximum / exclusiveMinimum / exclusiveMaximum),
// built digit by digit: a number is in [lo, hi] exactly when its digit
// string compares so with the bounds' digit strings, a regular language
// whose grammar has O(digits^2) elements however wide the range is.
//
// Numbers are written without exponent, with a canonical integer part (no
// leading zeros) of at most kMaxIntegerDigits digits and, when fraction
// digits are allowed, an optional fraction of 1..fraction_digits digits
// (trailing zeros allowed). "-0" (and "-0.0", ...) is written exactly when
// 0 is in range.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_JSON_NUMBER_RANGE_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_JSON_NUMBER_RANGE_H_

#include <string>

#include "framework/structured_output/grammar.h"

namespace lnpu::framework::structured_output {

// An exact decimal number: sign, integer digits without leading zeros
// ("0" for none) and fraction digits without trailing zeros. Zero is never
// negative.
struct Decimal {
  bool negative = false;
  std::string integer = "0";
  std::string fraction;

  friend bool operator==(const Decimal&, const Decimal&) = default;
};

// The shortest decimal that reads back as `value` (finite).
Decimal DecimalOf(double value);
// The decimal of an integer.
Decimal DecimalOf(int64_t value);
// <0, 0, >0 as a is below, equal to, above b.
int Compare(const Decimal& a, const Decimal& b);
// `value` rounded to at most `fraction_digits` fraction digits, towards
// +infinity when `up`, else towards -infinity.
Decimal RoundToFraction(const Decimal& value, int fraction_digits, bool up);
// The decimal as JSON text (for messages and tests).
std::string DecimalText(const Decimal& value);

// The largest magnitude a number with at most kMaxIntegerDigits integer
// digits and `fraction_digits` fraction digits can have (all nines).
Decimal LargestJsonMagnitude(int fraction_digits);

// JSON numbers x with lo <= x <= hi, written as above. Requires lo <= hi,
// both within +-LargestJsonMagnitude(fraction_digits) and with at most
// `fraction_digits` fraction digits (0: integers).
Expr JsonNumberInRange(const Decimal& lo, const Decimal& hi, int fraction_digits);

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_JSON_NUMBER_RANGE_H_
