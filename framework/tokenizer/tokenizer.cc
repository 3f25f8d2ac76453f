#include "framework/tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "framework/tokenizer/byte_level_alphabet.h"
#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

// What llama.cpp prints for an unknown token: U+2585 LOWER FIVE EIGHTHS
// BLOCK.
constexpr std::string_view kUnknownTokenText = "\xE2\x96\x85";

// Control tokens that end a turn, besides EOS (llama.cpp's EOG set).
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>",    "<|end|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>",
};

std::string ByteTokenText(uint8_t byte) {
  return absl::StrFormat("<0x%02X>", byte);
}

// The byte of a "<0xHH>" token text.
std::optional<uint8_t> ParseByteToken(std::string_view text) {
  if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') {
    return std::nullopt;
  }
  int value = 0;
  for (const char c : text.substr(3, 2)) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return static_cast<uint8_t>(value);
}

// A byte-level BPE token's text translated back to bytes. Some real
// vocabularies (Command-R) have tokens with non-ASCII characters outside the
// alphabet (U+200D): those stand for themselves.
absl::StatusOr<std::string> ByteLevelTokenBytes(std::string_view text,
                                                int32_t id) {
  std::string bytes;
  size_t offset = 0;
  while (offset < text.size()) {
    const utf8::DecodedChar decoded = utf8::DecodeChar(text.substr(offset));
    const bool valid = decoded.kind == utf8::DecodedChar::Kind::kValid;
    const std::optional<uint8_t> byte =
        valid ? ByteOfByteLevelChar(decoded.code_point) : std::nullopt;
    if (byte) {
      bytes += static_cast<char>(*byte);
    } else if (valid && decoded.code_point > 0x7F) {
      bytes.append(text.substr(offset, decoded.length));
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "normal token %d \"%s\" has a character outside the byte-level BPE "
          "alphabet at byte %d: byte-level BPE tokens must spell bytes as "
          "GPT-2's bytes_to_unicode does",
          id, absl::CHexEscape(std::string(text)), offset));
    }
    offset += decoded.length;
  }
  return bytes;
}

absl::Status ValidateSpecialId(std::string_view name, int32_t id,
                               size_t vocab_size) {
  if (id == -1 || (id >= 0 && static_cast<size_t>(id) < vocab_size)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      std::string(name), " is ", id, " but the vocabulary has ", vocab_size,
      " tokens: use a token id in [0, ", vocab_size, ") or -1 for none"));
}

absl::Status ValidateShape(const Vocabulary& v) {
  const size_t n = v.tokens.size();
  if (n == 0) {
    return absl::InvalidArgumentError(
        "the vocabulary has no tokens: fill Vocabulary::tokens");
  }
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the vocabulary has ", n, " tokens, more than int32 ids "
                     "can address"));
  }
  if (v.token_types.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the vocabulary has ", n, " tokens but ", v.token_types.size(),
        " token types: give one TokenType per token"));
  }
  const bool needs_scores = v.type == TokenizerType::kSentencePiece;
  if (v.scores.size() != n && (needs_scores || !v.scores.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the vocabulary has ", n, " tokens but ", v.scores.size(),
        " scores: give one score per token",
        needs_scores ? " (SentencePiece merges by score)" : " or none"));
  }
  for (size_t id = 0; id < v.scores.size(); ++id) {
    if (!std::isfinite(v.scores[id])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token ", id, " has the non-finite score ", v.scores[id],
          ": scores must be finite"));
    }
  }
  for (size_t id = 0; id < n; ++id) {
    const int32_t type = v.token_types[id];
    if (type < static_cast<int32_t>(TokenType::kUndefined) ||
        type > static_cast<int32_t>(TokenType::kByte)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token ", id, " has type ", type,
          ", which is no TokenType: use 0 (undefined) to 6 (byte)"));
    }
    if (type == static_cast<int32_t>(TokenType::kByte) &&
        !ParseByteToken(v.tokens[id])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "byte token ", id, " is spelled \"", absl::CHexEscape(v.tokens[id]),
          "\": byte tokens must be spelled <0xHH>"));
    }
  }
  for (const auto& [name, id] : {std::pair<std::string_view, int32_t>{
                                     "bos_id", v.bos_id},
                                 {"eos_id", v.eos_id},
                                 {"unk_id", v.unk_id},
                                 {"pad_id", v.pad_id}}) {
    LNPU_RETURN_IF_ERROR(ValidateSpecialId(name, id, n));
  }
  if (v.add_bos && v.bos_id < 0) {
    return absl::InvalidArgumentError(
        "add_bos is set but bos_id is -1: set bos_id or clear add_bos");
  }
  if (v.add_eos && v.eos_id < 0) {
    return absl::InvalidArgumentError(
        "add_eos is set but eos_id is -1: set eos_id or clear add_eos");
  }
  return absl::OkStatus();
}

}  // namespace

Tokenizer::Tokenizer(Vocabulary vocabulary)
    : vocabulary_(std::move(vocabulary)) {}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(
    Vocabulary vocabulary) {
  LNPU_RETURN_IF_ERROR(ValidateShape(vocabulary));
  auto tokenizer = absl::WrapUnique(new Tokenizer(std::move(vocabulary)));
  const Vocabulary& v = tokenizer->vocabulary_;
  const bool sentencepiece = v.type == TokenizerType::kSentencePiece;
  // Normal tokens spell spaces as U+2581 (SentencePiece, Gemma 4's BPE)
  // or bytes in the byte-level alphabet.
  absl::StatusOr<PreTokenizer> pre = PreTokenizerNamed(v.pre);
  const bool byte_alphabet =
      !sentencepiece && (!pre.ok() || UsesByteLevelAlphabet(*pre));
  const int32_t n = static_cast<int32_t>(v.tokens.size());

  tokenizer->token_ids_.reserve(n);
  tokenizer->token_bytes_.resize(n);
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = v.tokens[id];
    tokenizer->token_ids_.insert_or_assign(text, id);
    std::string& bytes = tokenizer->token_bytes_[id];
    switch (static_cast<TokenType>(v.token_types[id])) {
      case TokenType::kNormal:
        if (!byte_alphabet) {
          bytes = absl::StrReplaceAll(
              text, {{absl::string_view(kSentencePieceSpace.data(),
                                        kSentencePieceSpace.size()),
                      " "}});
        } else {
          LNPU_ASSIGN_OR_RETURN(std::string decoded, ByteLevelTokenBytes(text, id));
          bytes = std::move(decoded);
        }
        break;
      case TokenType::kByte:
        bytes = std::string(1, static_cast<char>(*ParseByteToken(text)));
        break;
      case TokenType::kUserDefined:
        bytes = text;
        break;
      case TokenType::kUnknown:
        bytes = kUnknownTokenText;
        break;
      case TokenType::kControl:
      case TokenType::kUnused:
      case TokenType::kUndefined:
        break;
    }
    if (v.token_types[id] == static_cast<int32_t>(TokenType::kControl) &&
        std::find(std::begin(kEndOfTurnTexts), std::end(kEndOfTurnTexts),
                  text) != std::end(kEndOfTurnTexts)) {
      tokenizer->end_of_generation_ids_.push_back(id);
    }
  }
  for (int32_t id = 0; id < n; ++id) {
    const TokenType type = static_cast<TokenType>(v.token_types[id]);
    const std::string& text = v.tokens[id];
    if ((type != TokenType::kControl && type != TokenType::kUnknown &&
         type != TokenType::kUserDefined) ||
        text.empty() || !utf8::Validate(text).ok()) {
      continue;
    }
    tokenizer->special_ids_.insert_or_assign(text, id);
    tokenizer->special_first_byte_[static_cast<uint8_t>(text[0])] = true;
    tokenizer->special_lengths_.push_back(text.size());
  }
  // llama.cpp's token attributes for Phi-3 (taken from its tokenizer.json):
  // white space after a special token is dropped, except after <unk>, <s>
  // and <|endoftext|>. llama.cpp recognises Phi-3 by its model name; here
  // its SentencePiece vocabulary with <|end|> and <|assistant|> tokens.
  const TokenIds& specials = tokenizer->special_ids_;
  if (sentencepiece && specials.contains("<|end|>") &&
      specials.contains("<|assistant|>")) {
    tokenizer->strips_space_after_.assign(n, false);
    for (const auto& [text, id] : specials) {
      tokenizer->strips_space_after_[id] =
          text != "<unk>" && text != "<s>" && text != "<|endoftext|>";
    }
  }
  std::vector<size_t>& lengths = tokenizer->special_lengths_;
  std::sort(lengths.begin(), lengths.end(), std::greater<>());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  if (v.eos_id >= 0) tokenizer->end_of_generation_ids_.push_back(v.eos_id);
  std::vector<int32_t>& eog = tokenizer->end_of_generation_ids_;
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

  if (sentencepiece) {
    std::array<int32_t, 256> byte_fallback;
    for (int byte = 0; byte < 256; ++byte) {
      const auto token =
          tokenizer->token_ids_.find(ByteTokenText(static_cast<uint8_t>(byte)));
      if (token != tokenizer->token_ids_.end()) {
        byte_fallback[byte] = token->second;
      } else if (v.unk_id >= 0) {
        byte_fallback[byte] = v.unk_id;
      } else {
        return absl::InvalidArgumentError(absl::StrFormat(
            "the SentencePiece vocabulary has no byte token <0x%02X> and no "
            "unk_id, so text with characters outside the vocabulary cannot "
            "be encoded: add the 256 byte tokens or set unk_id",
            byte));
      }
    }
    tokenizer->sentencepiece_.emplace(tokenizer->token_ids_, v.scores,
                                      byte_fallback);
  } else {
    LNPU_ASSIGN_OR_RETURN(ByteLevelBpeEncoder encoder,
                          ByteLevelBpeEncoder::Create(v, tokenizer->token_ids_));
    tokenizer->byte_level_bpe_.emplace(std::move(encoder));
  }
  return tokenizer;
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                       bool add_bos) const {
  const SegmentView segment{text, /*parse_special=*/false};
  return EncodeViews({&segment, 1}, add_bos);
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodeSegments(
    absl::Span<const TextSegment> segments, bool add_bos) const {
  std::vector<SegmentView> views;
  views.reserve(segments.size());
  for (const TextSegment& segment : segments) {
    views.push_back({segment.text, segment.parse_special});
  }
  return EncodeViews(views, add_bos);
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodeViews(
    absl::Span<const SegmentView> segments, bool add_bos) const {
  // Encoders index bytes with int (SentencePiece escaping triples spaces).
  constexpr size_t kMaxTextBytes = std::numeric_limits<int32_t>::max() / 4;
  size_t total = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (absl::Status status = utf8::Validate(segments[i].text); !status.ok()) {
      if (segments.size() == 1) return status;
      return absl::InvalidArgumentError(
          absl::StrCat("text segment ", i, ": ", status.message()));
    }
    total += segments[i].text.size();
  }
  if (total > kMaxTextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the text has ", total, " bytes, more than the ", kMaxTextBytes,
        " one Encode call takes: encode it in parts"));
  }
  std::vector<int32_t> ids;
  if (add_bos) {
    if (vocabulary_.bos_id < 0) {
      return absl::InvalidArgumentError(
          "add_bos is set but this vocabulary has no BOS token: encode "
          "without BOS");
    }
    ids.push_back(vocabulary_.bos_id);
  }
  // Text since the last special token; the text before a special token is
  // encoded on its own, as llama.cpp encodes each fragment.
  std::string text;
  bool after_special = true;  // the start counts as after a special token
  // After a special token that strips the white space after it, until text
  // other than ASCII white space (C isspace, as llama.cpp) follows.
  bool strip_space = false;
  auto append_text = [&](std::string_view piece) {
    if (strip_space) {
      piece.remove_prefix(std::min(piece.find_first_not_of(" \t\n\v\f\r"), piece.size()));
      strip_space = piece.empty();
    }
    text.append(piece);
  };
  auto flush_text = [&] {
    if (text.empty()) return;
    EncodeText(text, after_special, ids);
    text.clear();
    after_special = false;
  };
  for (const SegmentView& segment : segments) {
    const std::string_view segment_text = segment.text;
    size_t offset = 0;
    for (const SpecialMatch& match :
         FindSpecials(segment_text, segment.parse_special)) {
      append_text(segment_text.substr(offset, match.offset - offset));
      flush_text();
      ids.push_back(match.id);
      after_special = true;
      strip_space = !strips_space_after_.empty() && strips_space_after_[match.id];
      offset = match.offset + match.length;
    }
    append_text(segment_text.substr(offset));
  }
  flush_text();
  return ids;
}

std::vector<Tokenizer::SpecialMatch> Tokenizer::FindSpecials(
    std::string_view text, bool parse_special) const {
  std::vector<SpecialMatch> candidates;
  for (size_t offset = 0; offset < text.size(); ++offset) {
    if (!special_first_byte_[static_cast<uint8_t>(text[offset])]) continue;
    for (const size_t length : special_lengths_) {
      if (length > text.size() - offset) continue;
      const auto special = special_ids_.find(text.substr(offset, length));
      if (special == special_ids_.end()) continue;
      const int32_t id = special->second;
      if (parse_special || vocabulary_.token_types[id] ==
                               static_cast<int32_t>(TokenType::kUserDefined)) {
        candidates.push_back({offset, length, id});
      }
    }
  }
  if (candidates.size() < 2) return candidates;
  // llama.cpp's order: spelling by spelling, longest first, each one's
  // occurrences left to right, skipping those that overlap a match taken.
  std::sort(candidates.begin(), candidates.end(),
            [](const SpecialMatch& a, const SpecialMatch& b) {
              if (a.length != b.length) return a.length > b.length;
              if (a.id != b.id) return a.id < b.id;
              return a.offset < b.offset;
            });
  std::vector<bool> taken(text.size(), false);
  std::vector<SpecialMatch> matches;
  for (const SpecialMatch& candidate : candidates) {
    const auto begin = taken.begin() + static_cast<ptrdiff_t>(candidate.offset);
    const auto end = begin + static_cast<ptrdiff_t>(candidate.length);
    if (std::find(begin, end, true) != end) continue;
    std::fill(begin, end, true);
    matches.push_back(candidate);
  }
  std::sort(matches.begin(), matches.end(),
            [](const SpecialMatch& a, const SpecialMatch& b) {
              return a.offset < b.offset;
            });
  return matches;
}

void Tokenizer::EncodeText(std::string_view text, bool after_special,
                           std::vector<int32_t>& ids) const {
  if (sentencepiece_) {
    sentencepiece_->Encode(text, vocabulary_.add_space_prefix && after_special,
                           ids);
  } else {
    byte_level_bpe_->Encode(text, ids);
  }
}

std::string_view Tokenizer::TokenBytesView(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return utf8::kReplacementCharacter;
  return token_bytes_[id];
}

std::string Tokenizer::TokenBytes(int32_t id) const {
  return std::string(TokenBytesView(id));
}

std::string_view Tokenizer::NextPiece(int32_t id,
                                      DecodePosition& position) const {
  std::string_view piece = TokenBytesView(id);
  const bool is_bos = vocabulary_.bos_id >= 0 && id == vocabulary_.bos_id;
  const bool first_text_token =
      position.tokens_seen == 0 ? !is_bos
                                : position.tokens_seen == 1 &&
                                      position.first_is_bos;
  if (position.tokens_seen == 0) position.first_is_bos = is_bos;
  if (position.tokens_seen < 2) ++position.tokens_seen;
  if (first_text_token && sentencepiece_ && vocabulary_.add_space_prefix &&
      piece.starts_with(' ')) {
    piece.remove_prefix(1);
  }
  return piece;
}

std::string Tokenizer::Decode(absl::Span<const int32_t> ids) const {
  std::string text;
  DecodePosition position;
  for (const int32_t id : ids) text += NextPiece(id, position);
  return text;
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return std::binary_search(end_of_generation_ids_.begin(),
                            end_of_generation_ids_.end(), id);
}

}  // namespace lnpu::framework
