#include "framework/structured_output/json_string_pattern.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "framework/structured_output/json_text.h"

namespace lnpu::framework::structured_output {
namespace {

// Quantifier bounds above this are refused (the grammar unrolls them).
constexpr int kMaxBound = 100000;

// One character of the ASCII set `chars` (decoded values), as JSON spells
// it: '"' and '\\' and \b \f \n \r \t escaped; other controls left out.
Expr AsciiCharacter(const ByteSet& chars) {
  ByteSet plain = chars & ByteRange(0x20, 0x7f);
  plain.reset('"');
  plain.reset('\\');
  std::vector<Expr> choices;
  if (plain.any()) choices.push_back(Set(plain));
  static constexpr std::pair<char, const char*> kEscapes[] = {
      {'"', "\\\""}, {'\\', "\\\\"}, {'\b', "\\b"}, {'\f', "\\f"},
      {'\n', "\\n"}, {'\r', "\\r"},  {'\t', "\\t"}};
  for (const auto& [c, spelling] : kEscapes) {
    if (chars.test(static_cast<uint8_t>(c))) choices.push_back(Literal(spelling));
  }
  return Choice(std::move(choices));
}

ByteSet WordCharacters() {
  ByteSet set = ByteRange('a', 'z') | ByteRange('A', 'Z') | ByteRange('0', '9');
  set.set('_');
  return set;
}

class PatternParser {
 public:
  explicit PatternParser(std::string_view pattern) : pattern_(pattern) {}

  absl::StatusOr<Expr> Parse() {
    const bool anchored_start = !pattern_.empty() && pattern_[0] == '^';
    if (anchored_start) ++pos_;
    size_t end = pattern_.size();
    bool anchored_end = false;
    if (end > pos_ && pattern_[end - 1] == '$' && (end < 2 || pattern_[end - 2] != '\\')) {
      anchored_end = true;
      pattern_ = pattern_.substr(0, end - 1);
    }
    int alternatives = 0;
    absl::StatusOr<Expr> body = ParseAlternation(&alternatives);
    if (!body.ok()) return body;
    if (pos_ != pattern_.size()) return Unsupported("an unmatched ')'");
    if ((anchored_start || anchored_end) && alternatives > 1) {
      return Unsupported("'|' at the top level together with '^' or '$' (group the alternatives)");
    }
    std::vector<Expr> parts;
    const Expr any = Star(JsonStringCharacter({}, true));
    if (!anchored_start) parts.push_back(any);
    parts.push_back(*std::move(body));
    if (!anchored_end) parts.push_back(any);
    return Sequence(std::move(parts));
  }

 private:
  absl::Status Unsupported(std::string_view what) const {
    return absl::UnimplementedError(absl::StrCat(
        "pattern \"", std::string(pattern_), "\": ", std::string(what), " at offset ", pos_,
        " is not supported by the structured-output grammar (supported: literals, '.', [classes], "
        "\\d \\w \\s, groups, '|', ? * + {m,n}, '^' and '$' at the ends)"));
  }

  bool AtEnd() const { return pos_ >= pattern_.size(); }

  absl::StatusOr<Expr> ParseAlternation(int* count) {
    std::vector<Expr> alternatives;
    while (true) {
      absl::StatusOr<Expr> concat = ParseConcat();
      if (!concat.ok()) return concat;
      alternatives.push_back(*std::move(concat));
      if (AtEnd() || pattern_[pos_] != '|') break;
      ++pos_;
    }
    *count = static_cast<int>(alternatives.size());
    if (alternatives.size() == 1) return std::move(alternatives[0]);
    return Choice(std::move(alternatives));
  }

  absl::StatusOr<Expr> ParseConcat() {
    std::vector<Expr> items;
    while (!AtEnd() && pattern_[pos_] != '|' && pattern_[pos_] != ')') {
      absl::StatusOr<Expr> atom = ParseAtom();
      if (!atom.ok()) return atom;
      absl::StatusOr<Expr> quantified = ParseQuantifier(*std::move(atom));
      if (!quantified.ok()) return quantified;
      items.push_back(*std::move(quantified));
    }
    return Sequence(std::move(items));
  }

  absl::StatusOr<int> ParseNumber() {
    const size_t start = pos_;
    int value = 0;
    while (!AtEnd() && pattern_[pos_] >= '0' && pattern_[pos_] <= '9') {
      value = value * 10 + (pattern_[pos_] - '0');
      if (value > kMaxBound) return Unsupported(absl::StrCat("a bound over ", kMaxBound));
      ++pos_;
    }
    if (pos_ == start) return Unsupported("a '{' that does not start a {m,n} bound");
    return value;
  }

  absl::StatusOr<Expr> ParseQuantifier(Expr atom) {
    if (AtEnd()) return atom;
    int min = 0, max = 0;
    switch (pattern_[pos_]) {
      case '?': min = 0; max = 1; ++pos_; break;
      case '*': min = 0; max = -1; ++pos_; break;
      case '+': min = 1; max = -1; ++pos_; break;
      case '{': {
        ++pos_;
        absl::StatusOr<int> low = ParseNumber();
        if (!low.ok()) return low.status();
        min = max = *low;
        if (!AtEnd() && pattern_[pos_] == ',') {
          ++pos_;
          max = -1;
          if (!AtEnd() && pattern_[pos_] != '}') {
            absl::StatusOr<int> high = ParseNumber();
            if (!high.ok()) return high.status();
            max = *high;
          }
        }
        if (AtEnd() || pattern_[pos_] != '}') return Unsupported("an unterminated {m,n}");
        ++pos_;
        if (max >= 0 && max < min) return Unsupported("a {m,n} with n < m");
        break;
      }
      default:
        return atom;
    }
    if (!AtEnd() && (pattern_[pos_] == '?' || pattern_[pos_] == '+')) {
      return Unsupported("a lazy or possessive quantifier");
    }
    return Repeat(std::move(atom), min, max);
  }

  // The ASCII characters an escape (after its backslash) stands for.
  absl::StatusOr<ByteSet> ParseEscapeSet() {
    if (AtEnd()) return Unsupported("a trailing backslash");
    const char c = pattern_[pos_++];
    ByteSet set;
    switch (c) {
      case 'd': return ByteRange('0', '9');
      case 'w': return WordCharacters();
      case 's': return BytesOf(" \t\n\r\f\v");
      case 'n': set.set('\n'); return set;
      case 't': set.set('\t'); return set;
      case 'r': set.set('\r'); return set;
      case 'f': set.set('\f'); return set;
      default: break;
    }
    if (static_cast<unsigned char>(c) < 0x80 && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
        !(c >= '0' && c <= '9')) {
      set.set(static_cast<uint8_t>(c));
      return set;
    }
    --pos_;
    return Unsupported(absl::StrCat("the escape \\", std::string(1, c)));
  }

  absl::StatusOr<Expr> ParseClass() {
    ++pos_;  // '['
    bool negated = false;
    if (!AtEnd() && pattern_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    ByteSet set;
    bool first = true;
    while (!AtEnd() && (pattern_[pos_] != ']' || first)) {
      first = false;
      ByteSet item;
      int low = -1;
      if (pattern_[pos_] == '\\') {
        ++pos_;
        absl::StatusOr<ByteSet> escaped = ParseEscapeSet();
        if (!escaped.ok()) return escaped.status();
        item = *escaped;
        if (item.count() == 1) {
          for (int b = 0; b < 128; ++b) {
            if (item.test(b)) low = b;
          }
        }
      } else if (static_cast<unsigned char>(pattern_[pos_]) >= 0x80) {
        return Unsupported("a non-ASCII character in a class");
      } else {
        low = static_cast<unsigned char>(pattern_[pos_++]);
        item.set(low);
      }
      if (low >= 0 && pos_ + 1 < pattern_.size() && pattern_[pos_] == '-' && pattern_[pos_ + 1] != ']') {
        ++pos_;
        int high;
        if (pattern_[pos_] == '\\') {
          ++pos_;
          absl::StatusOr<ByteSet> escaped = ParseEscapeSet();
          if (!escaped.ok()) return escaped.status();
          if (escaped->count() != 1) return Unsupported("a class range ending in a class escape");
          high = -1;
          for (int b = 0; b < 128; ++b) {
            if (escaped->test(b)) high = b;
          }
        } else if (static_cast<unsigned char>(pattern_[pos_]) >= 0x80) {
          return Unsupported("a non-ASCII character in a class");
        } else {
          high = static_cast<unsigned char>(pattern_[pos_++]);
        }
        if (high < low) return Unsupported("a class range whose end is before its start");
        item = ByteRange(static_cast<uint8_t>(low), static_cast<uint8_t>(high));
      }
      set |= item;
    }
    if (AtEnd()) return Unsupported("an unterminated '['");
    ++pos_;  // ']'
    if (negated) return JsonStringCharacter(set, false);
    return AsciiCharacter(set);
  }

  absl::StatusOr<Expr> ParseAtom() {
    const char c = pattern_[pos_];
    switch (c) {
      case '(': {
        ++pos_;
        if (!AtEnd() && pattern_[pos_] == '?') {
          if (pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] == ':') {
            pos_ += 2;
          } else {
            return Unsupported("a lookaround or named group");
          }
        }
        int count = 0;
        absl::StatusOr<Expr> inner = ParseAlternation(&count);
        if (!inner.ok()) return inner;
        if (AtEnd() || pattern_[pos_] != ')') return Unsupported("an unterminated '('");
        ++pos_;
        return inner;
      }
      case '[':
        return ParseClass();
      case '.':
        ++pos_;
        return JsonStringCharacter({}, false);
      case '\\': {
        ++pos_;
        absl::StatusOr<ByteSet> escaped = ParseEscapeSet();
        if (!escaped.ok()) return escaped.status();
        return AsciiCharacter(*escaped);
      }
      case '^':
      case '$':
        return Unsupported(absl::StrCat("'", std::string(1, c), "' away from the pattern's ends"));
      case '*':
      case '+':
      case '?':
      case '{':
        return Unsupported("a quantifier with nothing to repeat");
      default:
        break;
    }
    if (static_cast<unsigned char>(c) < 0x80) {
      ++pos_;
      ByteSet set;
      set.set(static_cast<uint8_t>(c));
      return AsciiCharacter(set);
    }
    // A UTF-8 character: its lead byte and continuation bytes, literally.
    const size_t start = pos_++;
    while (!AtEnd() && (static_cast<unsigned char>(pattern_[pos_]) & 0xc0) == 0x80) ++pos_;
    return Literal(pattern_.substr(start, pos_ - start));
  }

  std::string_view pattern_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<Expr> JsonStringPattern(std::string_view pattern) {
  return PatternParser(pattern).Parse();
}

}  // namespace lnpu::framework::structured_output
