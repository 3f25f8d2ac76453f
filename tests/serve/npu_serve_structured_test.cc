// Structured output through npu-serve ($LNPU_NPU_SERVE) over loopback:
// response_format json_schema / json_object and tool calls, on
// random-weight models (which know nothing of JSON, so the grammar alone
// makes the replies valid; sampling at temperature 1 walks the grammar's
// corners) with two real vocabularies: qwen2 (byte-level BPE, 151,936
// tokens, many spanning JSON punctuation such as `{"` or `":`) and
// llama-spm (SentencePiece with byte tokens). Every reply, streamed or
// not, is parsed and validated against its schema by an independent
// validator; tool calls (tool_choice "required", a named function, or
// "auto" when the model begins one, steered by logit_bias) come back in
// OpenAI's shape with arguments valid against the tool's parameters,
// streamed as OpenAI's deltas; bad requests get 400 naming the field.
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "framework/llm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/serve/serve_test_support.h"
#include "tests/structured_output/json_schema_validator.h"
#include "tests/tools/tool_test_support.h"

namespace lnpu {
namespace {

using framework::structured_output::testing::ValidateJsonText;
using nlohmann::json;
using serve::testing::kKey;
using serve::testing::PostStream;
using serve::testing::ServerProcess;
using ::testing::HasSubstr;
using tools::testing::TestDirectory;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("npu_serve_structured_test"));

enum class Vocab { kQwen2, kLlamaSpm };

std::string VocabName(Vocab vocab) { return vocab == Vocab::kQwen2 ? "qwen2" : "llama_spm"; }

// A 2-layer, dim-64 random model of `vocab`'s real vocabulary (F32), with
// a 1024 + 1024 slot cache.
const std::string& Artifact(Vocab vocab) {
  static std::map<Vocab, std::string>* const artifacts = new std::map<Vocab, std::string>();
  auto it = artifacts->find(vocab);
  if (it != artifacts->end()) return it->second;
  const char* data = std::getenv("LNPU_TEST_DATA");
  EXPECT_NE(data, nullptr) << "LNPU_TEST_DATA is not set: run through meson test";
  synthetic::RandomLlamaSpec spec;
  spec.architecture = vocab == Vocab::kQwen2 ? "qwen2" : "llama";
  spec.vocab_size = 0;
  spec.vocabulary_gguf = absl::StrCat(data ? data : "", "/vocab/ggml-vocab-",
                                      vocab == Vocab::kQwen2 ? "qwen2" : "llama-spm", ".gguf");
  spec.tied_embeddings = true;
  // As Qwen2.5 adds them to the Qwen2 vocabulary: the tags of its tool
  // calls are single tokens.
  if (vocab == Vocab::kQwen2) spec.added_tokens = {"<tool_call>", "</tool_call>"};
  const std::string gguf = TestDirectory::Path(VocabName(vocab) + ".gguf");
  const std::string artifact = TestDirectory::Path(VocabName(vocab) + ".lnpu");
  const absl::Status written = synthetic::WriteRandomLlamaGguf(spec, gguf);
  EXPECT_TRUE(written.ok()) << written;
  compiler::CompileOptions options;
  options.max_prompt_len = 1024;
  options.min_response_len = 1024;
  options.prefill_chunks = {16, 64};
  options.weights = compiler::CompileOptions::WeightType::kF32;
  options.kv_dtype = compiler::CompileOptions::KvType::kF32;
  const absl::Status compiled = compiler::CompileGguf(gguf, artifact, options);
  EXPECT_TRUE(compiled.ok()) << compiled;
  std::filesystem::remove(gguf);
  return artifacts->emplace(vocab, artifact).first->second;
}

// logit_bias giving `bias` to the tokens of `vocab` for which `pick(id,
// bytes)` holds (a way to steer the random models).
json BiasTokens(Vocab vocab, int bias,
                const std::function<bool(const framework::Tokenizer&, int32_t)>& pick) {
  absl::StatusOr<std::unique_ptr<framework::Llm>> llm =
      framework::Llm::Load(Artifact(vocab), {.device = "soft"});
  EXPECT_TRUE(llm.ok()) << llm.status();
  json biases = json::object();
  if (!llm.ok()) return biases;
  const framework::Tokenizer& tokenizer = (*llm)->tokenizer();
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (pick(tokenizer, id)) biases[std::to_string(id)] = bias;
  }
  EXPECT_FALSE(biases.empty());
  return biases;
}

// logit_bias favouring the tokens made only of closing punctuation
// (`"`, `"}`, `]}`, `":` ...), so that sampling closes strings, arrays
// and objects that a schema does not bound.
json ClosingBias(Vocab vocab) {
  return BiasTokens(vocab, 20, [](const framework::Tokenizer& tokenizer, int32_t id) {
    const std::string bytes = tokenizer.TokenBytes(id);
    return !bytes.empty() && bytes.find_first_not_of("\"}]: ") == std::string::npos &&
           bytes.find_first_of("\"}]") != std::string::npos;
  });
}

// logit_bias for the tokens that begin a tool call in `vocab`'s template
// format: Qwen's <tool_call> token; for Llama 3.1 JSON calls, the tokens
// beginning with '{'.
json CallOpeningTokens(Vocab vocab, int bias) {
  return BiasTokens(vocab, bias, [vocab](const framework::Tokenizer& tokenizer, int32_t id) {
    const std::string bytes = tokenizer.TokenBytes(id);
    return vocab == Vocab::kQwen2 ? bytes == "<tool_call>" : bytes.starts_with("{");
  });
}

// A reply, from a whole response or put together from a stream.
struct Reply {
  int status = 0;
  std::string content;
  json tool_calls = json::array();  // OpenAI's message.tool_calls
  std::string finish_reason;
  int completion_tokens = 0;
  json body;  // the whole response (not streamed)
};

Reply Post(const ServerProcess& server, const std::string& path, json body, bool stream) {
  Reply reply;
  const bool chat = path == "/v1/chat/completions";
  // Constrained sampling over a 151,936-token vocabulary is slow under
  // the sanitizers on a loaded machine.
  httplib::Client client = server.Client();
  client.set_read_timeout(600, 0);
  if (!stream) {
    httplib::Result res = client.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(res) << "connection dropped";
    if (!res) return reply;
    reply.status = res->status;
    reply.body = json::parse(res->body, nullptr, false);
    if (res->status != 200) return reply;
    const json& choice = reply.body["choices"][0];
    reply.finish_reason = choice["finish_reason"].get<std::string>();
    reply.completion_tokens = reply.body["usage"]["completion_tokens"].get<int>();
    if (!chat) {
      reply.content = choice["text"].get<std::string>();
      return reply;
    }
    const json& message = choice["message"];
    EXPECT_EQ(message["role"], "assistant");
    if (message["content"].is_string()) reply.content = message["content"].get<std::string>();
    if (message.contains("tool_calls")) reply.tool_calls = message["tool_calls"];
    return reply;
  }
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const serve::testing::Stream events = PostStream(std::move(client), path, body);
  reply.status = events.status;
  if (events.status != 200) return reply;
  EXPECT_TRUE(events.done) << "no [DONE]";
  reply.content = events.text;
  for (const json& chunk : events.chunks) {
    if (chunk.contains("usage") && chunk["usage"].is_object()) {
      reply.completion_tokens = chunk["usage"]["completion_tokens"].get<int>();
    }
    if (!chunk.contains("choices") || chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice["finish_reason"].is_string()) {
      EXPECT_EQ(reply.finish_reason, "") << "two finish reasons";
      reply.finish_reason = choice["finish_reason"].get<std::string>();
    }
    if (!choice.contains("delta") || !choice["delta"].contains("tool_calls")) continue;
    for (const json& call : choice["delta"]["tool_calls"]) {
      const size_t index = call["index"].get<size_t>();
      if (index == reply.tool_calls.size()) {
        reply.tool_calls.push_back(
            {{"id", call["id"]},
             {"type", call["type"]},
             {"function", {{"name", call["function"]["name"]}, {"arguments", ""}}}});
      }
      if (index >= reply.tool_calls.size()) {
        ADD_FAILURE() << "a tool call delta skips an index: " << chunk.dump();
        continue;
      }
      reply.tool_calls[index]["function"]["arguments"] =
          reply.tool_calls[index]["function"]["arguments"].get<std::string>() +
          call["function"].value("arguments", "");
    }
  }
  return reply;
}

// The schemas every vocabulary is tried with: nested objects, arrays of
// objects, enums, const, anyOf with null, required and optional fields,
// integers, numbers, booleans, strings with length bounds and a pattern.
// Strings are bounded and additional properties refused, so that a random
// walk through the grammar ends.
const std::vector<std::string>& Schemas() {
  static const std::vector<std::string>* const schemas = new std::vector<std::string>{
      R"({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "pet": {"enum": ["cat", "dog", "bird"]},
            "address": {"type": "object", "properties": {
                "city": {"type": "string", "maxLength": 6},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
              "required": ["city", "zip"], "additionalProperties": false},
            "happy": {"type": "boolean"}},
          "required": ["name", "age", "pet", "address"], "additionalProperties": false})",
      R"({"type": "array", "minItems": 1, "maxItems": 3, "items": {
            "type": "object", "properties": {
              "id": {"type": "integer"},
              "tags": {"type": "array", "maxItems": 3,
                       "items": {"type": "string", "maxLength": 4}}},
            "required": ["id", "tags"], "additionalProperties": false}})",
      R"({"type": "object", "properties": {
            "score": {"type": "number"},
            "label": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 5}]},
            "version": {"const": 2},
            "ratio": {"type": ["number", "null"], "minimum": 0, "exclusiveMaximum": 1}},
          "required": ["score", "label", "version"], "additionalProperties": false})",
  };
  return *schemas;
}

json JsonSchemaFormat(const std::string& schema) {
  return {{"type", "json_schema"},
          {"json_schema", {{"name", "reply"}, {"strict", true}, {"schema", json::parse(schema)}}}};
}

// A weather tool and a search tool, with bounded arguments.
json Tools() {
  return json::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "description": "The weather in a city",
      "parameters": {"type": "object", "properties": {
          "city": {"type": "string", "minLength": 1, "maxLength": 10},
          "unit": {"enum": ["celsius", "fahrenheit"]},
          "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["city", "unit"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "search",
      "parameters": {"type": "object", "properties": {
          "query": {"type": "string", "maxLength": 12},
          "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
        "required": ["query"], "additionalProperties": false}}}
  ])");
}

// The parameters schema of the tool `name` in Tools().
std::string ParametersOf(const std::string& name) {
  for (const json& tool : Tools()) {
    if (tool["function"]["name"] == name) return tool["function"]["parameters"].dump();
  }
  return "";
}

// Expects `reply` to carry valid calls of Tools() (only of `only` when
// given), in OpenAI's shape, with finish reason "tool_calls".
void ExpectValidToolCalls(const Reply& reply, const std::string& only = "") {
  EXPECT_EQ(reply.status, 200) << reply.body.dump();
  EXPECT_EQ(reply.finish_reason, "tool_calls") << reply.content;
  ASSERT_FALSE(reply.tool_calls.empty()) << reply.content;
  std::vector<std::string> ids;
  for (const json& call : reply.tool_calls) {
    SCOPED_TRACE(call.dump());
    ASSERT_TRUE(call["id"].is_string());
    EXPECT_THAT(call["id"].get<std::string>(), ::testing::StartsWith("call_"));
    ids.push_back(call["id"].get<std::string>());
    EXPECT_EQ(call["type"], "function");
    const std::string name = call["function"]["name"].get<std::string>();
    if (!only.empty()) {
      EXPECT_EQ(name, only);
    }
    const std::string schema = ParametersOf(name);
    ASSERT_NE(schema, "") << "not one of the tools: " << name;
    ASSERT_TRUE(call["function"]["arguments"].is_string());
    EXPECT_EQ(ValidateJsonText(call["function"]["arguments"].get<std::string>(), schema), "");
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "tool call ids repeat";
}

json UserMessages(const std::string& text) {
  return json::array({{{"role", "user"}, {"content", text}}});
}

// One server per vocabulary, with a template that defines tool calls:
// qwen2 with Qwen3's (<tool_call> blocks), llama-spm with Llama 3.1's
// (JSON calls).
class StructuredServeTest : public ::testing::TestWithParam<Vocab> {
 protected:
  static void SetUpTestSuite() {
    for (Vocab vocab : {Vocab::kQwen2, Vocab::kLlamaSpm}) {
      servers_[vocab] = new ServerProcess(Artifact(vocab), VocabName(vocab),
                                          {"--api-key", kKey, "--sessions", "2", "--chat-template",
                                           vocab == Vocab::kQwen2 ? "qwen3" : "llama3.1"});
    }
  }
  static void TearDownTestSuite() {
    for (auto& [vocab, server] : servers_) delete server;
    servers_.clear();
  }
  static const ServerProcess& server() { return *servers_[GetParam()]; }

  static std::map<Vocab, ServerProcess*> servers_;
};

std::map<Vocab, ServerProcess*> StructuredServeTest::servers_;

TEST_P(StructuredServeTest, JsonSchemaChatRepliesValidate) {
  int tokens = 0;
  size_t bytes = 0;
  uint64_t seed = 1;
  for (const std::string& schema : Schemas()) {
    for (bool stream : {false, true}) {
      SCOPED_TRACE(absl::StrCat(stream ? "streamed " : "", schema));
      const Reply reply = Post(server(), "/v1/chat/completions",
                               {{"messages", UserMessages("Describe a person as JSON.")},
                                {"response_format", JsonSchemaFormat(schema)},
                                {"temperature", 1.0},
                                {"seed", seed++},
                                {"max_tokens", 1000}},
                               stream);
      ASSERT_EQ(reply.status, 200) << reply.body.dump();
      EXPECT_EQ(reply.finish_reason, "stop") << reply.content;
      EXPECT_EQ(ValidateJsonText(reply.content, schema), "") << reply.content;
      EXPECT_TRUE(reply.tool_calls.empty());
      tokens += reply.completion_tokens;
      bytes += reply.content.size();
    }
  }
  // Tokens of several bytes (`{"`, `":`, words) were picked, not only
  // single characters.
  EXPECT_LT(tokens, static_cast<int>(bytes));
}

// Posts `body` with each of `seeds`, streamed and not, sampling at
// temperature 1, and expects every reply to be complete JSON valid against
// `schema`.
void ExpectValidJsonReplies(const ServerProcess& server, const std::string& path, json body,
                            const std::string& schema, std::initializer_list<uint64_t> seeds) {
  body["temperature"] = 1.0;
  body["max_tokens"] = 1000;
  for (bool stream : {false, true}) {
    for (uint64_t seed : seeds) {
      SCOPED_TRACE(absl::StrCat(stream ? "streamed, seed " : "seed ", seed));
      body["seed"] = seed;
      const Reply reply = Post(server, path, body, stream);
      ASSERT_EQ(reply.status, 200) << reply.body.dump();
      EXPECT_EQ(reply.finish_reason, "stop") << reply.content;
      EXPECT_EQ(ValidateJsonText(reply.content, schema), "") << reply.content;
    }
  }
}

TEST_P(StructuredServeTest, JsonSchemaCompletionsValidate) {
  const std::string& schema = Schemas()[1];
  ExpectValidJsonReplies(
      server(), "/v1/completions",
      {{"prompt", "A list of items:"}, {"response_format", JsonSchemaFormat(schema)}}, schema,
      {11, 12});
}

TEST_P(StructuredServeTest, JsonObjectRepliesAreObjects) {
  // Any JSON object: strings and objects are unbounded, and a random
  // model would rarely close them (a closing quote is a few hundred tokens
  // of the vocabulary); favouring the closing punctuation ends them.
  ExpectValidJsonReplies(server(), "/v1/chat/completions",
                         {{"messages", UserMessages("Any JSON object, please.")},
                          {"response_format", {{"type", "json_object"}}},
                          {"logit_bias", ClosingBias(GetParam())}},
                         R"({"type": "object"})", {21, 22});
}

TEST_P(StructuredServeTest, RequiredToolCallsValidate) {
  uint64_t seed = 31;
  for (bool stream : {false, true}) {
    for (const json& choice :
         {json("required"), json{{"type", "function"}, {"function", {{"name", "search"}}}}}) {
      SCOPED_TRACE(absl::StrCat(stream ? "streamed, " : "", choice.dump()));
      const Reply reply = Post(server(), "/v1/chat/completions",
                               {{"messages", UserMessages("What is the weather in Paris?")},
                                {"tools", Tools()},
                                {"tool_choice", choice},
                                {"temperature", 1.0},
                                {"seed", seed++},
                                {"max_tokens", 1000}},
                               stream);
      ExpectValidToolCalls(reply, choice.is_object() ? "search" : "");
      if (!stream && reply.status == 200) {
        EXPECT_TRUE(reply.body["choices"][0]["message"]["content"].is_null());
      }
      if (GetParam() == Vocab::kLlamaSpm) {
        EXPECT_EQ(reply.tool_calls.size(), 1u);
      }
    }
  }
}

TEST_P(StructuredServeTest, ToolConversationsRenderAndAutoRepliesHaveTheShape) {
  // A whole tool round trip in the history: the assistant's call and the
  // tool's result.
  const json messages = json::parse(R"([
    {"role": "system", "content": "You call tools."},
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"unit\": \"celsius\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 3}"}
  ])");
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    // "auto": the model chooses between text and calls (constrained to
    // be valid); a random one writes text, which comes back as content.
    const Reply reply =
        Post(server(), "/v1/chat/completions",
             {{"messages", messages}, {"tools", Tools()}, {"temperature", 0}, {"max_tokens", 8}},
             stream);
    ASSERT_EQ(reply.status, 200) << reply.body.dump();
    if (reply.tool_calls.empty()) {
      EXPECT_EQ(reply.finish_reason, "length");
      EXPECT_FALSE(reply.content.empty());
    } else {
      ExpectValidToolCalls(reply);
    }
    // The same history with a required call.
    const Reply required = Post(server(), "/v1/chat/completions",
                                {{"messages", messages},
                                 {"tools", Tools()},
                                 {"tool_choice", "required"},
                                 {"temperature", 1.0},
                                 {"seed", 41},
                                 {"max_tokens", 1000}},
                                stream);
    ExpectValidToolCalls(required);
  }
}

// Expects `text` (content, whole or a streamed delta) to show no tag of
// the templates' tool calls.
void ExpectNoToolCallTags(const std::string& text) {
  EXPECT_THAT(text, ::testing::Not(HasSubstr("tool_call>"))) << text;
}

TEST_P(StructuredServeTest, AutoWritesTextWhenNoCallIsBegun) {
  // With the tokens that begin a call banned, "auto" (the default with
  // tools) is text; streamed and whole replies agree.
  const json body = {{"messages", UserMessages("Tell me a story.")},
                     {"tools", Tools()},
                     {"temperature", 0},
                     {"max_tokens", 12},
                     {"logit_bias", CallOpeningTokens(GetParam(), -100)}};
  std::vector<std::string> contents;
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    const Reply reply = Post(server(), "/v1/chat/completions", body, stream);
    ASSERT_EQ(reply.status, 200) << reply.body.dump();
    EXPECT_EQ(reply.finish_reason, "length");
    EXPECT_TRUE(reply.tool_calls.empty()) << reply.tool_calls.dump();
    EXPECT_FALSE(reply.content.empty());
    ExpectNoToolCallTags(reply.content);
    contents.push_back(reply.content);
  }
  EXPECT_EQ(contents[0], contents[1]);
}

TEST_P(StructuredServeTest, AutoCallsAreWellFormedCallsOfTheTools) {
  // A model that begins a call under "auto" must finish it: one of the
  // tools, arguments valid against its parameters (required fields, enums,
  // bounded strings, no other properties).
  const json bias = CallOpeningTokens(GetParam(), 100);
  uint64_t seed = 51;
  for (bool stream : {false, true}) {
    for (int i = 0; i < 2; ++i) {
      SCOPED_TRACE(absl::StrCat(stream ? "streamed, seed " : "seed ", seed));
      const Reply reply = Post(server(), "/v1/chat/completions",
                               {{"messages", UserMessages("What is the weather in Paris?")},
                                {"tools", Tools()},
                                {"tool_choice", "auto"},
                                {"temperature", 1.0},
                                {"seed", seed++},
                                {"max_tokens", 1000},
                                {"logit_bias", bias}},
                               stream);
      ExpectValidToolCalls(reply);
      EXPECT_EQ(reply.content, "");
      for (const json& call : reply.tool_calls) {
        if (call["function"]["name"] != "get_weather") continue;
        const json arguments = json::parse(call["function"]["arguments"].get<std::string>());
        EXPECT_TRUE(arguments.contains("city") && arguments.contains("unit")) << arguments;
      }
    }
  }
}

TEST_P(StructuredServeTest, ParallelToolCallsAllowsSeveralCallsOrOne) {
  if (GetParam() != Vocab::kQwen2) GTEST_SKIP() << "Llama 3.1 JSON tool calling is one call";
  // Calls begun at once and no end of generation while another call may
  // follow: as many calls as a reply may hold. (-99, not -100, which bans
  // the end, leaving no token when the grammar allows only the end.)
  json bias = CallOpeningTokens(GetParam(), 100);
  bias.update(BiasTokens(GetParam(), -99, [](const framework::Tokenizer& tokenizer, int32_t id) {
    return tokenizer.IsEndOfGeneration(id);
  }));
  for (bool parallel : {true, false}) {
    for (bool stream : {false, true}) {
      SCOPED_TRACE(absl::StrCat(parallel ? "parallel" : "one call", stream ? ", streamed" : ""));
      const Reply reply = Post(server(), "/v1/chat/completions",
                               {{"messages", UserMessages("Weather in Oslo, Rome and Lima?")},
                                {"tools", Tools()},
                                {"parallel_tool_calls", parallel},
                                {"temperature", 1.0},
                                {"seed", 71},
                                {"max_tokens", 1000},
                                {"logit_bias", bias}},
                               stream);
      ExpectValidToolCalls(reply);
      // tools/npu-serve/reply_format.h: kMaxParallelToolCalls.
      EXPECT_EQ(reply.tool_calls.size(), parallel ? 8u : 1u);
    }
  }
}

TEST_P(StructuredServeTest, StreamedCallDeltasAddUpToTheWholeReply) {
  json body = {{"messages", UserMessages("Weather in Oslo?")},
               {"tools", Tools()},
               {"temperature", 0},
               {"max_tokens", 1000},
               {"logit_bias", CallOpeningTokens(GetParam(), 100)}};
  const Reply whole = Post(server(), "/v1/chat/completions", body, false);
  ExpectValidToolCalls(whole);
  body["stream"] = true;
  httplib::Client client = server().Client();
  client.set_read_timeout(600, 0);
  const serve::testing::Stream events = PostStream(std::move(client), "/v1/chat/completions", body);
  ASSERT_EQ(events.status, 200);
  EXPECT_TRUE(events.done);
  ExpectNoToolCallTags(events.text);
  // OpenAI's shape: a call's first delta has its index, id, type and name
  // (and arguments ""); the next ones only the index and more arguments.
  json calls = json::array();
  std::string finish_reason;
  for (const json& chunk : events.chunks) {
    ASSERT_EQ(chunk["choices"].size(), 1u) << chunk.dump();
    const json& choice = chunk["choices"][0];
    if (choice["finish_reason"].is_string()) finish_reason = choice["finish_reason"];
    const json& delta = choice["delta"];
    if (delta.contains("content")) ExpectNoToolCallTags(delta["content"].get<std::string>());
    if (!delta.contains("tool_calls")) continue;
    ASSERT_EQ(delta["tool_calls"].size(), 1u) << chunk.dump();
    const json& call = delta["tool_calls"][0];
    const size_t index = call["index"].get<size_t>();
    if (index == calls.size()) {
      EXPECT_THAT(call["id"].get<std::string>(), ::testing::StartsWith("call_"));
      EXPECT_EQ(call["type"], "function");
      EXPECT_EQ(call["function"]["arguments"], "");
      calls.push_back({{"name", call["function"]["name"]}, {"arguments", ""}});
      continue;
    }
    ASSERT_EQ(index + 1, calls.size()) << "a delta for a call that is not the last begun";
    EXPECT_FALSE(call.contains("id"));
    EXPECT_FALSE(call["function"].contains("name"));
    calls[index]["arguments"] = calls[index]["arguments"].get<std::string>() +
                                call["function"]["arguments"].get<std::string>();
  }
  EXPECT_EQ(finish_reason, "tool_calls");
  ASSERT_EQ(calls.size(), whole.tool_calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i]["name"], whole.tool_calls[i]["function"]["name"]);
    EXPECT_EQ(calls[i]["arguments"], whole.tool_calls[i]["function"]["arguments"]);
  }
}

TEST_P(StructuredServeTest, LogitBiasBanningEveryAllowedTokenGets400) {
  // A boolean's first token begins with whitespace, 't' or 'f': banning
  // all of those leaves the grammar nothing to pick.
  const json body = {
      {"messages", UserMessages("Yes or no?")},
      {"response_format", JsonSchemaFormat(R"({"type": "boolean"})")},
      {"logit_bias",
       BiasTokens(GetParam(), -100, [](const framework::Tokenizer& tokenizer, int32_t id) {
         const std::string bytes = tokenizer.TokenBytes(id);
         return !bytes.empty() && std::string_view(" \t\n\rtf").find(bytes[0]) != std::string_view::npos;
       })}};
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream);
    const Reply reply = Post(server(), "/v1/chat/completions", body, stream);
    ASSERT_EQ(reply.status, 400);
    if (stream) continue;  // the stream's status only
    const json& error = reply.body["error"];
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_EQ(error["param"], "logit_bias");
    EXPECT_THAT(error["message"].get<std::string>(),
                HasSubstr("logit_bias bans every token the response format or tool grammar "
                          "allows after 0 generated tokens"));
  }
}

TEST_P(StructuredServeTest, BadResponseFormatsAndToolsGet400NamingTheField) {
  struct Case {
    json body;
    std::string param;
    std::string says;
  };
  const json messages = UserMessages("x");
  const std::vector<Case> cases = {
      {{{"messages", messages},
        {"response_format",
         JsonSchemaFormat(R"({"type": "integer", "minimum": 3, "multipleOf": 3})")}},
       "response_format",
       "'multipleOf'"},
      {{{"messages", messages},
        {"response_format", JsonSchemaFormat(R"({"type": "object", "properties": {"a":
            {"type": "array", "uniqueItems": true}}})")}},
       "response_format",
       "'uniqueItems' at /properties/a"},
      {{{"messages", messages}, {"response_format", {{"type", "yaml"}}}},
       "response_format",
       "json_schema"},
      {{{"messages", messages}, {"response_format", {{"type", "json_schema"}}}},
       "response_format",
       "json_schema"},
      {{{"messages", messages}, {"tools", {{{"type", "function"}}}}}, "tools", "name"},
      {{{"messages", messages},
        {"tools", Tools()},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "x"}}}}}},
       "tool_choice",
       "not among the tools"},
      {{{"messages", messages}, {"tool_choice", "required"}}, "tool_choice", "tools"},
      {{{"messages", messages},
        {"tools", json::parse(R"([{"type": "function", "function": {"name": "f",
            "parameters": {"type": "object", "properties": {"n": {"type": "number",
            "multipleOf": 2}}}}}])")},
        {"tool_choice", "required"}},
       "tools",
       "'multipleOf'"},
      {{{"messages", messages},
        {"tools", Tools()},
        {"tool_choice", "required"},
        {"response_format", {{"type", "json_object"}}}},
       "response_format",
       "tool_choice"},
      // "auto" (the default) constrains calls too, so the tools' schemas
      // must be valid and enforceable.
      {{{"messages", messages},
        {"tools", json::parse(R"([{"type": "function", "function": {"name": "f",
            "parameters": {"type": "object", "properties": {"n": {"type": "number",
            "multipleOf": 2}}}}}])")}},
       "tools",
       "'multipleOf'"},
      {{{"messages", messages},
        {"tools", json::parse(R"([{"type": "function", "function": {"name": "g",
            "parameters": {"type": "object", "properties": {"n": {"type": "decimal"}}}}}])")},
        {"tool_choice", "auto"}},
       "tools",
       "tool \"g\""},
      {{{"messages", messages}, {"tools", Tools()}, {"response_format", {{"type", "json_object"}}}},
       "response_format",
       "tool_choice \"none\""},
      {{{"messages", messages}, {"tools", Tools()}, {"parallel_tool_calls", "yes"}},
       "parallel_tool_calls",
       "true or false"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.dump());
    const Reply reply = Post(server(), "/v1/chat/completions", c.body, false);
    ASSERT_EQ(reply.status, 400);
    const json& error = reply.body["error"];
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_EQ(error["param"], c.param);
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(c.says));
  }
  const Reply completions =
      Post(server(), "/v1/completions", {{"prompt", "x"}, {"tools", Tools()}}, false);
  EXPECT_EQ(completions.status, 400);
  EXPECT_EQ(completions.body["error"]["param"], "tools");
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, StructuredServeTest,
                         ::testing::Values(Vocab::kQwen2, Vocab::kLlamaSpm),
                         [](const ::testing::TestParamInfo<Vocab>& info) {
                           return VocabName(info.param);
                         });

TEST(StructuredServeTemplateTest, TemplatesWithoutToolCallingRefuseTools) {
  // The qwen2 vocabulary's own template is plain ChatML: no tool calling.
  ServerProcess server(Artifact(Vocab::kQwen2), "chatml", {"--api-key", kKey});
  const Reply tools = Post(server, "/v1/chat/completions",
                           {{"messages", UserMessages("x")}, {"tools", Tools()}}, false);
  ASSERT_EQ(tools.status, 400);
  EXPECT_EQ(tools.body["error"]["param"], "tools");
  EXPECT_THAT(tools.body["error"]["message"].get<std::string>(),
              HasSubstr("defines no tool calling"));
  // A tool result in the history cannot be rendered either.
  const Reply history = Post(server, "/v1/chat/completions",
                             {{"messages", json::parse(R"([{"role": "user", "content": "x"},
                                    {"role": "tool", "content": "3"}])")}},
                             false);
  ASSERT_EQ(history.status, 400);
  EXPECT_THAT(history.body["error"]["message"].get<std::string>(),
              HasSubstr("does not define tool calling"));
  // Structured output needs no template support.
  const Reply json_reply = Post(server, "/v1/chat/completions",
                                {{"messages", UserMessages("x")},
                                 {"response_format", JsonSchemaFormat(Schemas()[2])},
                                 {"temperature", 1.0},
                                 {"seed", 5},
                                 {"max_tokens", 1000}},
                                false);
  ASSERT_EQ(json_reply.status, 200) << json_reply.body.dump();
  EXPECT_EQ(ValidateJsonText(json_reply.content, Schemas()[2]), "") << json_reply.content;
}

}  // namespace
}  // namespace lnpu
