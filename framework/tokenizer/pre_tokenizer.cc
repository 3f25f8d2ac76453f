#include "framework/tokenizer/pre_tokenizer.h"

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "framework/tokenizer/unicode_classes.h"
#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

// The text as code points with their classes. Queries past the end answer
// "no such character", which is how the regexes see the end of the text.
class CodePoints {
 public:
  explicit CodePoints(std::string_view text) {
    size_t offset = 0;
    while (offset < text.size()) {
      const utf8::DecodedChar decoded = utf8::DecodeChar(text.substr(offset));
      assert(decoded.kind == utf8::DecodedChar::Kind::kValid);
      chars_.push_back({decoded.code_point, ClassOf(decoded.code_point),
                        IsWhiteSpace(decoded.code_point)});
      offsets_.push_back(offset);
      offset += decoded.length;
    }
    offsets_.push_back(offset);
  }

  size_t size() const { return chars_.size(); }
  // Byte offset of code point `i` (size() gives the text's end).
  size_t offset(size_t i) const { return offsets_[i]; }

  bool Is(size_t i, char32_t code_point) const {
    return i < size() && chars_[i].code_point == code_point;
  }
  bool IsNewline(size_t i) const { return Is(i, '\r') || Is(i, '\n'); }
  bool IsLetter(size_t i) const {
    return i < size() && chars_[i].unicode_class == UnicodeClass::kLetter;
  }
  bool IsNumber(size_t i) const {
    return i < size() && chars_[i].unicode_class == UnicodeClass::kNumber;
  }
  bool IsSpace(size_t i) const { return i < size() && chars_[i].white_space; }
  // [^\s\p{L}\p{N}]
  bool IsOther(size_t i) const {
    return i < size() && !chars_[i].white_space &&
           chars_[i].unicode_class == UnicodeClass::kOther;
  }
  // The character at `i` (0 past the end).
  char32_t At(size_t i) const { return i < size() ? chars_[i].code_point : 0; }
  // At(i), with ASCII letters in lower case.
  char32_t LowerAscii(size_t i) const {
    const char32_t c = At(i);
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
  }

 private:
  struct Char {
    char32_t code_point;
    UnicodeClass unicode_class;
    bool white_space;
  };
  std::vector<Char> chars_;
  std::vector<size_t> offsets_;
};

// Length of 's|'t|'re|'ve|'m|'ll|'d at `pos` (0 if none).
size_t MatchContraction(const CodePoints& cps, size_t pos, bool ignore_case) {
  if (!cps.Is(pos, '\'')) return 0;
  auto at = [&](size_t i) {
    return ignore_case ? cps.LowerAscii(i) : cps.At(i);
  };
  const char32_t first = at(pos + 1);
  if (first == 's' || first == 't' || first == 'm' || first == 'd') return 2;
  const char32_t second = at(pos + 2);
  if ((first == 'r' && second == 'e') || (first == 'v' && second == 'e') ||
      (first == 'l' && second == 'l')) {
    return 3;
  }
  return 0;
}

// \s+(?!\S)|\s+ at `pos`, which is white space: a run followed by a
// non-space gives up its last space to the next word.
size_t EndOfSpaceRun(const CodePoints& cps, size_t pos) {
  assert(cps.IsSpace(pos));
  size_t end = pos;
  while (cps.IsSpace(end)) ++end;
  return end - pos > 1 && end < cps.size() ? end - 1 : end;
}

size_t NextGpt2WordEnd(const CodePoints& cps, size_t pos) {
  if (size_t length = MatchContraction(cps, pos, false)) return pos + length;
  const size_t start = cps.Is(pos, ' ') ? pos + 1 : pos;
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
  for (bool (CodePoints::*in_class)(size_t) const :
       {&CodePoints::IsLetter, &CodePoints::IsNumber, &CodePoints::IsOther}) {
    if ((cps.*in_class)(start)) {
      size_t end = start + 1;
      while ((cps.*in_class)(end)) ++end;
      return end;
    }
  }
  return EndOfSpaceRun(cps, pos);
}

size_t NextLlama3WordEnd(const CodePoints& cps, size_t pos,
                         size_t max_digits) {
  if (size_t length = MatchContraction(cps, pos, true)) return pos + length;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!cps.IsNewline(pos) && !cps.IsNumber(pos) &&
      (cps.IsLetter(pos) || cps.IsLetter(pos + 1))) {
    size_t end = pos + 1;
    while (cps.IsLetter(end)) ++end;
    return end;
  }
  // \p{N}{1,max_digits}
  if (cps.IsNumber(pos)) {
    size_t end = pos + 1;
    while (end - pos < max_digits && cps.IsNumber(end)) ++end;
    return end;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const size_t start = cps.Is(pos, ' ') ? pos + 1 : pos;
  if (cps.IsOther(start)) {
    size_t end = start + 1;
    while (cps.IsOther(end)) ++end;
    while (cps.IsNewline(end)) ++end;
    return end;
  }
  // \s*[\r\n]+ : up to the last newline of the space run.
  size_t newline_end = 0;
  for (size_t i = pos; cps.IsSpace(i); ++i) {
    if (cps.IsNewline(i)) newline_end = i + 1;
  }
  if (newline_end != 0) return newline_end;
  return EndOfSpaceRun(cps, pos);
}

}  // namespace

absl::StatusOr<PreTokenizer> PreTokenizerNamed(std::string_view name) {
  if (name == "gpt2") return PreTokenizer::kGpt2;
  if (name == "llama-bpe" || name == "llama3" || name == "llama-v3") {
    return PreTokenizer::kLlama3;
  }
  if (name == "qwen2") return PreTokenizer::kQwen2;
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported byte-level BPE pre-tokenizer \"", std::string(name),
      "\" (GGUF tokenizer.ggml.pre): supported are \"gpt2\", \"llama-bpe\" "
      "(also \"llama3\", \"llama-v3\") and \"qwen2\""));
}

std::vector<std::string_view> SplitWords(PreTokenizer pre_tokenizer,
                                         std::string_view text) {
  const CodePoints cps(text);
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < cps.size()) {
    size_t end = 0;
    switch (pre_tokenizer) {
      case PreTokenizer::kGpt2:
        end = NextGpt2WordEnd(cps, pos);
        break;
      case PreTokenizer::kLlama3:
        end = NextLlama3WordEnd(cps, pos, 3);
        break;
      case PreTokenizer::kQwen2:
        end = NextLlama3WordEnd(cps, pos, 1);
        break;
    }
    words.push_back(
        text.substr(cps.offset(pos), cps.offset(end) - cps.offset(pos)));
    pos = end;
  }
  return words;
}

}  // namespace lnpu::framework
