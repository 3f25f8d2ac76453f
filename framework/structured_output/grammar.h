// A context-free grammar over bytes, the form every constraint of
// structured output (JSON Schema, "any JSON object", tool calls) is
// compiled to before a GrammarRecognizer runs it.
//
// Grammars are built from Expr trees (literals, byte sets, sequences,
// choices, bounded or unbounded repetition, references to named rules, so
// that rules may be recursive) with a GrammarBuilder, which lowers them
// into flat rules: each rule is a list of alternatives, each alternative a
// sequence of elements (one byte from a set, or a rule reference).
// Working on bytes, not characters, is what lets a token end in the middle
// of a UTF-8 character or span several grammar elements.
//
// A Grammar is immutable and thread-safe; a GrammarBuilder is not.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_H_

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace lnpu::framework::structured_output {

using ByteSet = std::bitset<256>;

// The bytes lo..hi (inclusive).
ByteSet ByteRange(uint8_t lo, uint8_t hi);
// The bytes of `bytes`.
ByteSet BytesOf(std::string_view bytes);

// An expression of the grammar language. Build with the functions below.
struct Expr {
  enum class Kind {
    kLiteral,   // the bytes `literal` (empty: matches the empty string)
    kSet,       // one byte of `set`
    kSequence,  // `items` one after another
    kChoice,    // one of `items`
    kRepeat,    // items[0], min..max times (max < 0: unbounded)
    kRule,      // the named rule `rule`
  };
  Kind kind = Kind::kLiteral;
  std::string literal;
  ByteSet set;
  std::vector<Expr> items;
  int min = 0;
  int max = 0;
  int rule = -1;
};

Expr Literal(std::string_view bytes);
Expr Set(const ByteSet& set);
Expr Sequence(std::vector<Expr> items);
Expr Choice(std::vector<Expr> items);
Expr Repeat(Expr item, int min, int max);  // max < 0: unbounded
Expr Optional(Expr item);
Expr Star(Expr item);
Expr RuleRef(int rule);

class Grammar {
 public:
  // One element of an alternative. An alternative is a run of elements
  // ended by kEnd.
  struct Element {
    enum Kind : uint8_t { kEnd, kSet, kRule };
    Kind kind;
    int32_t index;  // kSet: into sets(); kRule: the rule id
  };

  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<ByteSet>& sets() const { return sets_; }
  // Per rule, the indices into elements() where its alternatives start.
  const std::vector<std::vector<int32_t>>& rules() const { return rules_; }
  const std::string& rule_name(int rule) const { return rule_names_[rule]; }
  int root() const { return root_; }

  // The grammar in a GBNF-like notation, one rule per line (for
  // diagnostics and tests).
  std::string ToString() const;

 private:
  friend class GrammarBuilder;
  std::vector<Element> elements_;
  std::vector<ByteSet> sets_;
  std::vector<std::vector<int32_t>> rules_;
  std::vector<std::string> rule_names_;
  int root_ = 0;
};

class GrammarBuilder {
 public:
  // Grammars larger than this many elements are refused (ResourceExhausted)
  // so that a schema with huge repetition bounds cannot exhaust memory.
  static constexpr size_t kMaxElements = 1 << 21;

  // Declares a rule (defined later, so rules can refer to each other and
  // to themselves). Names are for diagnostics; they need not be unique.
  int AddRule(std::string name);
  // Sets the body of a declared rule. A top-level choice becomes the
  // rule's alternatives.
  void DefineRule(int rule, const Expr& body);
  // A new rule with `body`: AddRule + DefineRule.
  int DefineNewRule(std::string name, const Expr& body);

  // The grammar whose start rule is `root`. InvalidArgument naming the
  // rule when a rule was declared but not defined, or when a rule can
  // reach itself without consuming a byte (left recursion, or repetition
  // of something that matches the empty string); ResourceExhausted when
  // the grammar has more than kMaxElements elements.
  absl::StatusOr<Grammar> Build(int root) &&;

 private:
  // Appends the elements of `expr` to the alternative being built.
  void Lower(const Expr& expr, std::vector<Grammar::Element>& out);
  // A rule reference for `expr`, wrapping it in a new rule unless it is one.
  Grammar::Element AsElement(const Expr& expr, const std::string& name);
  int32_t InternSet(const ByteSet& set);

  Grammar grammar_;
  std::vector<bool> defined_;
  absl::flat_hash_map<std::string, int32_t> set_ids_;  // ByteSet bits -> id
  bool too_large_ = false;
};

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_H_
