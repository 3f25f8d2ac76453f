// Turns generated token ids into text one token at a time, in pieces that
// are always whole UTF-8: bytes of a character split across byte tokens are
// held until it completes, and ill-formed bytes become U+FFFD (one per
// maximal ill-formed subpart, as the Unicode standard recommends). For
// well-formed output, the concatenated pieces equal Tokenizer::Decode of
// all ids pushed, including its SentencePiece leading-space rule.
//
// Not thread-safe: one per stream. The Tokenizer must outlive it.
#ifndef FRAMEWORK_TOKENIZER_STREAMING_DETOKENIZER_H_
#define FRAMEWORK_TOKENIZER_STREAMING_DETOKENIZER_H_

#include <cstdint>
#include <string>

#include "framework/tokenizer/tokenizer.h"

namespace lnpu::framework {

class StreamingDetokenizer {
 public:
  enum class Start {
    // The ids start a text, as those Decode sees: a SentencePiece leading
    // space on the first token (after an optional BOS) is dropped.
    kStartOfText,
    // The ids continue text that came before (e.g. a completion of a
    // prompt): every token's bytes are kept, leading spaces included.
    kContinuation,
  };

  explicit StreamingDetokenizer(const Tokenizer& tokenizer,
                                Start start = Start::kStartOfText);

  // The text that `id` completes; empty while a character is incomplete.
  std::string Push(int32_t id);

  // Ends the stream: the held bytes of an incomplete character as one
  // U+FFFD (empty if none are held).
  std::string Flush();

 private:
  const Tokenizer* tokenizer_;
  Tokenizer::DecodePosition position_;
  std::string pending_;  // a proper prefix of a UTF-8 character
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_STREAMING_DETOKENIZER_H_
