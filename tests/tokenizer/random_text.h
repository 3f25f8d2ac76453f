// Test support: random well-formed UTF-8 for property tests.
#ifndef TESTS_TOKENIZER_RANDOM_TEXT_H_
#define TESTS_TOKENIZER_RANDOM_TEXT_H_

#include <random>
#include <string>

namespace lnpu::framework::testing {

// Up to `max_chars` characters mixing ASCII words, digits, punctuation,
// runs of spaces, tabs and newlines, 2- to 4-byte characters (Latin,
// Cyrillic, CJK, emoji) and arbitrary scalar values. U+2581 appears only
// when `allow_u2581`.
std::string RandomUtf8(std::mt19937& rng, int max_chars, bool allow_u2581);

}  // namespace lnpu::framework::testing

#endif  // TESTS_TOKENIZER_RANDOM_TEXT_H_
