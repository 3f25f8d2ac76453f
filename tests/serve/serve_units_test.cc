// The npu-serve libraries that need neither sockets nor a device: OpenAI
// request parsing and validation, response and SSE encoding, the prefix
// cache, metrics, and the command line.
#include <cmath>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tools/npu-serve/metrics.h"
#include "tools/npu-serve/openai_request.h"
#include "tools/npu-serve/openai_response.h"
#include "tools/npu-serve/prefix_cache.h"
#include "tools/npu-serve/reply_format.h"
#include "tools/npu-serve/serve_options.h"

namespace lnpu::serve {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

const RequestLimits kLimits = {.default_max_tokens = 100, .vocab_size = 512};

CompletionRequest ParseOk(const std::string& body,
                          Endpoint endpoint = Endpoint::kChatCompletions) {
  std::variant<CompletionRequest, ApiError> parsed =
      ParseCompletionRequest(body, endpoint, kLimits);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << body << ": " << error->message;
    return {};
  }
  return std::get<CompletionRequest>(parsed);
}

ApiError ParseError(const std::string& body, Endpoint endpoint = Endpoint::kChatCompletions) {
  std::variant<CompletionRequest, ApiError> parsed =
      ParseCompletionRequest(body, endpoint, kLimits);
  if (!std::holds_alternative<ApiError>(parsed)) {
    ADD_FAILURE() << body << " was accepted";
    return {};
  }
  return std::get<ApiError>(parsed);
}

TEST(OpenAiRequestTest, ChatRequestWithEverySamplingField) {
  const CompletionRequest r = ParseOk(R"({
    "model": "m", "messages": [{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                            {"type": "text", "text": "!"}]}],
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.1,
    "seed": 42, "stop": ["\n\n", "END"], "presence_penalty": 0.5, "frequency_penalty": -0.5,
    "logit_bias": {"13": -100, "7": 2.5}, "n": 1, "stream": true,
    "stream_options": {"include_usage": true}, "user": "u", "some_future_field": {"x": 1}})");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hi!");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.config.max_new_tokens, 7);
  EXPECT_FLOAT_EQ(r.config.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.config.top_p, 0.9f);
  EXPECT_EQ(r.config.top_k, 40);
  EXPECT_FLOAT_EQ(r.config.min_p, 0.1f);
  EXPECT_EQ(r.config.seed, 42u);
  EXPECT_EQ(r.config.stop_strings, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_FLOAT_EQ(r.config.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.config.frequency_penalty, -0.5f);
  EXPECT_TRUE(std::isinf(r.config.logit_bias.at(13)));
  EXPECT_FLOAT_EQ(r.config.logit_bias.at(7), 2.5f);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(OpenAiRequestTest, DefaultsFollowOpenAi) {
  const CompletionRequest r = ParseOk(R"({"prompt": "Once"})", Endpoint::kCompletions);
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_FLOAT_EQ(r.config.temperature, 1.0f);
  EXPECT_EQ(r.config.max_new_tokens, 100);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(ParseOk(R"({"prompt": "a", "max_tokens": 3, "stop": "x"})", Endpoint::kCompletions)
                .config.stop_strings,
            std::vector<std::string>{"x"});
}

TEST(OpenAiRequestTest, BadRequestsNameTheField) {
  struct Case {
    std::string body;
    std::string param;
  };
  const Case cases[] = {
      {R"({"messages": "hi"})", "messages"},
      {R"({})", "messages"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "9"})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": -1})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e"]})",
       "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"999": 1}})",
       "logit_bias"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": 101}})",
       "logit_bias"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": 1.5})", "seed"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "response_format": {"type": "json"}})",
       "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "response_format": {"type": "json_schema", "json_schema": {"name": "a b",
                               "schema": {}}}})",
       "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}],
           "response_format": {"type": "json_schema", "json_schema": {"name": "a",
                               "schema": {"type": "string", "format": "date",
                                          "minProperties": 1}}}})",
       "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
       "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {"type": "function"}})",
       "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [
           {"type": "function", "function": {"name": "f"}},
           {"type": "function", "function": {"name": "f"}}]})",
       "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [
           {"type": "function", "function": {"name": "f", "parameters": [1]}}]})",
       "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes",
           "tools": [{"type": "function", "function": {"name": "f"}}]})",
       "tool_choice"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
           "function": {"name": "f", "arguments": "[1]"}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function"}]}]})",
       "messages[0].tool_calls[0]"},
      {R"({"messages": [{"role": "tool"}]})", "messages[0].content"},
  };
  for (const Case& c : cases) {
    const ApiError error = ParseError(c.body);
    EXPECT_EQ(error.http_status, 400) << c.body;
    EXPECT_EQ(error.param, c.param) << c.body;
    EXPECT_EQ(error.type, "invalid_request_error");
  }
  EXPECT_EQ(ParseError(R"({"prompt": 3})", Endpoint::kCompletions).param, "prompt");
  EXPECT_EQ(ParseError(R"({"prompt": "x", "tools": [{"type": "function",
                           "function": {"name": "f"}}]})",
                       Endpoint::kCompletions)
                .param,
            "tools");
  // The unsupported keyword and its place are named.
  EXPECT_THAT(ParseError(R"({"prompt": "x", "response_format": {"type": "json_schema",
                "json_schema": {"name": "n", "schema": {"properties": {"a":
                {"type": "number", "multipleOf": 3}}}}}})",
                         Endpoint::kCompletions)
                  .message,
              HasSubstr("'multipleOf' at /properties/a"));
}

TEST(OpenAiRequestTest, StructuredOutputAndTools) {
  EXPECT_EQ(ParseOk(R"({"messages": [{"role": "user", "content": "x"}],
                        "response_format": {"type": "text"}})")
                .response_grammar,
            nullptr);
  EXPECT_NE(ParseOk(R"({"messages": [{"role": "user", "content": "x"}],
                        "response_format": {"type": "json_object"}})")
                .response_grammar,
            nullptr);
  EXPECT_NE(ParseOk(R"({"prompt": "x", "response_format": {"type": "json_schema",
                        "json_schema": {"name": "n", "strict": true, "schema":
                        {"type": "object", "properties": {"a": {"type": "integer"}}}}}})",
                    Endpoint::kCompletions)
                .response_grammar,
            nullptr);

  const CompletionRequest tools = ParseOk(R"({"messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
       "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "3 C"}],
    "tools": [{"type": "function", "function": {"name": "weather", "description": "d",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
              {"type": "function", "function": {"name": "time"}}]})");
  EXPECT_EQ(tools.tool_choice, ToolChoice::kAuto);
  ASSERT_EQ(tools.tools.size(), 2u);
  EXPECT_EQ(tools.tools[0].name, "weather");
  EXPECT_EQ(tools.tools[0].parameters_schema,
            R"({"type":"object","properties":{"city":{"type":"string"}}})");
  EXPECT_EQ(tools.tools[1].parameters_schema, R"({"type": "object"})");
  // The definitions keep the client's key order, for the chat template.
  EXPECT_EQ(tools.tool_definitions[1], R"({"type":"function","function":{"name":"time"}})");
  ASSERT_EQ(tools.messages.size(), 3u);
  EXPECT_EQ(tools.messages[1].content, "");
  ASSERT_EQ(tools.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(tools.messages[1].tool_calls[0].name, "weather");
  EXPECT_EQ(tools.messages[1].tool_calls[0].arguments, R"({"city": "Oslo"})");
  EXPECT_EQ(tools.messages[2].role, "tool");

  const std::string tool = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  const CompletionRequest named =
      ParseOk(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                           R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})"));
  EXPECT_EQ(named.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(named.forced_tool, "f");
  EXPECT_EQ(ParseOk(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                                 R"(, "tool_choice": "required"})"))
                .tool_choice,
            ToolChoice::kRequired);
  EXPECT_EQ(ParseOk(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                                 R"(, "tool_choice": "none"})"))
                .tool_choice,
            ToolChoice::kNone);
  EXPECT_TRUE(named.parallel_tool_calls);  // OpenAI's default
  EXPECT_FALSE(ParseOk(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                                    R"(, "parallel_tool_calls": false})"))
                   .parallel_tool_calls);
  EXPECT_EQ(ParseError(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                                    R"(, "parallel_tool_calls": "no"})"))
                .param,
            "parallel_tool_calls");
  // response_format with tools the reply may call: refused, naming both.
  const ApiError both =
      ParseError(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                              R"(, "response_format": {"type": "json_object"}})"));
  EXPECT_EQ(both.param, "response_format");
  EXPECT_THAT(both.message, HasSubstr("tool_choice \"none\""));
  EXPECT_EQ(ParseOk(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                                 R"(, "response_format": {"type": "json_object"},
                                     "tool_choice": "none"})"))
                .tool_choice,
            ToolChoice::kNone);
}

framework::ChatTemplate Template(framework::ChatFamily family) {
  return framework::ChatTemplate::ForFamily(family, {});
}

TEST(ReplyFormatTest, GrammarAndToolCallFormatPerTemplate) {
  const std::string tool = R"("tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}}])";
  const auto request = [&](const std::string& choice) {
    return ParseOk(absl::StrCat(R"({"messages": [{"role": "user", "content": "x"}], )", tool,
                                R"(, "tool_choice": )", choice, "}"));
  };
  using framework::ChatFamily;
  using framework::structured_output::ToolCallFormat;
  // Qwen3: <tool_call> blocks; every mode with tools is constrained.
  for (const char* choice : {"\"auto\"", "\"required\""}) {
    const auto format =
        std::get<ReplyFormat>(ReplyFormatOf(request(choice), Template(ChatFamily::kQwen3)));
    EXPECT_NE(format.grammar, nullptr) << choice;
    EXPECT_EQ(format.tool_calls, ToolCallFormat::kHermes) << choice;
  }
  const auto none =
      std::get<ReplyFormat>(ReplyFormatOf(request("\"none\""), Template(ChatFamily::kLlama31)));
  EXPECT_EQ(none.tool_calls, std::nullopt);
  EXPECT_EQ(
      std::get<ReplyFormat>(ReplyFormatOf(request("\"required\""), Template(ChatFamily::kLlama31)))
          .tool_calls,
      ToolCallFormat::kLlama3Json);
  // Templates without tool calling: 400 naming tools.
  for (ChatFamily family : {ChatFamily::kChatMl, ChatFamily::kLlama3, ChatFamily::kGemma}) {
    const auto refused = ReplyFormatOf(request("\"auto\""), Template(family));
    ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
    EXPECT_EQ(std::get<ApiError>(refused).param, "tools");
  }
  // A parameters keyword that cannot be enforced: 400 unless tool_choice
  // is "none".
  const std::string bad = R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"s": {"type": "array", "prefixItems": []}}}}}], )";
  EXPECT_TRUE(std::holds_alternative<ReplyFormat>(
      ReplyFormatOf(ParseOk(bad + R"("tool_choice": "none"})"), Template(ChatFamily::kQwen3))));
  for (const char* choice : {"\"auto\"", "\"required\""}) {
    const auto refused = ReplyFormatOf(ParseOk(bad + R"("tool_choice": )" + choice + "}"),
                                       Template(ChatFamily::kQwen3));
    ASSERT_TRUE(std::holds_alternative<ApiError>(refused)) << choice;
    EXPECT_EQ(std::get<ApiError>(refused).param, "tools");
    EXPECT_THAT(std::get<ApiError>(refused).message, HasSubstr("'prefixItems'"));
  }
}

// logit_bias may name every token of a large vocabulary (it is read into
// a sorted map, not an ordered object, whose inserts are linear searches);
// any other object is limited to 4096 members.
TEST(OpenAiRequestTest, LogitBiasMayBeLargeOtherObjectsMayNot) {
  constexpr int32_t kVocab = 152000;
  json body = {{"messages", {{{"role", "user"}, {"content", "x"}}}},
               {"metadata", {{"logit_bias", "not the request's"}}}};
  json bias = json::object();
  for (int32_t id = 0; id < kVocab; id += 2) bias[std::to_string(id)] = -100;
  bias["7"] = 1.5;
  body["logit_bias"] = bias;
  body["stream"] = true;  // a member after logit_bias is still read
  std::variant<CompletionRequest, ApiError> parsed = ParseCompletionRequest(
      body.dump(), Endpoint::kChatCompletions, {.default_max_tokens = 10, .vocab_size = kVocab});
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(parsed))
      << std::get<ApiError>(parsed).message;
  const CompletionRequest& request = std::get<CompletionRequest>(parsed);
  EXPECT_EQ(request.config.logit_bias.size(), kVocab / 2 + 1);
  EXPECT_TRUE(std::isinf(request.config.logit_bias.at(151998)));
  EXPECT_FLOAT_EQ(request.config.logit_bias.at(7), 1.5f);
  EXPECT_TRUE(request.stream);

  json wide = json::object();
  for (int i = 0; i <= 4096; ++i) wide["k" + std::to_string(i)] = i;
  const ApiError refused = ParseError(
      json{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"metadata", wide}}.dump());
  EXPECT_EQ(refused.http_status, 400);
  EXPECT_THAT(refused.message, HasSubstr("more than 4096 members"));
  wide.erase("k0");
  ParseOk(json{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"metadata", wide}}.dump());
}

TEST(OpenAiRequestTest, MalformedJsonAndInvalidUtf8AreRefused) {
  EXPECT_EQ(ParseError(R"({"messages": [)").code, "invalid_json");
  EXPECT_EQ(ParseError("[1, 2]").http_status, 400);
  EXPECT_EQ(ParseError("{\"prompt\": \"\xff\xfe\"}", Endpoint::kCompletions).code,
            "invalid_json");
  // Text response_format is the default and accepted.
  ParseOk(R"({"messages": [{"role": "user", "content": "x"}],
              "response_format": {"type": "text"}, "tool_choice": "none"})");
}

TEST(OpenAiResponseTest, WholeResponseAndStreamChunks) {
  const ResponseHeader chat{.endpoint = Endpoint::kChatCompletions,
                            .id = "chatcmpl-1", .created = 5, .model = "m"};
  const json whole = json::parse(
      CompletionJson(chat, "Hello", framework::FinishReason::kLength,
                     {.prompt_tokens = 10, .completion_tokens = 3, .cached_tokens = 4}));
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["total_tokens"], 13);
  EXPECT_EQ(whole["usage"]["prompt_tokens_details"]["cached_tokens"], 4);

  const std::string first = ChunkEvent(chat, "He", true, std::nullopt);
  ASSERT_TRUE(first.starts_with("data: ") && first.ends_with("\n\n")) << first;
  const json chunk = json::parse(first.substr(6));
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  EXPECT_EQ(chunk["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunk["choices"][0]["delta"]["content"], "He");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  const json last = json::parse(ChunkEvent(chat, "", false, "stop").substr(6));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(last["choices"][0]["delta"].contains("content"));
  const json usage = json::parse(UsageEvent(chat, {.prompt_tokens = 1}).substr(6));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 1);
  EXPECT_EQ(DoneEvent(), "data: [DONE]\n\n");

  const ResponseHeader text{.endpoint = Endpoint::kCompletions, .id = "cmpl-1", .model = "m"};
  EXPECT_EQ(json::parse(CompletionJson(text, "x", framework::FinishReason::kStop, {}))
                ["choices"][0]["text"], "x");
  EXPECT_EQ(json::parse(ModelsJson("stories", 1))["data"][0]["id"], "stories");

  // Tool calls: content null, OpenAI's tool_calls, finish reason
  // "tool_calls"; in a stream, a delta with indexed calls.
  const std::vector<framework::structured_output::ToolCall> calls = {{"f", R"({"n":1})"},
                                                                     {"g", "{}"}};
  const json called = json::parse(
      CompletionJson(chat, "", framework::FinishReason::kStop, {}, calls))["choices"][0];
  EXPECT_EQ(called["finish_reason"], "tool_calls");
  EXPECT_TRUE(called["message"]["content"].is_null());
  ASSERT_EQ(called["message"]["tool_calls"].size(), 2u);
  EXPECT_EQ(called["message"]["tool_calls"][0]["id"], "call_1-0");
  EXPECT_EQ(called["message"]["tool_calls"][1]["id"], "call_1-1");
  EXPECT_EQ(called["message"]["tool_calls"][0]["type"], "function");
  EXPECT_EQ(called["message"]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(called["message"]["tool_calls"][0]["function"]["arguments"], R"({"n":1})");
  EXPECT_EQ(OpenAiFinishReason(framework::FinishReason::kLength, true), "length");
  // A streamed call: its start with index, id, type and name, then
  // pieces of its arguments with the index only.
  const json start = json::parse(ToolCallDeltaEvent(chat, 1, "g", "", true).substr(6));
  const json& started = start["choices"][0]["delta"];
  EXPECT_EQ(started["role"], "assistant");
  ASSERT_EQ(started["tool_calls"].size(), 1u);
  EXPECT_EQ(started["tool_calls"][0]["index"], 1);
  EXPECT_EQ(started["tool_calls"][0]["id"], "call_1-1");
  EXPECT_EQ(started["tool_calls"][0]["type"], "function");
  EXPECT_EQ(started["tool_calls"][0]["function"]["name"], "g");
  EXPECT_EQ(started["tool_calls"][0]["function"]["arguments"], "");
  EXPECT_TRUE(start["choices"][0]["finish_reason"].is_null());
  const json more =
      json::parse(ToolCallDeltaEvent(chat, 1, std::nullopt, "{\"n\"", false).substr(6));
  const json& continued = more["choices"][0]["delta"];
  EXPECT_FALSE(continued.contains("role"));
  EXPECT_EQ(continued["tool_calls"][0]["index"], 1);
  EXPECT_FALSE(continued["tool_calls"][0].contains("id"));
  EXPECT_FALSE(continued["tool_calls"][0]["function"].contains("name"));
  EXPECT_EQ(continued["tool_calls"][0]["function"]["arguments"], "{\"n\"");
  EXPECT_EQ(json::parse(InvalidRequest("bad", "top_p").Body())["error"]["param"], "top_p");
}

// A state of `tokens` with 2 KV blocks of 3-byte rows; row bytes are
// (block, slot) so prefixes can be checked.
runtime::CacheSnapshot FakeState(const std::vector<int32_t>& tokens) {
  runtime::CacheSnapshot state;
  state.model.kv_blocks = 2;
  state.model.kv_row_bytes = 3;
  state.next_position = static_cast<int32_t>(tokens.size());
  state.mask.assign(tokens.size(), 1);
  state.slot_tokens = tokens;
  for (uint8_t block = 0; block < 2; ++block) {
    for (uint8_t slot = 0; slot < tokens.size(); ++slot) {
      state.kv_rows.insert(state.kv_rows.end(), {block, slot, 7});
    }
  }
  return state;
}

TEST(PrefixCacheTest, LongestCommonPrefixIsReturnedTruncated) {
  PrefixCache cache(8, 1 << 20);
  cache.Insert(FakeState({1, 2, 3, 4, 5}));
  cache.Insert(FakeState({1, 2, 9}));
  const std::optional<runtime::CacheSnapshot> hit = cache.Lookup(std::vector<int32_t>{1, 2, 3, 7},
                                                                3);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->slot_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(hit->next_position, 3);
  EXPECT_EQ(hit->kv_rows, (std::vector<uint8_t>{0, 0, 7, 0, 1, 7, 0, 2, 7,
                                                 1, 0, 7, 1, 1, 7, 1, 2, 7}));
  // At most max_tokens, so that the prompt keeps a token to run.
  EXPECT_EQ(cache.Lookup(std::vector<int32_t>{1, 2, 3, 4, 5}, 4)->written_slots(), 4u);
  EXPECT_FALSE(cache.Lookup(std::vector<int32_t>{8, 1}, 1).has_value());
  EXPECT_EQ(cache.hits(), 2u);
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(PrefixCacheTest, BoundedByEntriesAndBytesLeastRecentlyUsedFirst) {
  const uint64_t one = FakeState({1, 2}).bytes();
  PrefixCache cache(2, 1 << 20);
  cache.Insert(FakeState({1, 2}));
  cache.Insert(FakeState({3, 4}));
  ASSERT_TRUE(cache.Lookup(std::vector<int32_t>{1, 2, 0}, 2).has_value());  // {1,2} recent
  cache.Insert(FakeState({5, 6}));                                          // evicts {3,4}
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_FALSE(cache.Lookup(std::vector<int32_t>{3, 4, 0}, 2).has_value());
  EXPECT_TRUE(cache.Lookup(std::vector<int32_t>{1, 2, 0}, 2).has_value());
  EXPECT_EQ(cache.bytes(), 2 * one);

  PrefixCache small(8, one);  // room for one
  small.Insert(FakeState({1, 2}));
  small.Insert(FakeState({3, 4}));
  EXPECT_EQ(small.entries(), 1u);
  small.Insert(FakeState({1, 2, 3, 4, 5, 6}));  // larger than the cap: not stored
  EXPECT_EQ(small.entries(), 1u);
}

TEST(PrefixCacheTest, AnExtendedConversationReplacesItsPrefix) {
  PrefixCache cache(8, 1 << 20);
  cache.Insert(FakeState({1, 2}));
  cache.Insert(FakeState({1, 2, 3, 4}));
  EXPECT_EQ(cache.entries(), 1u);
  runtime::CacheSnapshot wrapped = FakeState({1, 2});
  wrapped.next_position = 9;  // a ring that wrapped: positions != slots
  cache.Insert(std::move(wrapped));
  EXPECT_EQ(cache.entries(), 1u);
  PrefixCache off(0, 1 << 20);
  off.Insert(FakeState({1}));
  EXPECT_EQ(off.entries(), 0u);
}

TEST(MetricsTest, PrometheusTextHasCountersGaugesAndHistograms) {
  Metrics metrics;
  metrics.CountRequest("/v1/completions", 200);
  metrics.CountRequest("/v1/completions", 200);
  metrics.CountRequest("/v1/completions", 429);
  metrics.CountGeneration(10, 4, 5, "stop");
  metrics.ObserveTimeToFirstToken(0.02);
  metrics.ObserveDecodeStep(0.003);
  const std::string text = metrics.Render({.queue_depth = 3, .device_memory_bytes = 1234});
  EXPECT_THAT(text, HasSubstr("npu_serve_requests_total{route=\"/v1/completions\","
                              "status=\"200\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("status=\"429\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_generations_total{finish_reason=\"stop\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_prompt_tokens_total 10\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_cached_prompt_tokens_total 4\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_completion_tokens_total 5\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_queue_depth 3\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_device_memory_bytes 1234\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_time_to_first_token_seconds_bucket{le=\"0.01\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_time_to_first_token_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("npu_serve_decode_step_seconds_bucket{le=\"+Inf\"} 1\n"));
  EXPECT_EQ(metrics.requests("/v1/completions", 429), 1u);
}

TEST(ServeOptionsTest, FlagsAndErrors) {
  absl::StatusOr<ServeOptions> o = ParseServeOptions(
      {"-m", "model.lnpu", "--port=0", "--sessions", "2", "--queue", "5", "--ctx-policy", "ring",
       "--api-key", "k", "--max-body-bytes", "100", "--quiet"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->model_path, "model.lnpu");
  EXPECT_EQ(o->port, 0);
  EXPECT_EQ(o->scheduler.sessions, 2u);
  EXPECT_EQ(o->scheduler.max_queue, 5u);
  EXPECT_EQ(o->scheduler.context_policy.on_full, runtime::CacheFullPolicy::OnFull::kRing);
  EXPECT_EQ(o->api.api_key, "k");
  EXPECT_EQ(o->api.max_body_bytes, 100u);
  EXPECT_FALSE(o->api.log_requests);
  EXPECT_EQ(o->http_threads, 2 + 5 + 4);
  EXPECT_THAT(std::string(ParseServeOptions({}).status().message()), HasSubstr("-m"));
  EXPECT_THAT(std::string(ParseServeOptions({"-m", "x", "--bogus", "1"}).status().message()),
              HasSubstr("--bogus"));
  EXPECT_THAT(std::string(ParseServeOptions({"-m", "x", "--ctx-policy", "grow"})
                              .status().message()),
              HasSubstr("finish or ring"));
  EXPECT_THAT(std::string(ParseServeOptions({"-m", "x", "--port", "99999"}).status().message()),
              HasSubstr("--port"));
  EXPECT_THAT(std::string(ParseServeOptions({"-m", "x", "--sessions"}).status().message()),
              HasSubstr("needs a value"));
  EXPECT_EQ(ParseServeOptions({"-m", "x", "--api-key-file", "/nonexistent/key"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(ParseServeOptions({"--help"})->help);
}

}  // namespace
}  // namespace lnpu::serve
