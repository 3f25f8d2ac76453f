#include "framework/structured_output/json_number_range.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework/structured_output/json_text.h"

namespace lnpu::framework::structured_output {
namespace {

// Drops the integer part's leading zeros and the fraction's trailing
// zeros; zero is not negative.
Decimal Normalized(Decimal value) {
  const size_t first = value.integer.find_first_not_of('0');
  value.integer = first == std::string::npos ? "0" : value.integer.substr(first);
  const size_t last = value.fraction.find_last_not_of('0');
  value.fraction = last == std::string::npos ? "" : value.fraction.substr(0, last + 1);
  if (value.integer == "0" && value.fraction.empty()) value.negative = false;
  return value;
}

// <0, 0, >0: canonical integer digit strings compared.
int CompareIntegers(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b);
}

int CompareMagnitude(const Decimal& a, const Decimal& b) {
  if (const int c = CompareIntegers(a.integer, b.integer); c != 0) return c < 0 ? -1 : 1;
  // Without trailing zeros, fractions compare as strings.
  if (const int c = a.fraction.compare(b.fraction); c != 0) return c < 0 ? -1 : 1;
  return 0;
}

// The digit string `digits` plus one (digits only, may grow by a digit).
std::string Incremented(std::string digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return digits;
    }
    digits[i] = '0';
  }
  return "1" + digits;
}

// The canonical integer `digits` minus one; requires digits >= 1.
std::string Decremented(std::string digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '0') {
      --digits[i];
      break;
    }
    digits[i] = '9';
  }
  const size_t first = digits.find_first_not_of('0');
  return first == std::string::npos ? "0" : digits.substr(first);
}

Expr Digit() { return Set(ByteRange('0', '9')); }

// Digit strings s of length min_length..max_length with lo <= s <= hi,
// strings compared left-aligned and padded with zeros (as fractions; for
// strings of one fixed length, as integers); s[0, pos) has been spelled.
// `tight_lo` / `tight_hi`: s[0, pos) equals lo's / hi's prefix so far,
// so the bound still constrains the rest (a bound not tight constrains
// nothing more). One chain of calls per tight side: O(max_length) Exprs.
Expr DigitsBetween(const std::string& lo, const std::string& hi, size_t pos, bool tight_lo,
                   bool tight_hi, size_t min_length, size_t max_length) {
  if (tight_lo && pos >= lo.size()) tight_lo = false;  // the rest of lo is zeros
  const size_t min_rest = min_length > pos ? min_length - pos : 0;
  if (!tight_lo && !tight_hi) {
    return Repeat(Digit(), static_cast<int>(min_rest), static_cast<int>(max_length - pos));
  }
  std::vector<Expr> choices;
  // s may end here once lo is passed; the zeros after it are within hi.
  if (pos >= min_length && !tight_lo) choices.push_back(Literal(""));
  if (pos < max_length) {
    const char low = tight_lo ? lo[pos] : '0';
    const char high = !tight_hi ? '9' : pos < hi.size() ? hi[pos] : '0';
    auto next = [&](bool lo_still, bool hi_still) {
      return DigitsBetween(lo, hi, pos + 1, lo_still, hi_still, min_length, max_length);
    };
    if (low == high) {
      choices.push_back(Sequence({Set(BytesOf(std::string(1, low))), next(tight_lo, tight_hi)}));
    } else {
      if (tight_lo) choices.push_back(Sequence({Set(BytesOf(std::string(1, low))), next(true, false)}));
      const char middle_low = tight_lo ? static_cast<char>(low + 1) : low;
      const char middle_high = tight_hi ? static_cast<char>(high - 1) : high;
      if (middle_low <= middle_high) {
        choices.push_back(Sequence({Set(ByteRange(middle_low, middle_high)), next(false, false)}));
      }
      if (tight_hi) choices.push_back(Sequence({Set(BytesOf(std::string(1, high))), next(false, true)}));
    }
  }
  return choices.size() == 1 ? std::move(choices[0]) : Choice(std::move(choices));
}

// Canonical integers (no leading zeros) from lo to hi, lo <= hi.
Expr IntegerInRange(const std::string& lo, const std::string& hi) {
  const size_t lo_length = lo.size();
  const size_t hi_length = hi.size();
  if (lo_length == hi_length) return DigitsBetween(lo, hi, 0, true, true, lo_length, lo_length);
  std::vector<Expr> choices;
  choices.push_back(
      DigitsBetween(lo, std::string(lo_length, '9'), 0, true, true, lo_length, lo_length));
  if (hi_length - lo_length >= 2) {  // every number of the lengths between
    choices.push_back(Sequence({Set(ByteRange('1', '9')),
                                Repeat(Digit(), static_cast<int>(lo_length),
                                       static_cast<int>(hi_length - 2))}));
  }
  choices.push_back(DigitsBetween("1" + std::string(hi_length - 1, '0'), hi, 0, true, true,
                                  hi_length, hi_length));
  return Choice(std::move(choices));
}

// The optional fraction ("" or '.' and 1..fraction_digits digits) of a
// number whose fraction must be >= *lo and <= *hi (null: unbounded).
Expr FractionInRange(const std::string* lo, const std::string* hi, int fraction_digits) {
  if (fraction_digits == 0) return Literal("");
  std::vector<Expr> choices;
  if (lo == nullptr || lo->empty()) choices.push_back(Literal(""));
  choices.push_back(Sequence(
      {Literal("."), DigitsBetween(lo ? *lo : "", hi ? *hi : "", 0, lo != nullptr, hi != nullptr,
                                   1, static_cast<size_t>(fraction_digits))}));
  return choices.size() == 1 ? std::move(choices[0]) : Choice(std::move(choices));
}

// Non-negative numbers from lo to hi (magnitudes, lo <= hi).
Expr MagnitudeInRange(const Decimal& lo, const Decimal& hi, int fraction_digits) {
  if (lo.integer == hi.integer) {
    return Sequence(
        {Literal(lo.integer), FractionInRange(&lo.fraction, &hi.fraction, fraction_digits)});
  }
  std::vector<Expr> choices;
  choices.push_back(
      Sequence({Literal(lo.integer), FractionInRange(&lo.fraction, nullptr, fraction_digits)}));
  const std::string above_lo = Incremented(lo.integer);
  const std::string below_hi = Decremented(hi.integer);
  if (CompareIntegers(above_lo, below_hi) <= 0) {
    choices.push_back(Sequence({IntegerInRange(above_lo, below_hi),
                                FractionInRange(nullptr, nullptr, fraction_digits)}));
  }
  choices.push_back(
      Sequence({Literal(hi.integer), FractionInRange(nullptr, &hi.fraction, fraction_digits)}));
  return Choice(std::move(choices));
}

Decimal Magnitude(Decimal value) {
  value.negative = false;
  return value;
}

}  // namespace

Decimal DecimalOf(double value) {
  char text[64];
  const std::to_chars_result written = std::to_chars(text, text + sizeof(text), value);
  const std::string_view shortest(text, static_cast<size_t>(written.ptr - text));
  Decimal result;
  size_t i = 0;
  if (i < shortest.size() && shortest[i] == '-') {
    result.negative = true;
    ++i;
  }
  std::string digits;
  int point = 0;  // digits before the decimal point
  bool after_point = false;
  for (; i < shortest.size() && shortest[i] != 'e'; ++i) {
    if (shortest[i] == '.') {
      after_point = true;
      continue;
    }
    digits.push_back(shortest[i]);
    if (!after_point) ++point;
  }
  if (i < shortest.size()) {  // 'e', a sign, the exponent
    int exponent = 0;
    std::from_chars(shortest.data() + i + 1 + (shortest[i + 1] == '+'),
                    shortest.data() + shortest.size(), exponent);
    point += exponent;
  }
  if (point <= 0) {
    result.integer = "0";
    result.fraction = std::string(static_cast<size_t>(-point), '0') + digits;
  } else if (static_cast<size_t>(point) >= digits.size()) {
    result.integer = digits + std::string(static_cast<size_t>(point) - digits.size(), '0');
  } else {
    result.integer = digits.substr(0, static_cast<size_t>(point));
    result.fraction = digits.substr(static_cast<size_t>(point));
  }
  return Normalized(std::move(result));
}

Decimal DecimalOf(int64_t value) {
  const uint64_t magnitude =
      value < 0 ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  Decimal result;
  result.negative = value < 0;
  result.integer = std::to_string(magnitude);
  return result;
}

int Compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  const int magnitude = CompareMagnitude(a, b);
  return a.negative ? -magnitude : magnitude;
}

Decimal RoundToFraction(const Decimal& value, int fraction_digits, bool up) {
  const auto kept = static_cast<size_t>(fraction_digits);
  if (value.fraction.size() <= kept) return value;
  Decimal rounded = value;
  rounded.fraction.resize(kept);  // towards zero
  if (up != value.negative) {     // away from zero: add one unit of the last kept digit
    const std::string digits = Incremented(rounded.integer + rounded.fraction);
    rounded.integer = digits.substr(0, digits.size() - kept);
    rounded.fraction = digits.substr(digits.size() - kept);
  }
  return Normalized(std::move(rounded));
}

std::string DecimalText(const Decimal& value) {
  return (value.negative ? "-" : "") + value.integer +
         (value.fraction.empty() ? "" : "." + value.fraction);
}

Decimal LargestJsonMagnitude(int fraction_digits) {
  Decimal largest;
  largest.integer = std::string(kMaxIntegerDigits, '9');
  largest.fraction = std::string(static_cast<size_t>(fraction_digits), '9');
  return largest;
}

Expr JsonNumberInRange(const Decimal& lo, const Decimal& hi, int fraction_digits) {
  const Decimal zero;
  std::vector<Expr> choices;
  if (Compare(lo, zero) <= 0) {  // "-" and magnitudes |hi| (or 0) .. |lo|
    choices.push_back(Sequence(
        {Literal("-"), MagnitudeInRange(hi.negative ? Magnitude(hi) : zero, Magnitude(lo),
                                        fraction_digits)}));
  }
  if (Compare(hi, zero) >= 0) {
    choices.push_back(MagnitudeInRange(lo.negative ? zero : lo, hi, fraction_digits));
  }
  return choices.size() == 1 ? std::move(choices[0]) : Choice(std::move(choices));
}

}  // namespace lnpu::framework::structured_output
