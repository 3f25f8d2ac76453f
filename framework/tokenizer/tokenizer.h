// Text <-> token ids for a model's vocabulary: SentencePiece-style BPE
// (llama, stories260K, Gemma 2/3, Phi-3) and byte-level BPE (GPT-2, Llama 3,
// Qwen2, ...; also Gemma 4's character-level BPE), token for token as
// llama.cpp tokenizes and detokenizes.
//
// Immutable after Create; every method is const and may be called from any
// number of threads at once.
#ifndef FRAMEWORK_TOKENIZER_TOKENIZER_H_
#define FRAMEWORK_TOKENIZER_TOKENIZER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "framework/tokenizer/byte_level_bpe_encoder.h"
#include "framework/tokenizer/sentencepiece_encoder.h"
#include "framework/tokenizer/token_ids.h"
#include "base/vocabulary.h"

namespace lnpu::framework {

class StreamingDetokenizer;

// A piece of text to encode. Where `parse_special`, the spellings of the
// vocabulary's control and unknown tokens in `text` ("<|im_start|>",
// "</s>") stand for those tokens, as llama.cpp's parse_special does; else
// they are plain text. A chat template's own text is parsed; message
// content is not, so that a user cannot inject control tokens.
struct TextSegment {
  std::string text;
  bool parse_special = false;
};

class Tokenizer {
 public:
  // InvalidArgument, naming the field and what is wrong, unless: there are
  // tokens; token_types (and, for SentencePiece, scores, which must be
  // finite) have one entry per token; types are TokenType values; special
  // ids are -1 or a token id, and bos_id / eos_id are set when add_bos /
  // add_eos ask for them; byte tokens are spelled "<0xHH>"; SentencePiece
  // can fall back for every byte (a byte token for each, or unk_id);
  // byte-level BPE has a supported `pre`, well-formed merges, a token for
  // each printable ASCII byte character (a byte without one is dropped
  // where no merge covers it, as llama.cpp does), and normal tokens
  // spelled in that alphabet (non-ASCII characters outside it stand for
  // themselves; Gemma 4: <0xHH> byte tokens and text with U+2581 for
  // spaces).
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Create(
      Vocabulary vocabulary);

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // The tokens of `text`, preceded by bos_id when `add_bos`. Text that
  // spells a control or unknown token (e.g. "</s>", "<|im_start|>") is
  // encoded as plain text; user-defined (added) tokens are matched wherever
  // they are spelled, as llama.cpp and Hugging Face tokenizers do. Empty
  // text gives no tokens besides BOS. InvalidArgument, naming the byte
  // offset, when `text` is not well-formed UTF-8, when `add_bos` is asked
  // of a vocabulary without BOS, or for text over 512 MiB. Never appends
  // EOS (see Vocabulary::add_eos).
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool add_bos) const;

  // The tokens of the concatenated segments, as llama.cpp's tokenizer with
  // parse_special would give for the concatenation if only the segments
  // marked parse_special could spell control and unknown tokens:
  //  - special spellings (control and unknown tokens in parse_special
  //    segments, user-defined tokens in every segment; never across a
  //    segment boundary) become their ids: spelling by spelling, longest
  //    first (equal lengths: lower id first), each occurrence left to right
  //    that overlaps none taken before;
  //  - the text between two of them (joined across segment boundaries) is
  //    encoded as by Encode; for SentencePiece with add_space_prefix it
  //    gets a leading space at the start and after every special token;
  //  - Phi-3 vocabularies (SentencePiece with <|end|> and <|assistant|>):
  //    ASCII white space after a special token other than <unk>, <s> and
  //    <|endoftext|> is dropped (llama.cpp's rstrip attribute).
  // Errors as Encode (offsets are into the concatenation).
  absl::StatusOr<std::vector<int32_t>> EncodeSegments(
      absl::Span<const TextSegment> segments, bool add_bos) const;

  // The concatenated TokenBytes of `ids`, except that for SentencePiece
  // with add_space_prefix the first token after an optional leading BOS
  // loses one leading space (the one Encode prepends), so that
  // Decode(Encode(s)) == s. May be ill-formed UTF-8 when byte tokens are
  // cut off (StreamingDetokenizer repairs that).
  std::string Decode(absl::Span<const int32_t> ids) const;

  // The bytes token `id` stands for: normal tokens with U+2581 read as ' '
  // (SentencePiece, Gemma 4) or translated from the byte-level alphabet
  // (byte-level BPE); byte tokens as their byte; user-defined tokens as spelled;
  // unknown tokens as U+2585; control, unused and undefined tokens as
  // nothing. Ids outside [0, vocab_size()) give U+FFFD.
  std::string TokenBytes(int32_t id) const;

  // Whether `id` ends a generation: eos_id, and the control tokens that
  // end a turn (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>,
  // <|endoftext|>, <|eom_id|>, <EOT>) when the vocabulary has them.
  bool IsEndOfGeneration(int32_t id) const;

  int32_t bos_id() const { return vocabulary_.bos_id; }
  int32_t eos_id() const { return vocabulary_.eos_id; }
  int32_t vocab_size() const {
    return static_cast<int32_t>(vocabulary_.tokens.size());
  }
  const Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  friend class StreamingDetokenizer;

  // How far a decoded sequence has got, for the leading-space rule.
  struct DecodePosition {
    int tokens_seen = 0;  // saturates at 2
    bool first_is_bos = false;
  };
  // A position past the start: the leading-space rule no longer applies.
  static constexpr DecodePosition kMidText{2, false};

  explicit Tokenizer(Vocabulary vocabulary);

  struct SegmentView {
    std::string_view text;
    bool parse_special;
  };
  // EncodeSegments without copying the text.
  absl::StatusOr<std::vector<int32_t>> EncodeViews(
      absl::Span<const SegmentView> segments, bool add_bos) const;
  // A special spelling found in a segment.
  struct SpecialMatch {
    size_t offset;  // into the segment
    size_t length;
    int32_t id;
  };
  // The special spellings of `text` that become tokens (see
  // EncodeSegments), ordered by offset.
  std::vector<SpecialMatch> FindSpecials(std::string_view text,
                                         bool parse_special) const;
  // Appends the tokens of text between special tokens.
  void EncodeText(std::string_view text, bool after_special,
                  std::vector<int32_t>& ids) const;

  // TokenBytes(id), without a copy.
  std::string_view TokenBytesView(int32_t id) const;
  // TokenBytes(id) as the next token of the sequence at `position`, which
  // it advances.
  std::string_view NextPiece(int32_t id, DecodePosition& position) const;

  Vocabulary vocabulary_;
  TokenIds token_ids_;
  std::vector<std::string> token_bytes_;
  std::vector<int32_t> end_of_generation_ids_;  // sorted
  // Spellings of control, unknown and user-defined tokens (non-empty,
  // well-formed UTF-8) -> id; the highest id for a repeated spelling.
  TokenIds special_ids_;
  // The distinct lengths of those spellings, longest first, and the bytes
  // they start with: a position whose byte starts none is skipped at once.
  std::vector<size_t> special_lengths_;
  std::array<bool, 256> special_first_byte_{};
  // By id: white space after the token is dropped (rstrip). Empty for
  // vocabularies without such tokens.
  std::vector<bool> strips_space_after_;
  // Exactly one is set, by vocabulary_.type.
  std::optional<SentencePieceEncoder> sentencepiece_;
  std::optional<ByteLevelBpeEncoder> byte_level_bpe_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_TOKENIZER_H_
