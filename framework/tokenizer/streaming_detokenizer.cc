#include "framework/tokenizer/streaming_detokenizer.h"

#include <string_view>

#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer,
                                           Start start)
    : tokenizer_(&tokenizer),
      position_(start == Start::kContinuation ? Tokenizer::kMidText
                                              : Tokenizer::DecodePosition{}) {}

std::string StreamingDetokenizer::Push(int32_t id) {
  pending_ += tokenizer_->NextPiece(id, position_);
  std::string text;
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const utf8::DecodedChar decoded = utf8::DecodeChar(rest);
    if (decoded.kind == utf8::DecodedChar::Kind::kIncomplete) break;
    if (decoded.kind == utf8::DecodedChar::Kind::kValid) {
      text += rest.substr(0, decoded.length);
    } else {
      text += utf8::kReplacementCharacter;
    }
    rest.remove_prefix(decoded.length);
  }
  pending_.erase(0, pending_.size() - rest.size());
  return text;
}

std::string StreamingDetokenizer::Flush() {
  if (pending_.empty()) return {};
  pending_.clear();
  return std::string(utf8::kReplacementCharacter);
}

}  // namespace lnpu::framework
