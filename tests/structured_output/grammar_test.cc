// GrammarBuilder and GrammarRecognizer on hand-built grammars: what they
// accept and reject byte by byte, completeness, and the builder's errors.
#include "framework/structured_output/grammar.h"

#include <memory>
#include <string>

#include "framework/structured_output/grammar_recognizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/structured_output/grammar_matches.h"

namespace lnpu::framework::structured_output {
namespace {

using ::testing::HasSubstr;
using testing::Matches;

std::shared_ptr<const Grammar> Build(GrammarBuilder builder, int root) {
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  EXPECT_TRUE(grammar.ok()) << grammar.status();
  return std::make_shared<const Grammar>(*std::move(grammar));
}

// Whether `text` is a prefix of some sentence.
bool IsPrefix(std::shared_ptr<const Grammar> grammar, const std::string& text) {
  GrammarRecognizer recognizer(std::move(grammar));
  return recognizer.Advance(text).ok();
}

TEST(GrammarTest, SequencesChoicesAndSets) {
  GrammarBuilder builder;
  const int root = builder.DefineNewRule(
      "root", Sequence({Literal("a"), Choice({Literal("bc"), Set(ByteRange('0', '9'))}),
                        Literal("!")}));
  auto grammar = Build(std::move(builder), root);
  EXPECT_TRUE(Matches(grammar, "abc!"));
  EXPECT_TRUE(Matches(grammar, "a7!"));
  EXPECT_FALSE(Matches(grammar, "ab!"));
  EXPECT_FALSE(Matches(grammar, "abc"));  // a prefix, not complete
  EXPECT_TRUE(IsPrefix(grammar, "abc"));
  EXPECT_FALSE(IsPrefix(grammar, "ax"));
  EXPECT_FALSE(Matches(grammar, "abc!!"));
}

TEST(GrammarTest, BoundedAndUnboundedRepetition) {
  GrammarBuilder builder;
  const int root = builder.DefineNewRule(
      "root", Sequence({Repeat(Literal("ab"), 2, 4), Star(Literal("x")), Literal(";")}));
  auto grammar = Build(std::move(builder), root);
  EXPECT_FALSE(Matches(grammar, "ab;"));
  EXPECT_TRUE(Matches(grammar, "abab;"));
  EXPECT_TRUE(Matches(grammar, "abababab;"));
  EXPECT_FALSE(Matches(grammar, "ababababab;"));
  EXPECT_TRUE(Matches(grammar, "ababxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx;"));
}

TEST(GrammarTest, RecursiveRulesNest) {
  // parens ::= '(' parens ')' parens | ''
  GrammarBuilder builder;
  const int parens = builder.AddRule("parens");
  builder.DefineRule(parens, Choice({Sequence({Literal("("), RuleRef(parens), Literal(")"),
                                               RuleRef(parens)}),
                                     Literal("")}));
  const int root = builder.DefineNewRule("root", Sequence({RuleRef(parens), Literal(".")}));
  auto grammar = Build(std::move(builder), root);
  EXPECT_TRUE(Matches(grammar, "."));
  EXPECT_TRUE(Matches(grammar, "(()(()))()."));
  EXPECT_FALSE(Matches(grammar, "(()."));
  EXPECT_FALSE(Matches(grammar, "())."));
  EXPECT_TRUE(Matches(grammar, std::string(500, '(') + std::string(500, ')') + "."));
}

TEST(GrammarTest, RightRecursionRunsInFewStates) {
  // A long run of a repeated item must not grow the parse stacks: the
  // recognizer revisits the same state.
  GrammarBuilder builder;
  const int root = builder.DefineNewRule(
      "root", Sequence({Literal("\""), Star(Set(ByteRange('a', 'z'))), Literal("\"")}));
  GrammarRecognizer recognizer(Build(std::move(builder), root));
  ASSERT_TRUE(recognizer.Advance("\"").ok());
  const size_t states = recognizer.state_count();
  ASSERT_TRUE(recognizer.Advance(std::string(10000, 'q')).ok());
  EXPECT_LE(recognizer.state_count(), states + 1);
  EXPECT_FALSE(recognizer.IsAccepting());
  ASSERT_TRUE(recognizer.Advance("\"").ok());
  EXPECT_TRUE(recognizer.IsAccepting());
  EXPECT_TRUE(recognizer.IsTerminal(recognizer.state()));
}

TEST(GrammarTest, RejectedInputLeavesTheStateAndNamesTheByte) {
  GrammarBuilder builder;
  const int root = builder.DefineNewRule("root", Literal("hello"));
  GrammarRecognizer recognizer(Build(std::move(builder), root));
  const absl::Status status = recognizer.Advance("helpo");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("byte 3 (0x70)"));
  EXPECT_TRUE(recognizer.Advance("hello").ok());  // nothing was consumed
  EXPECT_TRUE(recognizer.IsAccepting());
}

TEST(GrammarTest, CompactKeepsTheCurrentState) {
  GrammarBuilder builder;
  const int value = builder.AddRule("value");
  builder.DefineRule(value, Choice({Sequence({Literal("["), RuleRef(value), Literal("]")}),
                                    Set(ByteRange('0', '9'))}));
  GrammarRecognizer recognizer(Build(std::move(builder), value));
  ASSERT_TRUE(recognizer.Advance("[[[7").ok());
  recognizer.Compact();
  EXPECT_LE(recognizer.state_count(), 1u);
  EXPECT_FALSE(recognizer.Advance("]]]]").ok());
  EXPECT_TRUE(recognizer.Advance("]]]").ok());
  EXPECT_TRUE(recognizer.IsAccepting());
}

TEST(GrammarTest, AmbiguousGrammarsKeepEveryParse) {
  // root ::= 'a'* 'a' 'b' | 'a' 'a'* 'c': both parses stay alive.
  GrammarBuilder builder;
  const int root = builder.DefineNewRule(
      "root", Choice({Sequence({Star(Literal("a")), Literal("ab")}),
                      Sequence({Literal("a"), Star(Literal("a")), Literal("c")})}));
  auto grammar = Build(std::move(builder), root);
  EXPECT_TRUE(Matches(grammar, "aaab"));
  EXPECT_TRUE(Matches(grammar, "aaac"));
  EXPECT_FALSE(Matches(grammar, "b"));
  EXPECT_FALSE(Matches(grammar, "c"));
}

TEST(GrammarTest, LeftRecursionIsRefused) {
  GrammarBuilder builder;
  const int list = builder.AddRule("list");
  builder.DefineRule(list, Choice({Sequence({RuleRef(list), Literal(",x")}), Literal("x")}));
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(list);
  EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(grammar.status().message(), HasSubstr("'list'"));
}

TEST(GrammarTest, RepeatingSomethingEmptyIsRefused) {
  GrammarBuilder builder;
  const int root = builder.DefineNewRule("root", Star(Optional(Literal("a"))));
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(grammar.status().message(), HasSubstr("without consuming input"));
}

TEST(GrammarTest, UndefinedRulesAreRefused) {
  GrammarBuilder builder;
  const int missing = builder.AddRule("missing");
  const int root = builder.DefineNewRule("root", RuleRef(missing));
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(grammar.status().message(), HasSubstr("'missing'"));
}

TEST(GrammarTest, HugeRepetitionIsRefused) {
  GrammarBuilder builder;
  const int root = builder.DefineNewRule("root", Repeat(Literal("ab"), 0, 1 << 22));
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  EXPECT_EQ(grammar.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(GrammarTest, EmptyRangeMatchesNothing) {
  GrammarBuilder builder;
  const int root = builder.DefineNewRule("root", Choice({Repeat(Literal("a"), 3, 2), Literal("b")}));
  auto grammar = Build(std::move(builder), root);
  EXPECT_TRUE(Matches(grammar, "b"));
  EXPECT_FALSE(IsPrefix(grammar, "a"));
}

TEST(GrammarTest, ToStringShowsTheRules) {
  GrammarBuilder builder;
  const int root = builder.DefineNewRule("root", Sequence({Literal("a"), Optional(Literal("b"))}));
  auto grammar = Build(std::move(builder), root);
  const std::string text = grammar->ToString();
  EXPECT_THAT(text, HasSubstr("root#"));
  EXPECT_THAT(text, HasSubstr("'a'"));
  EXPECT_THAT(text, HasSubstr("'b'"));
}

}  // namespace
}  // namespace lnpu::framework::structured_output
