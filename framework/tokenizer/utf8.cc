#include "framework/tokenizer/utf8.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace lnpu::framework::utf8 {

DecodedChar DecodeChar(std::string_view bytes) {
  const auto lead = static_cast<uint8_t>(bytes[0]);
  if (lead < 0x80) return {DecodedChar::Kind::kValid, lead, 1};
  size_t length;
  char32_t code_point;
  // Bounds of the second byte; later bytes are always 80..BF.
  uint8_t low = 0x80;
  uint8_t high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;   // no overlongs
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07;
    if (lead == 0xF0) low = 0x90;   // no overlongs
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return {DecodedChar::Kind::kInvalid, 0, 1};
  }
  for (size_t i = 1; i < length; ++i) {
    if (i == bytes.size()) return {DecodedChar::Kind::kIncomplete, 0, i};
    const auto byte = static_cast<uint8_t>(bytes[i]);
    if (byte < low || byte > high) return {DecodedChar::Kind::kInvalid, 0, i};
    low = 0x80;
    high = 0xBF;
    code_point = (code_point << 6) | (byte & 0x3F);
  }
  return {DecodedChar::Kind::kValid, code_point, length};
}

size_t CharLength(char lead) {
  const auto byte = static_cast<uint8_t>(lead);
  if (byte >= 0xF0) return 4;
  if (byte >= 0xE0) return 3;
  if (byte >= 0xC0) return 2;
  return 1;
}

absl::Status Validate(std::string_view text) {
  size_t offset = 0;
  while (offset < text.size()) {
    const DecodedChar decoded = DecodeChar(text.substr(offset));
    switch (decoded.kind) {
      case DecodedChar::Kind::kValid:
        offset += decoded.length;
        break;
      case DecodedChar::Kind::kIncomplete:
        return absl::InvalidArgumentError(absl::StrFormat(
            "the text is not valid UTF-8: it ends inside a character that "
            "starts at byte offset %d; pass complete UTF-8 text",
            offset));
      case DecodedChar::Kind::kInvalid:
        return absl::InvalidArgumentError(absl::StrFormat(
            "the text is not valid UTF-8: ill-formed sequence at byte offset "
            "%d (byte 0x%02X); pass UTF-8 text (convert other encodings "
            "first)",
            offset, static_cast<uint8_t>(text[offset])));
    }
  }
  return absl::OkStatus();
}

void AppendChar(char32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

}  // namespace lnpu::framework::utf8
