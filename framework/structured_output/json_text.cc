#include "framework/structured_output/json_text.h"

#include <utility>
#include <vector>

namespace lnpu::framework::structured_output {
namespace {

constexpr int kMaxExponentDigits = 2;  // 1e99 at most: always a finite double

ByteSet Continuation() { return ByteRange(0x80, 0xbf); }

Expr Digits(int min, int max) { return Repeat(Set(ByteRange('0', '9')), min, max); }

}  // namespace

Expr JsonStringCharacter(const ByteSet& excluded, bool escapes) {
  // Each alternative: its first byte, then the rest of the character.
  std::vector<std::pair<ByteSet, Expr>> alternatives;
  ByteSet ascii = ByteRange(0x20, 0x7f);
  ascii.reset('"');
  ascii.reset('\\');
  alternatives.emplace_back(ascii, Literal(""));
  if (escapes) {
    const ByteSet hex = ByteRange('0', '9') | ByteRange('a', 'f') | ByteRange('A', 'F');
    const ByteSet surrogate_lead = BytesOf("dD");
    alternatives.emplace_back(
        BytesOf("\\"),
        Choice({Set(BytesOf("\"\\/bfnrt")),
                Sequence({Literal("u"),
                          Choice({Sequence({Set(hex & ~surrogate_lead), Set(hex), Set(hex), Set(hex)}),
                                  Sequence({Set(surrogate_lead), Set(ByteRange('0', '7')), Set(hex),
                                            Set(hex)})})})}));
  }
  alternatives.emplace_back(ByteRange(0xc2, 0xdf), Set(Continuation()));
  alternatives.emplace_back(BytesOf("\xe0"),
                            Sequence({Set(ByteRange(0xa0, 0xbf)), Set(Continuation())}));
  alternatives.emplace_back(ByteRange(0xe1, 0xec) | ByteRange(0xee, 0xef),
                            Sequence({Set(Continuation()), Set(Continuation())}));
  alternatives.emplace_back(BytesOf("\xed"),
                            Sequence({Set(ByteRange(0x80, 0x9f)), Set(Continuation())}));
  alternatives.emplace_back(
      BytesOf("\xf0"),
      Sequence({Set(ByteRange(0x90, 0xbf)), Set(Continuation()), Set(Continuation())}));
  alternatives.emplace_back(
      ByteRange(0xf1, 0xf3),
      Sequence({Set(Continuation()), Set(Continuation()), Set(Continuation())}));
  alternatives.emplace_back(
      BytesOf("\xf4"),
      Sequence({Set(ByteRange(0x80, 0x8f)), Set(Continuation()), Set(Continuation())}));
  std::vector<Expr> choices;
  for (auto& [first, rest] : alternatives) {
    const ByteSet allowed = first & ~excluded;
    if (allowed.none()) continue;
    choices.push_back(Sequence({Set(allowed), std::move(rest)}));
  }
  return Choice(std::move(choices));
}

Expr JsonInteger() {
  return Sequence({Optional(Literal("-")),
                   Choice({Literal("0"), Sequence({Set(ByteRange('1', '9')),
                                                   Digits(0, kMaxIntegerDigits - 1)})})});
}

Expr JsonNumber() {
  return Sequence({JsonInteger(), Optional(Sequence({Literal("."), Digits(1, kMaxFractionDigits)})),
                   Optional(Sequence({Set(BytesOf("eE")), Optional(Set(BytesOf("+-"))),
                                      Digits(1, kMaxExponentDigits)}))});
}

}  // namespace lnpu::framework::structured_output
