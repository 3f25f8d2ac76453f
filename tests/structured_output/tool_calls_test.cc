// Tool calls: the grammar that forces Qwen (<tool_call>) and Llama 3 JSON
// calls, walked randomly on real vocabularies and parsed back, with the
// arguments validated against each tool's parameters; the parser on
// hand-written replies.
#include "framework/structured_output/tool_calls.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "framework/structured_output/grammar_recognizer.h"
#include "framework/structured_output/token_trie.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/structured_output/grammar_matches.h"
#include "nlohmann/json.hpp"
#include "tests/structured_output/json_schema_validator.h"
#include "tests/structured_output/random_walk.h"
#include "tests/tokenizer/gguf_vocabulary.h"

namespace lnpu::framework::structured_output {
namespace {

using ::testing::HasSubstr;
using testing::Matches;

const std::vector<ToolDefinition>& Tools() {
  static const auto* const tools = new std::vector<ToolDefinition>{
      {"get_weather",
       R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
            "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city"], "additionalProperties": false})"},
      {"add", R"({"type": "object", "properties": {
                    "a": {"type": "integer", "minimum": -1000, "maximum": 1000},
                    "b": {"type": "number", "minimum": 0}},
                  "required": ["a", "b"], "additionalProperties": false})"},
  };
  return *tools;
}

const ToolDefinition* FindTool(const std::string& name) {
  for (const ToolDefinition& tool : Tools()) {
    if (tool.name == name) return &tool;
  }
  return nullptr;
}

TEST(ToolCallsTest, HermesGrammarAcceptsTheTemplateShape) {
  std::shared_ptr<const Grammar> grammar = ToolCallGrammar(ToolCallFormat::kHermes, Tools()).value();
  EXPECT_TRUE(Matches(grammar,
                      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n"
                      "</tool_call>"));
  EXPECT_TRUE(Matches(grammar,
                      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\":1,\"b\":2}}\n"
                      "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                      "{\"city\": \"Oslo\"}}\n</tool_call>"));
  EXPECT_FALSE(Matches(grammar, "Sure!"));
  EXPECT_FALSE(Matches(grammar,
                       "<tool_call>\n{\"name\": \"mul\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(Matches(grammar,
                       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>"));
  // The arguments' bounds hold.
  EXPECT_FALSE(Matches(grammar,
                       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1001, "
                       "\"b\": 2}}\n</tool_call>"));
  EXPECT_FALSE(Matches(grammar,
                       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, "
                       "\"b\": -0.5}}\n</tool_call>"));
}

TEST(ToolCallsTest, ForcedFunctionAndLlama3Shape) {
  std::shared_ptr<const Grammar> forced =
      ToolCallGrammar(ToolCallFormat::kLlama3Json, Tools(), {.forced_name = "get_weather"}).value();
  EXPECT_TRUE(Matches(forced, R"({"name": "get_weather", "parameters": {"city": "Rome"}})"));
  EXPECT_FALSE(Matches(forced, R"({"name": "add", "parameters": {"a": 1, "b": 2}})"));
  EXPECT_FALSE(Matches(forced, R"({"name": "get_weather", "arguments": {"city": "Rome"}})"));
}

TEST(ToolCallsTest, GrammarErrors) {
  EXPECT_EQ(ToolCallGrammar(ToolCallFormat::kHermes, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status missing =
      ToolCallGrammar(ToolCallFormat::kHermes, Tools(), {.forced_name = "mul"}).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("\"mul\""));
  std::vector<ToolDefinition> twice = {Tools()[0], Tools()[0]};
  EXPECT_THAT(ToolCallGrammar(ToolCallFormat::kHermes, twice).status().message(),
              HasSubstr("defined twice"));
  std::vector<ToolDefinition> bad = {{"f", R"({"type": "integer", "multipleOf": 2})"}};
  absl::Status unsupported = ToolCallGrammar(ToolCallFormat::kHermes, bad).status();
  EXPECT_EQ(unsupported.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(unsupported.message(), HasSubstr("tool \"f\""));
  EXPECT_EQ(ToolCallGrammar(ToolCallFormat::kHermes, Tools(), {.max_calls = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ToolCallsTest, AutoHermesGrammarAllowsTextThenCalls) {
  std::shared_ptr<const Grammar> grammar =
      ToolCallGrammar(ToolCallFormat::kHermes, Tools(), {.allow_text = true}).value();
  const std::string call =
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>";
  EXPECT_TRUE(Matches(grammar, ""));
  EXPECT_TRUE(Matches(grammar, "Sure! <b>bold</b> <tool <tool_cal"));
  EXPECT_TRUE(Matches(grammar, "<<tool_call<tool_call_"));
  EXPECT_TRUE(Matches(grammar, call));
  EXPECT_TRUE(Matches(grammar, "<think>\n\n</think>\n\n" + call + "\n" + call));
  // Once the tag is written, a valid call must follow, and nothing else.
  EXPECT_FALSE(Matches(grammar, "Text <tool_call> more text"));
  EXPECT_FALSE(
      Matches(grammar, "<<tool_call>\n{\"name\": \"mul\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(Matches(
      grammar, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>"));
  EXPECT_FALSE(Matches(grammar, call + " Done."));
  EXPECT_FALSE(Matches(grammar, "<tool_call>\n{\"name\": \"add\""));
  // parallel_tool_calls false: one call.
  std::shared_ptr<const Grammar> single =
      ToolCallGrammar(ToolCallFormat::kHermes, Tools(), {.allow_text = true, .max_calls = 1})
          .value();
  EXPECT_TRUE(Matches(single, "Hi " + call));
  EXPECT_FALSE(Matches(single, call + "\n" + call));
}

TEST(ToolCallsTest, AutoLlama3GrammarIsACallOrTextNotStartingWithABrace) {
  std::shared_ptr<const Grammar> grammar =
      ToolCallGrammar(ToolCallFormat::kLlama3Json, Tools(), {.allow_text = true}).value();
  EXPECT_TRUE(Matches(grammar, ""));
  EXPECT_TRUE(Matches(grammar, "It is sunny. {\"json\": true}\n"));
  EXPECT_TRUE(Matches(grammar, R"({"name": "add", "parameters": {"a": 4, "b": 5}})"));
  EXPECT_FALSE(Matches(grammar, R"({"answer": 42})"));
  EXPECT_FALSE(Matches(grammar, R"({"name": "add", "parameters": {"a": 4}})"));
  EXPECT_FALSE(Matches(grammar, " text"));
}

// Pushes `text` to a parser in pieces of `step` bytes; the pieces put
// together as ParseToolCalls does.
ParsedReply ParseInSteps(ToolCallFormat format, const std::string& text, size_t step) {
  ToolCallParser parser(format);
  std::vector<ReplyPiece> pieces;
  for (size_t pos = 0; pos < text.size(); pos += step) {
    const size_t before = pieces.size();
    parser.Push(std::string_view(text).substr(pos, step), pieces);
    for (size_t i = before; i < pieces.size(); ++i) {
      // What is passed on is never a piece of the tags.
      EXPECT_THAT(pieces[i].text, ::testing::Not(HasSubstr("tool_call>")));
      EXPECT_THAT(pieces[i].text, ::testing::Not(HasSubstr("<tool")));
    }
  }
  parser.Finish(pieces);
  EXPECT_TRUE(parser.status().ok()) << parser.status();
  ParsedReply reply;
  for (const ReplyPiece& piece : pieces) {
    if (piece.kind == ReplyPiece::Kind::kContent) reply.content += piece.text;
    if (piece.kind == ReplyPiece::Kind::kCallStart) {
      EXPECT_EQ(piece.call, static_cast<int>(reply.calls.size()));
      reply.calls.push_back({piece.text, ""});
    }
    if (piece.kind == ReplyPiece::Kind::kArguments) {
      EXPECT_EQ(piece.call + 1, static_cast<int>(reply.calls.size()));
      reply.calls.back().arguments += piece.text;
    }
  }
  return reply;
}

TEST(ToolCallsTest, ParsesHermesBlocksWholeAndStreamed) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris }\\\"{\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", "
      "\"arguments\": {\"a\": [1, {\"x\": 2}], \"b\": 2}}\n</tool_call>\n";
  absl::StatusOr<ParsedReply> reply = ParseToolCalls(ToolCallFormat::kHermes, text);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->content, "Let me check.");
  ASSERT_EQ(reply->calls.size(), 2u);
  EXPECT_EQ(reply->calls[0].name, "get_weather");
  EXPECT_EQ(reply->calls[0].arguments, R"({"city": "Paris }\"{", "unit": "celsius"})");
  EXPECT_EQ(reply->calls[1].name, "add");
  EXPECT_EQ(reply->calls[1].arguments, R"({"a": [1, {"x": 2}], "b": 2})");
  for (size_t step : {1, 2, 3, 5, 7, 11, 64}) {
    SCOPED_TRACE(step);
    const ParsedReply streamed = ParseInSteps(ToolCallFormat::kHermes, text, step);
    EXPECT_EQ(streamed.content, reply->content);
    ASSERT_EQ(streamed.calls.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(streamed.calls[i].name, reply->calls[i].name);
      EXPECT_EQ(streamed.calls[i].arguments, reply->calls[i].arguments);
    }
  }
}

TEST(ToolCallsTest, HermesTextIsPassedOnAsItComes) {
  ToolCallParser parser(ToolCallFormat::kHermes);
  const auto push = [&parser](std::string_view text) {
    std::vector<ReplyPiece> pieces;
    parser.Push(text, pieces);
    std::string content;
    for (const ReplyPiece& piece : pieces) {
      EXPECT_EQ(piece.kind, ReplyPiece::Kind::kContent);
      content += piece.text;
    }
    return content;
  };
  EXPECT_EQ(push("Hello <b>x</b> "), "Hello <b>x</b>");  // the blank may precede a call
  EXPECT_EQ(push("and <tool"), " and");
  EXPECT_EQ(push("box> "), " <toolbox>");
  std::vector<ReplyPiece> last;
  parser.Finish(last);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].text, " ");  // a reply without calls keeps all its text
  EXPECT_EQ(parser.calls(), 0);

  absl::StatusOr<ParsedReply> plain = ParseToolCalls(ToolCallFormat::kHermes, "  Just text. ");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->content, "  Just text. ");
  EXPECT_TRUE(plain->calls.empty());
}

TEST(ToolCallsTest, CutShortAndMalformedHermesCalls) {
  absl::StatusOr<ParsedReply> cut = ParseToolCalls(
      ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1");
  ASSERT_TRUE(cut.ok()) << cut.status();
  ASSERT_EQ(cut->calls.size(), 1u);
  EXPECT_EQ(cut->calls[0].arguments, "{\"a\": 1");

  absl::StatusOr<ParsedReply> broken =
      ParseToolCalls(ToolCallFormat::kHermes, "<tool_call>\n{\"name\": 3}\n</tool_call>");
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("tool call 1"));
  absl::StatusOr<ParsedReply> not_object =
      ParseToolCalls(ToolCallFormat::kHermes,
                     "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call>");
  EXPECT_THAT(not_object.status().message(), HasSubstr("OBJECT"));
}

TEST(ToolCallsTest, ParsesLlama3Calls) {
  const std::string text = "\n {\"name\": \"add\", \"parameters\": {\"a\": 4, \"b\": 5}}";
  absl::StatusOr<ParsedReply> call = ParseToolCalls(ToolCallFormat::kLlama3Json, text);
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->calls.size(), 1u);
  EXPECT_EQ(call->calls[0].name, "add");
  EXPECT_EQ(call->calls[0].arguments, R"({"a": 4, "b": 5})");
  EXPECT_EQ(call->content, "");
  for (size_t step : {1, 3, 8}) {
    const ParsedReply streamed = ParseInSteps(ToolCallFormat::kLlama3Json, text, step);
    ASSERT_EQ(streamed.calls.size(), 1u);
    EXPECT_EQ(streamed.calls[0].arguments, call->calls[0].arguments);
  }

  const ParsedReply text_reply = ParseInSteps(ToolCallFormat::kLlama3Json, " It is {warm}. ", 2);
  EXPECT_TRUE(text_reply.calls.empty());
  EXPECT_EQ(text_reply.content, " It is {warm}. ");

  EXPECT_EQ(ParseToolCalls(ToolCallFormat::kLlama3Json, "{\"answer\": 42}").status().code(),
            absl::StatusCode::kInvalidArgument);
}

class ToolCallWalkTest : public ::testing::TestWithParam<ToolCallFormat> {};

TEST_P(ToolCallWalkTest, RandomWalksParseIntoValidCalls) {
  for (const char* vocab : {"vocab/ggml-vocab-qwen2.gguf", "vocab/ggml-vocab-llama-spm.gguf"}) {
    const Tokenizer* tokenizer =
        framework::testing::SharedTokenizer(framework::testing::TestDataPath(vocab)).value();
    const std::shared_ptr<const TokenTrie> trie = TokenTrie::Create(*tokenizer);
    std::shared_ptr<const Grammar> grammar =
        ToolCallGrammar(GetParam(), Tools(), {.max_calls = 2}).value();
    for (int seed = 0; seed < 3; ++seed) {
      SCOPED_TRACE(std::string(vocab) + " seed " + std::to_string(seed));
      const testing::Walk walk =
          testing::RandomWalk(grammar, trie, {.seed = uint64_t(seed), .oracle_every = 0});
      ASSERT_TRUE(walk.ended) << walk.text;
      absl::StatusOr<ParsedReply> reply = ParseToolCalls(GetParam(), walk.text);
      ASSERT_TRUE(reply.ok()) << reply.status() << "\n" << walk.text;
      EXPECT_EQ(reply->content, "");
      ASSERT_FALSE(reply->calls.empty()) << walk.text;
      for (const ToolCall& call : reply->calls) {
        const ToolDefinition* tool = FindTool(call.name);
        ASSERT_NE(tool, nullptr) << call.name;
        EXPECT_EQ(testing::ValidateJsonText(call.arguments, tool->parameters_schema), "")
            << call.arguments;
      }
    }
  }
}

TEST_P(ToolCallWalkTest, AutoWalksAreTextOrValidCalls) {
  // Random walks through "auto" grammars: mostly text (nearly every token
  // is allowed), the masks checked against the oracle; the text never
  // holds a call that is not well-formed. Reports the mask times of text.
  const Tokenizer* tokenizer = framework::testing::SharedTokenizer(
                                   framework::testing::TestDataPath("vocab/ggml-vocab-qwen2.gguf"))
                                   .value();
  const std::shared_ptr<const TokenTrie> trie = TokenTrie::Create(*tokenizer);
  std::shared_ptr<const Grammar> grammar =
      ToolCallGrammar(GetParam(), Tools(), {.allow_text = true}).value();
  std::vector<double> first, later;
  for (int seed = 0; seed < 2; ++seed) {
    SCOPED_TRACE(seed);
    const testing::Walk walk = testing::RandomWalk(
        grammar, trie, {.seed = uint64_t(seed), .max_steps = 60, .oracle_every = 20});
    absl::StatusOr<ParsedReply> reply = ParseToolCalls(GetParam(), walk.text);
    ASSERT_TRUE(reply.ok()) << reply.status() << "\n" << walk.text;
    EXPECT_THAT(reply->content, ::testing::Not(HasSubstr("<tool_call>")));
    first.push_back(walk.mask_microseconds.front());
    later.insert(later.end(), walk.mask_microseconds.begin() + 1, walk.mask_microseconds.end());
  }
  std::cout << "auto grammar on qwen2, first mask: " << testing::DescribeTimes(first)
            << "\n  later masks: " << testing::DescribeTimes(later) << "\n";
}

INSTANTIATE_TEST_SUITE_P(Formats, ToolCallWalkTest,
                         ::testing::Values(ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json),
                         [](const auto& info) {
                           return info.param == ToolCallFormat::kHermes ? "hermes" : "llama3";
                         });

}  // namespace
}  // namespace lnpu::framework::structured_output
