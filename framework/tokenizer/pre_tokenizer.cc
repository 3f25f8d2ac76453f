#include "framework/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/tokenizer/unicode_classes.h"
#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {
namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
};

bool InRanges(char32_t c, std::initializer_list<CodePointRange> ranges) {
  return std::any_of(ranges.begin(), ranges.end(), [c](CodePointRange r) {
    return c >= r.first && c <= r.last;
  });
}

// deepseek-llm's letter class, as llama.cpp spells it out: cased letters of
// the Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, Glagolitic,
// Coptic, Deseret, Osage, Old Hungarian, Warang Citi and Adlam scripts.
constexpr CodePointRange kDeepSeekLetters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},
    {0x00C0, 0x00D6},   {0x00D8, 0x00F6},   {0x00F8, 0x01BA},
    {0x01BC, 0x01BF},   {0x01C4, 0x0293},   {0x0295, 0x02AF},
    {0x0370, 0x0373},   {0x0376, 0x0377},   {0x037B, 0x037D},
    {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},
    {0x038C, 0x038C},   {0x038E, 0x03A1},   {0x03A3, 0x03F5},
    {0x03F7, 0x0481},   {0x048A, 0x052F},   {0x0531, 0x0556},
    {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},
    {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},
    {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},
    {0x1FB6, 0x1FBC},   {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},
    {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},
    {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},
    {0x2126, 0x2126},   {0x2128, 0x2128},   {0x212A, 0x212D},
    {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},
    {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},
    {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F},
    {0x104B0, 0x104D3}, {0x104D8, 0x104FB}, {0x10C80, 0x10CB2},
    {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

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
  bool IsSpace(size_t i) const { return i < size() && chars_[i].white_space; }
  bool IsLetter(size_t i) const { return HasClass(i, UnicodeClass::kLetter); }
  bool IsNumber(size_t i) const { return HasClass(i, UnicodeClass::kNumber); }
  bool IsMark(size_t i) const { return HasClass(i, UnicodeClass::kMark); }
  bool IsPunctuation(size_t i) const {
    return HasClass(i, UnicodeClass::kPunctuation);
  }
  // llama.cpp's ASCII table for \p{S} leaves out '~'.
  bool IsSymbol(size_t i) const {
    return HasClass(i, UnicodeClass::kSymbol) && !Is(i, '~');
  }
  bool IsLetterOrMark(size_t i) const { return IsLetter(i) || IsMark(i); }
  // [^\s\p{L}\p{N}]
  bool IsOther(size_t i) const {
    return i < size() && !IsSpace(i) && !IsLetter(i) && !IsNumber(i);
  }
  // [^\s\p{L}\p{M}\p{N}]
  bool IsOtherThanMark(size_t i) const { return IsOther(i) && !IsMark(i); }
  // [^\r\n\p{L}\p{N}]: what may stand before a word.
  bool IsWordPrefix(size_t i) const {
    return i < size() && !IsNewline(i) && !IsLetter(i) && !IsNumber(i);
  }
  // Tekken's case classes: letters other than a-z, letters other than A-Z.
  bool IsUpperOrCaseless(size_t i) const {
    return IsLetter(i) && !(At(i) >= 'a' && At(i) <= 'z');
  }
  bool IsLowerOrCaseless(size_t i) const {
    return IsLetter(i) && !(At(i) >= 'A' && At(i) <= 'Z');
  }
  bool IsAsciiDigit(size_t i) const { return At(i) >= '0' && At(i) <= '9'; }
  bool IsAsciiLetter(size_t i) const {
    return (At(i) >= 'a' && At(i) <= 'z') || (At(i) >= 'A' && At(i) <= 'Z');
  }
  bool IsAsciiPunctuation(size_t i) const {
    const char32_t c = At(i);
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
           (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
  }
  // Code point `i` as llama.cpp's wide-character regexes see it: non-ASCII
  // white space is U+000B (0 past the end).
  char32_t Wide(size_t i) const {
    return IsSpace(i) && At(i) > 0x7F ? 0x0B : At(i);
  }
  bool WideIn(size_t i, std::initializer_list<CodePointRange> ranges) const {
    return i < size() && InRanges(Wide(i), ranges);
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
  // White space is never in a class: llama.cpp collapses it first.
  bool HasClass(size_t i, UnicodeClass unicode_class) const {
    return i < size() && !chars_[i].white_space &&
           chars_[i].unicode_class == unicode_class;
  }

  std::vector<Char> chars_;
  std::vector<size_t> offsets_;
};

using Predicate = bool (CodePoints::*)(size_t) const;

// The end of the run of `in_class` characters from `pos` (pos if none).
size_t RunEnd(const CodePoints& cps, size_t pos, Predicate in_class) {
  while ((cps.*in_class)(pos)) ++pos;
  return pos;
}

// The end of at most `max` `in_class` characters from `pos`.
size_t RunEnd(const CodePoints& cps, size_t pos, Predicate in_class,
              size_t max) {
  size_t end = pos;
  while (end - pos < max && (cps.*in_class)(end)) ++end;
  return end;
}

// \s?X+ at `pos`: the end, or pos for no match.
size_t OptionalSpaceThenRun(const CodePoints& cps, size_t pos,
                            Predicate in_class) {
  if (cps.IsSpace(pos) && (cps.*in_class)(pos + 1)) {
    return RunEnd(cps, pos + 1, in_class);
  }
  return RunEnd(cps, pos, in_class);
}

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
  const size_t end = RunEnd(cps, pos, &CodePoints::IsSpace);
  return end - pos > 1 && end < cps.size() ? end - 1 : end;
}

// \s*[\r\n]+|\s+(?!\S)|\s+ at `pos`, which is white space: up to the last
// newline of the run if it has one.
size_t EndOfSpaceRunOrNewlines(const CodePoints& cps, size_t pos) {
  size_t newline_end = 0;
  for (size_t i = pos; cps.IsSpace(i); ++i) {
    if (cps.IsNewline(i)) newline_end = i + 1;
  }
  return newline_end != 0 ? newline_end : EndOfSpaceRun(cps, pos);
}

// ' ?X+' followed by `trailing`* at `pos`, or pos.
size_t OptionalSpaceRunTrailed(const CodePoints& cps, size_t pos,
                               Predicate in_class, Predicate trailing) {
  const size_t start = cps.Is(pos, ' ') ? pos + 1 : pos;
  if (!(cps.*in_class)(start)) return pos;
  return RunEnd(cps, RunEnd(cps, start, in_class), trailing);
}

// [prefix]?[in_word]+ at `pos`, or pos: the optional prefix character is
// taken when a word character follows it.
size_t PrefixedWordEnd(const CodePoints& cps, size_t pos, Predicate prefix,
                       Predicate in_word) {
  if ((cps.*in_word)(pos) || ((cps.*prefix)(pos) && (cps.*in_word)(pos + 1))) {
    return RunEnd(cps, pos + 1, in_word);
  }
  return pos;
}

// The custom GPT-2 matcher of llama.cpp (the regex of kGpt2, and a single
// white-space character where it matches nothing). Always matches.
size_t Gpt2WordEnd(const CodePoints& cps, size_t pos) {
  if (size_t length = MatchContraction(cps, pos, false)) return pos + length;
  const size_t start = cps.Is(pos, ' ') ? pos + 1 : pos;
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
  for (Predicate in_class :
       {&CodePoints::IsLetter, &CodePoints::IsNumber, &CodePoints::IsOther}) {
    if ((cps.*in_class)(start)) return RunEnd(cps, start + 1, in_class);
  }
  return EndOfSpaceRun(cps, pos);
}

// kLlama3 / kQwen2 / kQwen35. Always matches.
size_t Llama3WordEnd(const CodePoints& cps, size_t pos, size_t max_digits,
                     bool marks_in_words) {
  if (size_t length = MatchContraction(cps, pos, true)) return pos + length;
  const Predicate in_word =
      marks_in_words ? &CodePoints::IsLetterOrMark : &CodePoints::IsLetter;
  if (size_t end = PrefixedWordEnd(cps, pos, &CodePoints::IsWordPrefix,
                                   in_word);
      end != pos) {
    return end;
  }
  if (cps.IsNumber(pos)) {
    return RunEnd(cps, pos, &CodePoints::IsNumber, max_digits);
  }
  if (size_t end = OptionalSpaceRunTrailed(
          cps, pos,
          marks_in_words ? &CodePoints::IsOtherThanMark : &CodePoints::IsOther,
          &CodePoints::IsNewline);
      end != pos) {
    return end;
  }
  return EndOfSpaceRunOrNewlines(cps, pos);
}

// [^\r\n\p{L}\p{N}]?UPPER*LOWER+ at `start` (no prefix), or npos: UPPER*
// gives back characters one by one until LOWER+ matches.
constexpr size_t kNoMatch = static_cast<size_t>(-1);
size_t UpperThenLowerEnd(const CodePoints& cps, size_t start) {
  const size_t upper_end = RunEnd(cps, start, &CodePoints::IsUpperOrCaseless);
  for (size_t lower = upper_end + 1; lower-- > start;) {
    if (cps.IsLowerOrCaseless(lower)) {
      return RunEnd(cps, lower + 1, &CodePoints::IsLowerOrCaseless);
    }
  }
  return kNoMatch;
}

// UPPER+LOWER* at `start`, or npos.
size_t UpperRunThenLowerEnd(const CodePoints& cps, size_t start) {
  const size_t upper_end = RunEnd(cps, start, &CodePoints::IsUpperOrCaseless);
  if (upper_end == start) return kNoMatch;
  return RunEnd(cps, upper_end, &CodePoints::IsLowerOrCaseless);
}

// kTekken / kGpt4o. Always matches.
size_t CasedWordEnd(const CodePoints& cps, size_t pos, size_t max_digits,
                    bool contractions) {
  for (size_t (*word)(const CodePoints&, size_t) :
       {&UpperThenLowerEnd, &UpperRunThenLowerEnd}) {
    size_t end = cps.IsWordPrefix(pos) ? word(cps, pos + 1) : kNoMatch;
    if (end == kNoMatch) end = word(cps, pos);
    if (end != kNoMatch) {
      return contractions ? end + MatchContraction(cps, end, true) : end;
    }
  }
  if (cps.IsNumber(pos)) {
    return RunEnd(cps, pos, &CodePoints::IsNumber, max_digits);
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
  const size_t start = cps.Is(pos, ' ') ? pos + 1 : pos;
  if (cps.IsOther(start)) {
    size_t end = RunEnd(cps, start, &CodePoints::IsOther);
    while (cps.IsNewline(end) || cps.Is(end, '/')) ++end;
    return end;
  }
  return EndOfSpaceRunOrNewlines(cps, pos);
}

// The third regex of deepseek-v3 (see PreTokenizer::kDeepSeekV3), or pos.
size_t DeepSeekV3WordEnd(const CodePoints& cps, size_t pos) {
  if (cps.IsAsciiPunctuation(pos) && cps.IsAsciiLetter(pos + 1)) {
    return RunEnd(cps, pos + 1, &CodePoints::IsAsciiLetter);
  }
  auto word_prefix = [&](size_t i) {
    return i < cps.size() && !cps.IsNewline(i) && !cps.IsLetter(i) &&
           !cps.IsPunctuation(i) && !cps.IsSymbol(i);
  };
  if (cps.IsLetterOrMark(pos) ||
      (word_prefix(pos) && cps.IsLetterOrMark(pos + 1))) {
    return RunEnd(cps, pos + 1, &CodePoints::IsLetterOrMark);
  }
  auto punctuation_or_symbol = [&](size_t i) {
    return cps.IsPunctuation(i) || cps.IsSymbol(i);
  };
  const size_t start = cps.Is(pos, ' ') ? pos + 1 : pos;
  if (punctuation_or_symbol(start)) {
    size_t end = start + 1;
    while (punctuation_or_symbol(end)) ++end;
    return RunEnd(cps, end, &CodePoints::IsNewline);
  }
  return cps.IsSpace(pos) ? EndOfSpaceRunOrNewlines(cps, pos) : pos;
}

// The end of the run from `pos` of characters in `ranges` as llama.cpp's
// wide-character regexes see them (CodePoints::Wide).
size_t WideRunEnd(const CodePoints& cps, size_t pos,
                  std::initializer_list<CodePointRange> ranges) {
  while (cps.WideIn(pos, ranges)) ++pos;
  return pos;
}

// One regex of a pre-tokenizer.
enum class Stage {
  kGpt2,
  kLlama3,
  kQwen2,
  kQwen35,
  kTekken,
  kGpt4o,
  kNumber,               // \p{N}
  kNumbers,              // \p{N}+
  kNumbersUpTo3,         // \p{N}{1,3}
  kThreeAsciiDigits,     // [0-9][0-9][0-9]
  kFalconPunctuation,    // [\p{P}\$\+<=>\^~\|`]+
  kNewline,              // [\r\n]
  kSpaceLetters,         // \s?\p{L}+
  kSpacePunctuation,     // \s?\p{P}+
  kHanHangul,            // [一-龥ࠀ-一가-퟿]+
  kHanKana,              // [一-龥぀-ゟ゠-ヿ]+
  kDeepSeekLlmLetters,   // \s?[kDeepSeekLetters]+
  kDeepSeekLlmPunctuation,  // \s?[!-/:-~！-／：-～‘-‟　-。]+
  kTrailingSpaces,       // \s+$
  kDeepSeekV3Words,
  kNewlineRuns,          // [^\n]+|[\n]+
};

// The end of `stage`'s match at `pos`, or pos for none.
size_t MatchEnd(Stage stage, const CodePoints& cps, size_t pos) {
  switch (stage) {
    case Stage::kGpt2:
      return Gpt2WordEnd(cps, pos);
    case Stage::kLlama3:
      return Llama3WordEnd(cps, pos, 3, false);
    case Stage::kQwen2:
      return Llama3WordEnd(cps, pos, 1, false);
    case Stage::kQwen35:
      return Llama3WordEnd(cps, pos, 1, true);
    case Stage::kTekken:
      return CasedWordEnd(cps, pos, 1, false);
    case Stage::kGpt4o:
      return CasedWordEnd(cps, pos, 3, true);
    case Stage::kNumber:
      return RunEnd(cps, pos, &CodePoints::IsNumber, 1);
    case Stage::kNumbers:
      return RunEnd(cps, pos, &CodePoints::IsNumber);
    case Stage::kNumbersUpTo3:
      return RunEnd(cps, pos, &CodePoints::IsNumber, 3);
    case Stage::kThreeAsciiDigits:
      return RunEnd(cps, pos, &CodePoints::IsAsciiDigit, 3) == pos + 3
                 ? pos + 3
                 : pos;
    case Stage::kFalconPunctuation: {
      size_t end = pos;
      while (cps.IsPunctuation(end) ||
             (end < cps.size() &&
              std::u32string_view(U"$+<=>^~|`").find(cps.At(end)) !=
                  std::u32string_view::npos)) {
        ++end;
      }
      return end;
    }
    case Stage::kNewline:
      return cps.IsNewline(pos) ? pos + 1 : pos;
    case Stage::kSpaceLetters:
      return OptionalSpaceThenRun(cps, pos, &CodePoints::IsLetter);
    case Stage::kSpacePunctuation:
      return OptionalSpaceThenRun(cps, pos, &CodePoints::IsPunctuation);
    case Stage::kHanHangul:
      return WideRunEnd(cps, pos,
                        {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}});
    case Stage::kHanKana:
      return WideRunEnd(cps, pos,
                        {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}});
    case Stage::kDeepSeekLlmLetters:
    case Stage::kDeepSeekLlmPunctuation: {
      auto in_class = [&](size_t i) {
        if (i >= cps.size()) return false;
        const char32_t c = cps.Wide(i);
        if (stage == Stage::kDeepSeekLlmPunctuation) {
          return InRanges(c, {{0x0021, 0x002F}, {0x003A, 0x007E},
                              {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
                              {0x2018, 0x201F}, {0x3000, 0x3002}});
        }
        return std::any_of(
            std::begin(kDeepSeekLetters), std::end(kDeepSeekLetters),
            [c](CodePointRange r) { return c >= r.first && c <= r.last; });
      };
      size_t start = cps.IsSpace(pos) && in_class(pos + 1) ? pos + 1 : pos;
      while (in_class(start)) ++start;
      return start;
    }
    case Stage::kTrailingSpaces: {
      const size_t end = RunEnd(cps, pos, &CodePoints::IsSpace);
      return end == cps.size() ? end : pos;
    }
    case Stage::kDeepSeekV3Words:
      return DeepSeekV3WordEnd(cps, pos);
    case Stage::kNewlineRuns: {
      const bool newline = cps.Is(pos, '\n');
      size_t end = pos + 1;
      while (end < cps.size() && cps.Is(end, '\n') == newline) ++end;
      return end;
    }
  }
  return pos;
}

// Splits each of `words` into the matches of `stage` and the text between
// them, as llama.cpp's unicode_regex_split does for one regex.
std::vector<std::string_view> ApplyStage(
    Stage stage, const std::vector<std::string_view>& words) {
  std::vector<std::string_view> out;
  for (const std::string_view word : words) {
    const CodePoints cps(word);
    auto piece = [&](size_t from, size_t to) {
      out.push_back(
          word.substr(cps.offset(from), cps.offset(to) - cps.offset(from)));
    };
    size_t unmatched_from = 0;
    for (size_t pos = 0; pos < cps.size();) {
      const size_t end = MatchEnd(stage, cps, pos);
      if (end == pos) {
        ++pos;
        continue;
      }
      if (unmatched_from < pos) piece(unmatched_from, pos);
      piece(pos, end);
      pos = unmatched_from = end;
    }
    if (unmatched_from < cps.size()) piece(unmatched_from, cps.size());
  }
  return out;
}

std::vector<Stage> StagesOf(PreTokenizer pre_tokenizer) {
  switch (pre_tokenizer) {
    case PreTokenizer::kGpt2:
      return {Stage::kGpt2};
    case PreTokenizer::kStarCoder:
      return {Stage::kNumber, Stage::kGpt2};
    case PreTokenizer::kFalcon:
      return {Stage::kFalconPunctuation, Stage::kGpt2,
              Stage::kThreeAsciiDigits};
    case PreTokenizer::kLlama3:
      return {Stage::kLlama3};
    case PreTokenizer::kQwen2:
      return {Stage::kQwen2};
    case PreTokenizer::kQwen35:
      return {Stage::kQwen35};
    case PreTokenizer::kDeepSeekLlm:
      return {Stage::kNewline, Stage::kDeepSeekLlmLetters,
              Stage::kDeepSeekLlmPunctuation, Stage::kTrailingSpaces,
              Stage::kHanHangul, Stage::kNumbers};
    case PreTokenizer::kDeepSeekCoder:
      return {Stage::kNewline, Stage::kSpaceLetters, Stage::kSpacePunctuation,
              Stage::kHanHangul, Stage::kNumber};
    case PreTokenizer::kDeepSeekV3:
      return {Stage::kNumbersUpTo3, Stage::kHanKana, Stage::kDeepSeekV3Words};
    case PreTokenizer::kTekken:
      return {Stage::kTekken};
    case PreTokenizer::kGpt4o:
      return {Stage::kGpt4o};
    case PreTokenizer::kGemma4:
      return {Stage::kNewlineRuns};
  }
  return {};
}

struct NamedPreTokenizer {
  std::string_view name;
  PreTokenizer pre_tokenizer;
};

// llama.cpp's tokenizer.ggml.pre names for the pre-tokenizers here.
constexpr NamedPreTokenizer kNames[] = {
    {"gpt2", PreTokenizer::kGpt2},
    {"gpt-2", PreTokenizer::kGpt2},
    {"phi-2", PreTokenizer::kGpt2},
    {"mpt", PreTokenizer::kGpt2},
    {"olmo", PreTokenizer::kGpt2},
    {"starcoder", PreTokenizer::kStarCoder},
    {"refact", PreTokenizer::kStarCoder},
    {"command-r", PreTokenizer::kStarCoder},
    {"smollm", PreTokenizer::kStarCoder},
    {"codeshell", PreTokenizer::kStarCoder},
    {"exaone", PreTokenizer::kStarCoder},
    {"falcon", PreTokenizer::kFalcon},
    {"llama-bpe", PreTokenizer::kLlama3},
    {"llama3", PreTokenizer::kLlama3},
    {"llama-v3", PreTokenizer::kLlama3},
    {"qwen2", PreTokenizer::kQwen2},
    {"deepseek-r1-qwen", PreTokenizer::kQwen2},
    {"stablelm2", PreTokenizer::kQwen2},
    {"megrez", PreTokenizer::kQwen2},
    {"qwen35", PreTokenizer::kQwen35},
    {"deepseek-llm", PreTokenizer::kDeepSeekLlm},
    {"deepseek-coder", PreTokenizer::kDeepSeekCoder},
    {"deepseek-v3", PreTokenizer::kDeepSeekV3},
    {"tekken", PreTokenizer::kTekken},
    {"gpt-4o", PreTokenizer::kGpt4o},
    {"llama4", PreTokenizer::kGpt4o},
    {"gemma4", PreTokenizer::kGemma4},
};

}  // namespace

absl::StatusOr<PreTokenizer> PreTokenizerNamed(std::string_view name) {
  for (const NamedPreTokenizer& named : kNames) {
    if (named.name == name) return named.pre_tokenizer;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported byte-level BPE pre-tokenizer \"", std::string(name),
      "\" (GGUF tokenizer.ggml.pre): supported are ",
      absl::StrJoin(kNames, ", ",
                    [](std::string* out, const NamedPreTokenizer& named) {
                      absl::StrAppend(out, "\"",
                                      absl::string_view(named.name.data(),
                                                        named.name.size()),
                                      "\"");
                    })));
}

bool WholeWordTokensFirst(PreTokenizer pre_tokenizer) {
  return pre_tokenizer == PreTokenizer::kLlama3 ||
         pre_tokenizer == PreTokenizer::kTekken;
}

bool UsesByteLevelAlphabet(PreTokenizer pre_tokenizer) {
  return pre_tokenizer != PreTokenizer::kGemma4;
}

std::vector<std::string_view> SplitWords(PreTokenizer pre_tokenizer,
                                         std::string_view text) {
  std::vector<std::string_view> words;
  if (!text.empty()) words.push_back(text);
  for (const Stage stage : StagesOf(pre_tokenizer)) {
    words = ApplyStage(stage, words);
  }
  return words;
}

}  // namespace lnpu::framework
