// Tool calls: the grammar that forces Qwen (<tool_call>) and Llama 3 JSON
// calls, walked randomly on real vocabularies and parsed back, with the
// arguments validated against each tool's parameters; the parser on
// hand-written replies.
#include "framework/structured_output/tool_calls.h"

#include <memory>
#include <string>
#include <vector>

#include "framework/structured_output/grammar_recognizer.h"
#include "framework/structured_output/token_trie.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/structured_output/json_schema_validator.h"
#include "tests/structured_output/random_walk.h"
#include "tests/tokenizer/gguf_vocabulary.h"

namespace lnpu::framework::structured_output {
namespace {

using ::testing::HasSubstr;

const std::vector<ToolDefinition>& Tools() {
  static const auto* const tools = new std::vector<ToolDefinition>{
      {"get_weather",
       R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
            "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city"], "additionalProperties": false})"},
      {"add", R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
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

bool Matches(const std::shared_ptr<const Grammar>& grammar, const std::string& text) {
  GrammarRecognizer recognizer(grammar);
  return recognizer.Advance(text).ok() && recognizer.IsAccepting();
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
}

TEST(ToolCallsTest, ForcedFunctionAndLlama3Shape) {
  std::shared_ptr<const Grammar> forced =
      ToolCallGrammar(ToolCallFormat::kLlama3Json, Tools(), "get_weather").value();
  EXPECT_TRUE(Matches(forced, R"({"name": "get_weather", "parameters": {"city": "Rome"}})"));
  EXPECT_FALSE(Matches(forced, R"({"name": "add", "parameters": {"a": 1, "b": 2}})"));
  EXPECT_FALSE(Matches(forced, R"({"name": "get_weather", "arguments": {"city": "Rome"}})"));
}

TEST(ToolCallsTest, GrammarErrors) {
  EXPECT_EQ(ToolCallGrammar(ToolCallFormat::kHermes, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status missing = ToolCallGrammar(ToolCallFormat::kHermes, Tools(), "mul").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("\"mul\""));
  std::vector<ToolDefinition> twice = {Tools()[0], Tools()[0]};
  EXPECT_THAT(ToolCallGrammar(ToolCallFormat::kHermes, twice).status().message(),
              HasSubstr("defined twice"));
  std::vector<ToolDefinition> bad = {{"f", R"({"type": "integer", "minimum": 1})"}};
  absl::Status unsupported = ToolCallGrammar(ToolCallFormat::kHermes, bad).status();
  EXPECT_EQ(unsupported.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(unsupported.message(), HasSubstr("tool \"f\""));
  EXPECT_EQ(ToolCallGrammar(ToolCallFormat::kHermes, Tools(), std::nullopt, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ToolCallsTest, ParsesHermesBlocks) {
  absl::StatusOr<ParsedReply> reply = ParseToolCalls(
      ToolCallFormat::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", "
      "\"arguments\": \"{\\\"a\\\": 1, \\\"b\\\": 2}\"}\n</tool_call>");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->content, "Let me check.");
  ASSERT_EQ(reply->calls.size(), 2u);
  EXPECT_EQ(reply->calls[0].name, "get_weather");
  EXPECT_EQ(reply->calls[0].arguments, R"({"city":"Paris","unit":"celsius"})");
  EXPECT_EQ(reply->calls[1].name, "add");
  EXPECT_EQ(reply->calls[1].arguments, R"({"a":1,"b":2})");

  absl::StatusOr<ParsedReply> plain = ParseToolCalls(ToolCallFormat::kHermes, "  Just text. ");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->content, "Just text.");
  EXPECT_TRUE(plain->calls.empty());

  absl::StatusOr<ParsedReply> unterminated = ParseToolCalls(
      ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}");
  ASSERT_TRUE(unterminated.ok());
  ASSERT_EQ(unterminated->calls.size(), 1u);

  absl::StatusOr<ParsedReply> broken =
      ParseToolCalls(ToolCallFormat::kHermes, "<tool_call>\n{\"name\": 3}\n</tool_call>");
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("tool call 1"));
}

TEST(ToolCallsTest, ParsesLlama3Calls) {
  absl::StatusOr<ParsedReply> call = ParseToolCalls(
      ToolCallFormat::kLlama3Json,
      "<|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 4, \"b\": 5}}");
  ASSERT_TRUE(call.ok());
  ASSERT_EQ(call->calls.size(), 1u);
  EXPECT_EQ(call->calls[0].name, "add");
  EXPECT_EQ(call->calls[0].arguments, R"({"a":4,"b":5})");
  EXPECT_EQ(call->content, "");

  absl::StatusOr<ParsedReply> text =
      ParseToolCalls(ToolCallFormat::kLlama3Json, "{\"answer\": 42}");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text->calls.empty());
  EXPECT_EQ(text->content, "{\"answer\": 42}");
}

class ToolCallWalkTest : public ::testing::TestWithParam<ToolCallFormat> {};

TEST_P(ToolCallWalkTest, RandomWalksParseIntoValidCalls) {
  for (const char* vocab : {"vocab/ggml-vocab-qwen2.gguf", "vocab/ggml-vocab-llama-spm.gguf"}) {
    const Tokenizer* tokenizer =
        framework::testing::SharedTokenizer(framework::testing::TestDataPath(vocab)).value();
    const std::shared_ptr<const TokenTrie> trie = TokenTrie::Create(*tokenizer);
    std::shared_ptr<const Grammar> grammar = ToolCallGrammar(GetParam(), Tools(), std::nullopt, 2).value();
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

INSTANTIATE_TEST_SUITE_P(Formats, ToolCallWalkTest,
                         ::testing::Values(ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json),
                         [](const auto& info) {
                           return info.param == ToolCallFormat::kHermes ? "hermes" : "llama3";
                         });

}  // namespace
}  // namespace lnpu::framework::structured_output
