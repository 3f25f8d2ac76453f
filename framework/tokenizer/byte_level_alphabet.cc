#include "framework/tokenizer/byte_level_alphabet.h"

#include <array>
#include <string>

#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

// Printable Latin-1 bytes stand for themselves; the other 68 bytes, in
// increasing order, take the code points from U+0100 up.
constexpr bool StandsForItself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

constexpr std::array<char32_t, 256> MakeCodePoints() {
  std::array<char32_t, 256> code_points{};
  char32_t next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    code_points[byte] = StandsForItself(byte) ? byte : next++;
  }
  return code_points;
}

constexpr std::array<char32_t, 256> kCodePoints = MakeCodePoints();
// Every code point in the alphabet is below this.
constexpr char32_t kAlphabetEnd = 0x100 + 68;

struct Tables {
  std::array<std::string, 256> chars;
  std::array<int16_t, kAlphabetEnd> bytes;  // -1 for code points not used
};

const Tables& GetTables() {
  static const Tables* const tables = [] {
    auto* t = new Tables;
    t->bytes.fill(-1);
    for (int byte = 0; byte < 256; ++byte) {
      utf8::AppendChar(kCodePoints[byte], t->chars[byte]);
      t->bytes[kCodePoints[byte]] = static_cast<int16_t>(byte);
    }
    return t;
  }();
  return *tables;
}

}  // namespace

std::string_view ByteLevelChar(uint8_t byte) { return GetTables().chars[byte]; }

std::optional<uint8_t> ByteOfByteLevelChar(char32_t code_point) {
  if (code_point >= kAlphabetEnd) return std::nullopt;
  const int16_t byte = GetTables().bytes[code_point];
  if (byte < 0) return std::nullopt;
  return static_cast<uint8_t>(byte);
}

}  // namespace lnpu::framework
