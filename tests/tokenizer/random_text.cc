#include "tests/tokenizer/random_text.h"

#include <cstdint>
#include <iterator>
#include <string_view>

#include "framework/tokenizer/utf8.h"

namespace lnpu::framework::testing {

std::string RandomUtf8(std::mt19937& rng, int max_chars, bool allow_u2581) {
  static constexpr std::string_view kPieces[] = {
      "the", " cat", "Hello", " world", "'s", "'LL", "12345", "3.14", " ",
      "  ", "\n", "\n\n", "\t", " \n ", "!?", "...", "\xC3\xA9",
      "\xD0\xB6\xD0\xB8\xD0\xB2",  // жив
      "\xE6\x97\xA5\xE6\x9C\xAC",  // 日本
      "\xF0\x9F\x98\x80",          // 😀
      "\xF0\x9D\x84\x9E",          // 𝄞
      "\xE1\x9E\x80\xE1\x9E\xB6",  // Khmer with a vowel sign
  };
  std::uniform_int_distribution<int> length(0, max_chars);
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<size_t> piece(0, std::size(kPieces) - 1);
  std::uniform_int_distribution<uint32_t> scalar(1, 0x10FFFF - 0x800);
  std::string text;
  for (int n = length(rng); n > 0; --n) {
    if (kind(rng) != 0) {
      text += kPieces[piece(rng)];
      continue;
    }
    // Any scalar value: skip the surrogate block.
    char32_t code_point = scalar(rng);
    if (code_point >= 0xD800) code_point += 0x800;
    if (code_point == 0x2581 && !allow_u2581) code_point = 0x2582;
    utf8::AppendChar(code_point, text);
  }
  return text;
}

}  // namespace lnpu::framework::testing
