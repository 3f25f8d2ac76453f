// Numeric bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum)
// compiled into the grammar: for edge and random ranges, the grammar
// accepts exactly the integers within (every integer of windows around
// the bounds and zero, random ones, the longest digit strings) and the
// numbers within (decimal strings near the bounds, compared exactly by an
// independent fixed-point oracle), in canonical form only; bad bounds are
// errors naming the place; a huge range stays a small grammar.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "framework/structured_output/grammar_recognizer.h"
#include "framework/structured_output/json_schema.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/structured_output/grammar_matches.h"
#include "tests/structured_output/json_schema_validator.h"

namespace lnpu::framework::structured_output {
namespace {

using ::testing::HasSubstr;
using testing::Matches;

constexpr int64_t kLargest = 9'999'999'999'999'999;  // 16 digits

// Runs many texts through one grammar with one recognizer, so that its
// cached transitions are reused from text to text.
class Acceptor {
 public:
  explicit Acceptor(std::shared_ptr<const Grammar> grammar)
      : recognizer_(std::move(grammar)), start_(recognizer_.state()) {}

  bool Accepts(const std::string& text) {
    GrammarRecognizer::StateId state = start_;
    for (const char c : text) {
      state = recognizer_.Next(state, static_cast<uint8_t>(c));
      if (state == GrammarRecognizer::kDead) return false;
    }
    return recognizer_.IsAccepting(state);
  }

 private:
  GrammarRecognizer recognizer_;
  GrammarRecognizer::StateId start_;
};

std::shared_ptr<const Grammar> Compile(const std::string& schema) {
  absl::StatusOr<std::shared_ptr<const Grammar>> grammar = JsonSchemaGrammar(schema);
  EXPECT_TRUE(grammar.ok()) << schema << ": " << grammar.status();
  return grammar.ok() ? *grammar : nullptr;
}

// Fixed point with 16 fraction digits, exact for every number the
// grammar writes (at most 16 + 16 digits).
using Fixed = __int128;
constexpr int kFraction = 16;

Fixed Pow10(int n) {
  Fixed p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// A number of 1..max_digits random digits (leading zeros possible), and
// how many digits were drawn.
struct RandomNumber {
  Fixed value;
  int digits;
};
RandomNumber RandomDigits(int max_digits, std::mt19937_64& random) {
  const int digits = std::uniform_int_distribution<int>(1, max_digits)(random);
  Fixed value = 0;
  for (int d = 0; d < digits; ++d) {
    value = value * 10 + std::uniform_int_distribution<int>(0, 9)(random);
  }
  return {value, digits};
}

// An integer schema and the integers it allows, [lo, hi].
struct IntegerCase {
  std::string schema;
  int64_t lo;
  int64_t hi;
};

// Checks that the grammar of `c` accepts exactly the integers of [lo, hi]
// among windows around lo, hi and 0, random integers and the longest
// digit strings, and only in canonical form.
void ExpectIntegerRange(const IntegerCase& c, std::mt19937_64& random) {
  SCOPED_TRACE(c.schema);
  const std::shared_ptr<const Grammar> grammar = Compile(c.schema);
  ASSERT_NE(grammar, nullptr);
  Acceptor acceptor(grammar);
  std::vector<int64_t> candidates = {kLargest, -kLargest, 1'000'000'000'000'000,
                                     -1'000'000'000'000'000};
  for (int64_t center : {c.lo, c.hi, int64_t{0}}) {
    for (int64_t d = -40; d <= 40; ++d) candidates.push_back(center + d);
  }
  for (int64_t p = 10; p <= 1'000'000'000'000'000; p *= 10) {  // powers of ten and neighbours
    for (int64_t n : {p - 1, p, p + 1}) {
      candidates.push_back(n);
      candidates.push_back(-n);
    }
  }
  std::uniform_int_distribution<int64_t> any(-kLargest, kLargest);
  std::uniform_int_distribution<int64_t> near(-1000, 1000);
  for (int i = 0; i < 100; ++i) {
    candidates.push_back(any(random));
    candidates.push_back(c.lo + near(random));
    candidates.push_back(c.hi + near(random));
  }
  int accepted = 0;
  for (const int64_t n : candidates) {
    if (n < -kLargest || n > kLargest) continue;
    const bool in_range = n >= c.lo && n <= c.hi;
    const std::string text = std::to_string(n);
    ASSERT_EQ(acceptor.Accepts(text), in_range) << text;
    accepted += in_range;
    if (in_range) {
      EXPECT_EQ(testing::ValidateJsonText(text, c.schema), "") << text;
      // Never a leading zero, a plus sign, a fraction or an exponent.
      const std::string digits = std::to_string(n < 0 ? -n : n);
      const std::string sign = n < 0 ? "-" : "";
      for (const std::string& other :
           {sign + "0" + digits, "+" + digits, text + ".0", text + "e0", text + " "}) {
        EXPECT_FALSE(acceptor.Accepts(other)) << other;
      }
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(acceptor.Accepts("-0"), c.lo <= 0 && c.hi >= 0);
  EXPECT_FALSE(acceptor.Accepts("00"));
  EXPECT_FALSE(acceptor.Accepts("10000000000000000"));  // 17 digits
  EXPECT_FALSE(acceptor.Accepts("-10000000000000000"));
  EXPECT_FALSE(acceptor.Accepts(""));
  EXPECT_FALSE(acceptor.Accepts("-"));
}

TEST(JsonNumberRangeTest, IntegerBoundsAcceptExactlyTheIntegersWithin) {
  std::mt19937_64 random(7);
  const std::vector<IntegerCase> cases = {
      {R"({"type": "integer", "minimum": 1, "maximum": 10})", 1, 10},
      {R"({"type": "integer", "minimum": 0, "maximum": 1})", 0, 1},
      {R"({"type": "integer", "minimum": 0, "maximum": 0})", 0, 0},
      {R"({"type": "integer", "minimum": 7, "maximum": 7})", 7, 7},
      {R"({"type": "integer", "minimum": -7, "maximum": -7})", -7, -7},
      {R"({"type": "integer", "minimum": -10, "maximum": -1})", -10, -1},
      {R"({"type": "integer", "minimum": -5, "maximum": 5})", -5, 5},
      {R"({"type": "integer", "minimum": -1000, "maximum": 999})", -1000, 999},
      {R"({"type": "integer", "minimum": 9, "maximum": 10})", 9, 10},
      {R"({"type": "integer", "minimum": 10, "maximum": 100})", 10, 100},
      {R"({"type": "integer", "minimum": 99, "maximum": 1000})", 99, 1000},
      {R"({"type": "integer", "minimum": 123, "maximum": 45678})", 123, 45678},
      {R"({"type": "integer", "minimum": -45678, "maximum": -123})", -45678, -123},
      {R"({"type": "integer", "minimum": 100, "maximum": 100000000})", 100, 100'000'000},
      {R"({"type": "integer", "minimum": 1, "maximum": 9999999999999999})", 1, kLargest},
      {R"({"type": "integer", "minimum": -9999999999999999, "maximum": 9999999999999999})",
       -kLargest, kLargest},
      {R"({"type": "integer", "minimum": 3})", 3, kLargest},
      {R"({"type": "integer", "minimum": 0})", 0, kLargest},
      {R"({"type": "integer", "minimum": -1})", -1, kLargest},
      {R"({"type": "integer", "maximum": -3})", -kLargest, -3},
      {R"({"type": "integer", "maximum": 0})", -kLargest, 0},
      {R"({"type": "integer", "maximum": 1000000})", -kLargest, 1'000'000},
      {R"({"type": "integer", "exclusiveMinimum": 0})", 1, kLargest},
      {R"({"type": "integer", "exclusiveMaximum": 10})", -kLargest, 9},
      {R"({"type": "integer", "exclusiveMinimum": -1, "exclusiveMaximum": 1})", 0, 0},
      {R"({"type": "integer", "minimum": 5, "exclusiveMinimum": 7, "maximum": 20,
           "exclusiveMaximum": 15})", 8, 14},
      {R"({"type": "integer", "minimum": 1.5, "maximum": 4.5})", 2, 4},
      {R"({"type": "integer", "exclusiveMinimum": 1.5})", 2, kLargest},
      {R"({"type": "integer", "minimum": -2.5, "exclusiveMaximum": -0.5})", -2, -1},
      {R"({"type": "integer", "minimum": 1e2, "maximum": 1e3})", 100, 1000},
      {R"({"type": "integer", "minimum": -1e300, "maximum": 1e300})", -kLargest, kLargest},
      {R"({"type": "integer", "maximum": 18446744073709551615})", -kLargest, kLargest},
      // Draft 4: boolean exclusive flags make minimum / maximum exclusive.
      {R"({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 5,
           "exclusiveMaximum": true})", 1, 4},
      {R"({"type": "integer", "minimum": 0, "exclusiveMinimum": false, "maximum": 5})", 0, 5},
      {R"({"type": ["integer", "null"], "minimum": 2, "maximum": 3})", 2, 3},
  };
  for (const IntegerCase& c : cases) ExpectIntegerRange(c, random);
  // Random ranges: random lengths and signs, inclusive or exclusive.
  auto random_bound = [&random]() {
    const auto magnitude = static_cast<int64_t>(RandomDigits(16, random).value);
    return std::uniform_int_distribution<int>(0, 1)(random) ? -magnitude : magnitude;
  };
  for (int i = 0; i < 300; ++i) {
    int64_t a = random_bound();
    int64_t b = random_bound();
    if (a > b) std::swap(a, b);
    const bool exclusive_lo = random() % 2 && a > -kLargest;
    const bool exclusive_hi = random() % 2 && b < kLargest && b - a >= 2;
    const std::string schema =
        R"({"type": "integer", ")" + std::string(exclusive_lo ? "exclusiveMinimum" : "minimum") +
        "\": " + std::to_string(exclusive_lo ? a - 1 : a) + ", \"" +
        (exclusive_hi ? "exclusiveMaximum" : "maximum") + "\": " +
        std::to_string(exclusive_hi ? b + 1 : b) + "}";
    ExpectIntegerRange({schema, a, b}, random);
  }
}

// "-?digits(.digits)?" with at most 16 fraction digits.
Fixed ParseFixed(const std::string& text) {
  size_t i = text[0] == '-' ? 1 : 0;
  Fixed integer = 0;
  for (; i < text.size() && text[i] != '.'; ++i) integer = integer * 10 + (text[i] - '0');
  Fixed fraction = 0;
  int fraction_digits = 0;
  for (++i; i < text.size(); ++i, ++fraction_digits) fraction = fraction * 10 + (text[i] - '0');
  const Fixed value = integer * Pow10(kFraction) + fraction * Pow10(kFraction - fraction_digits);
  return text[0] == '-' ? -value : value;
}

// `value` written with `fraction_digits` fraction digits (those dropped
// must be zeros).
std::string FixedText(Fixed value, int fraction_digits) {
  const bool negative = value < 0;
  Fixed magnitude = negative ? -value : value;
  std::string fraction;
  Fixed part = magnitude % Pow10(kFraction);
  for (int i = 0; i < kFraction; ++i, part /= 10) fraction.insert(0, 1, char('0' + part % 10));
  fraction.resize(fraction_digits);
  std::string integer;
  for (Fixed n = magnitude / Pow10(kFraction); n > 0 || integer.empty(); n /= 10) {
    integer.insert(0, 1, char('0' + n % 10));
  }
  return (negative ? "-" : "") + integer + (fraction_digits > 0 ? "." + fraction : "");
}

// The fewest fraction digits that write `value` exactly.
int FractionDigitsOf(Fixed value) {
  Fixed part = (value < 0 ? -value : value) % Pow10(kFraction);
  int digits = kFraction;
  while (digits > 0 && part % 10 == 0) {
    part /= 10;
    --digits;
  }
  return digits;
}

struct NumberCase {
  std::string minimum;  // decimal text of at most 15 significant digits, or empty: none
  std::string maximum;
  bool exclusive_minimum = false;
  bool exclusive_maximum = false;
};

void ExpectNumberRange(const NumberCase& c, std::mt19937_64& random) {
  std::string schema = R"({"type": "number")";
  if (!c.minimum.empty()) {
    schema += std::string(", \"") + (c.exclusive_minimum ? "exclusiveMinimum" : "minimum") +
              "\": " + c.minimum;
  }
  if (!c.maximum.empty()) {
    schema += std::string(", \"") + (c.exclusive_maximum ? "exclusiveMaximum" : "maximum") +
              "\": " + c.maximum;
  }
  schema += "}";
  SCOPED_TRACE(schema);
  const std::shared_ptr<const Grammar> grammar = Compile(schema);
  ASSERT_NE(grammar, nullptr);
  Acceptor acceptor(grammar);
  const Fixed largest = Pow10(16 + kFraction) - 1;  // 16 nines . 16 nines
  const Fixed lo = c.minimum.empty() ? -largest : ParseFixed(c.minimum);
  const Fixed hi = c.maximum.empty() ? largest : ParseFixed(c.maximum);
  // Exclusive bounds: a number whose double is the bound's is refused too,
  // so only numbers clear of the bound by more than a double's spacing
  // there (and a unit of the last fraction digit) are surely allowed.
  auto margin = [](Fixed bound) { return (bound < 0 ? -bound : bound) / Pow10(14) + 10; };
  std::vector<Fixed> candidates = {0, largest, -largest, lo, hi};
  std::uniform_int_distribution<int> exponent(0, kFraction + 4);
  std::uniform_int_distribution<int> step(-9, 9);
  for (const Fixed center : {lo, hi, Fixed{0}}) {
    for (int i = 0; i < 150; ++i) {
      candidates.push_back(center + step(random) * Pow10(exponent(random)));
    }
  }
  for (int i = 0; i < 100; ++i) {  // anywhere in between
    const Fixed span = hi - lo;
    const auto r = static_cast<Fixed>(random() >> 1) * static_cast<Fixed>(random() >> 1);
    candidates.push_back(lo + (span > 0 ? r % (span + 1) : 0));
  }
  int accepted = 0;
  for (const Fixed value : candidates) {
    if (value < -largest || value > largest) continue;
    std::uniform_int_distribution<int> digits(FractionDigitsOf(value), kFraction);
    const std::string text = FixedText(value, digits(random));
    const bool matches = acceptor.Accepts(text);
    const bool within = (c.exclusive_minimum ? value > lo : value >= lo) &&
                        (c.exclusive_maximum ? value < hi : value <= hi);
    const bool clear = (!c.exclusive_minimum || value >= lo + margin(lo)) &&
                       (!c.exclusive_maximum || value <= hi - margin(hi));
    if (within && clear) {
      EXPECT_TRUE(matches) << text;
    } else if (!within) {
      EXPECT_FALSE(matches) << text;
    }
    if (matches) {
      ++accepted;
      EXPECT_TRUE(within) << text;
      EXPECT_EQ(testing::ValidateJsonText(text, schema), "") << text;  // as doubles too
      const std::string exponent_form = text + "e0";
      EXPECT_FALSE(acceptor.Accepts(exponent_form)) << exponent_form;
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_FALSE(acceptor.Accepts("1." + std::string(17, '0')));  // 17 fraction digits
  EXPECT_FALSE(acceptor.Accepts(".5"));
  EXPECT_FALSE(acceptor.Accepts("1."));
}

TEST(JsonNumberRangeTest, NumberBoundsAcceptExactlyTheNumbersWithin) {
  std::mt19937_64 random(11);
  const std::vector<NumberCase> cases = {
      {"0", "1"},
      {"0.5", "0.5"},
      {"-0.5", "0.5"},
      {"-2.25", "-0.001"},
      {"0.001", "0.002"},
      {"3.14159", ""},
      {"", "-273.15"},
      {"0", ""},
      {"", "0"},
      {"0.0000000000000001", "0.0000000000000003"},
      {"12345.678", "99999.5"},
      {"-100", "100"},
      {"9.99", "10.01"},
      {"999999999999999", ""},
      {"0", "1", true, true},
      {"-273.15", "1000", true, false},
      {"-1", "1", false, true},
      {"0.1", "0.3", true, true},
  };
  for (const NumberCase& c : cases) ExpectNumberRange(c, random);
  // Random bounds of up to 12 significant digits.
  auto random_bound = [&random]() {
    auto [value, digits] = RandomDigits(12, random);
    value *= Pow10(std::uniform_int_distribution<int>(0, kFraction + 3 - digits)(random));
    return std::uniform_int_distribution<int>(0, 1)(random) ? -value : value;
  };
  for (int i = 0; i < 200; ++i) {
    Fixed a = random_bound();
    Fixed b = random_bound();
    if (a > b) std::swap(a, b);
    ExpectNumberRange({FixedText(a, FractionDigitsOf(a)), FixedText(b, FractionDigitsOf(b)),
                       random() % 2 == 0 && a < b, random() % 2 == 0 && a < b},
                      random);
  }
}

TEST(JsonNumberRangeTest, UnboundedNumbersKeepTheirExponent) {
  EXPECT_TRUE(Matches(Compile(R"({"type": "number"})"), "1e2"));
  EXPECT_FALSE(Matches(Compile(R"({"type": "number", "minimum": 0})"), "1e2"));
  EXPECT_TRUE(Matches(Compile(R"({"minimum": 0})"), "0.5"));  // untyped: a number
}

TEST(JsonNumberRangeTest, HugeRangesStaySmallGrammars) {
  for (const std::string schema : {
           R"({"type": "integer", "minimum": -9999999999999999, "maximum": 9999999999999999})",
           R"({"type": "integer", "minimum": -1234567890123456, "maximum": 8765432109876543})",
           R"({"type": "number", "minimum": -123456789.0123456, "maximum": 987654321.987654})",
           R"({"type": "number", "exclusiveMinimum": -1e300, "exclusiveMaximum": 1e300})",
       }) {
    const std::shared_ptr<const Grammar> grammar = Compile(schema);
    ASSERT_NE(grammar, nullptr);
    EXPECT_LT(grammar->elements().size(), 20000u) << schema;
  }
}

TEST(JsonNumberRangeTest, BadBoundsAreNamedErrors) {
  for (const auto& [schema, code, message] :
       std::vector<std::tuple<std::string, absl::StatusCode, std::string>>{
           {R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5,
                "maximum": 3}}})",
            absl::StatusCode::kInvalidArgument, "at /properties/n: no integer lies within"},
           {R"({"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2})",
            absl::StatusCode::kInvalidArgument, "no integer lies within"},
           {R"({"type": "integer", "minimum": 1.2, "maximum": 1.8})",
            absl::StatusCode::kInvalidArgument, "no integer lies within"},
           {R"({"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1})",
            absl::StatusCode::kInvalidArgument, "the minimum is above the maximum"},
           {R"({"type": "number", "minimum": "3"})", absl::StatusCode::kInvalidArgument,
            "'minimum' must be a number"},
           {R"({"type": "number", "exclusiveMaximum": "3"})", absl::StatusCode::kInvalidArgument,
            "'exclusiveMaximum' must be a number"},
           {R"({"type": "integer", "exclusiveMinimum": true})",
            absl::StatusCode::kInvalidArgument, "'exclusiveMinimum' true needs 'minimum'"},
           {R"({"type": "integer", "minimum": 1e20})", absl::StatusCode::kUnimplemented,
            "no integer of at most 16 integer digits"},
           {R"({"type": "number", "maximum": -1e17})", absl::StatusCode::kUnimplemented,
            "no number of at most 16 integer digits"},
           {R"({"type": "number", "minimum": 1e-20, "maximum": 2e-20})",
            absl::StatusCode::kUnimplemented, "16 fraction digits"},
           {R"({"type": "integer", "minimum": 0, "multipleOf": 2})",
            absl::StatusCode::kUnimplemented, "'multipleOf'"},
       }) {
    absl::StatusOr<std::shared_ptr<const Grammar>> grammar = JsonSchemaGrammar(schema);
    EXPECT_EQ(grammar.status().code(), code) << schema << ": " << grammar.status();
    EXPECT_THAT(grammar.status().message(), HasSubstr(message)) << schema;
  }
}

}  // namespace
}  // namespace lnpu::framework::structured_output
