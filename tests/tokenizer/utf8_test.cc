#include "framework/tokenizer/utf8.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace lnpu::framework::utf8 {
namespace {

using Kind = DecodedChar::Kind;

TEST(Utf8Test, DecodesWellFormedCharacters) {
  for (char32_t code_point : {0x00u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu,
                              0xE000u, 0xFFFDu, 0x10000u, 0x10FFFFu}) {
    std::string encoded;
    AppendChar(code_point, encoded);
    if (code_point == 0) encoded = std::string(1, '\0');
    const DecodedChar decoded = DecodeChar(encoded);
    EXPECT_EQ(decoded.kind, Kind::kValid) << static_cast<uint32_t>(code_point);
    EXPECT_EQ(decoded.code_point, code_point);
    EXPECT_EQ(decoded.length, encoded.size());
    EXPECT_EQ(CharLength(encoded[0]), encoded.size());
  }
}

TEST(Utf8Test, MaximalSubpartsOfIllFormedSequences) {
  struct Case {
    std::string bytes;
    Kind kind;
    size_t length;
  };
  for (const Case& c : {
           Case{"\x80", Kind::kInvalid, 1},           // lone continuation
           Case{"\xC1\xBF", Kind::kInvalid, 1},       // overlong lead
           Case{"\xE0\x9F\x80", Kind::kInvalid, 1},   // overlong
           Case{"\xED\xA0\x80", Kind::kInvalid, 1},   // surrogate
           Case{"\xF4\x90\x80\x80", Kind::kInvalid, 1},
           Case{"\xF5", Kind::kInvalid, 1},
           Case{"\xE2\x96" "A", Kind::kInvalid, 2},   // broken after 2
           Case{"\xF0\x9F\x98" "A", Kind::kInvalid, 3},
           Case{"\xF0\x9F\x98", Kind::kIncomplete, 3},
           Case{"\xE2", Kind::kIncomplete, 1},
       }) {
    const DecodedChar decoded = DecodeChar(c.bytes);
    EXPECT_EQ(decoded.kind, c.kind);
    EXPECT_EQ(decoded.length, c.length);
  }
}

TEST(Utf8Test, ValidateNamesTheOffset) {
  EXPECT_TRUE(Validate("").ok());
  EXPECT_TRUE(Validate("h\xC3\xA9llo \xF0\x9F\x98\x80").ok());
  const absl::Status status = Validate("abc\xC3(");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("byte offset 3 (byte 0xC3)"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace lnpu::framework::utf8
