// Parses and validates the body of POST /v1/chat/completions and
// /v1/completions (OpenAI's wire format) into what generation needs.
//
// Accepted fields: model (any string: the server has one model), messages
// (chat; content a string or an array of {"type": "text", "text": ...}
// parts; roles system/developer/user/assistant/tool; assistant messages
// may carry tool_calls instead of content), prompt (completions; a
// string), max_tokens / max_completion_tokens, temperature, top_p, top_k,
// min_p, seed, stop (a string or up to 4 strings), presence_penalty,
// frequency_penalty, logit_bias ({"token id": bias in [-100, 100]}), n (1
// only), stream, stream_options.include_usage, user (ignored),
// response_format ({"type": "text"}, {"type": "json_object"}, {"type":
// "json_schema", "json_schema": {"name", "schema", "strict",
// "description"}}: the schema is compiled here, so an unsupported keyword
// is a 400 naming it), tools ({"type": "function", "function": {"name",
// "description", "parameters"}}; chat only) and tool_choice ("none",
// "auto", "required", {"type": "function", "function": {"name"}}),
// parallel_tool_calls (true or false). Unknown fields are ignored, as
// OpenAI does.
//
// Defaults follow OpenAI: temperature 1, top_p 1; max_tokens defaults to
// the caller's limit (the cache capacity). Greedy decoding: temperature 0.
//
// Pure functions; thread-safe.
#ifndef TOOLS_NPU_SERVE_OPENAI_REQUEST_H_
#define TOOLS_NPU_SERVE_OPENAI_REQUEST_H_

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "framework/chat_template.h"
#include "framework/generation.h"
#include "framework/structured_output/grammar.h"
#include "framework/structured_output/tool_calls.h"
#include "tools/npu-serve/api_error.h"

namespace lnpu::serve {

enum class Endpoint { kChatCompletions, kCompletions };

// OpenAI tool_choice; kAuto when tools are given without it.
enum class ToolChoice { kNone, kAuto, kRequired, kFunction };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string model;
  std::vector<framework::ChatMessage> messages;  // kChatCompletions
  std::string prompt;                            // kCompletions
  framework::GenerationConfig config;            // without a constraint
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // response_format json_object / json_schema: the grammar of the reply.
  std::shared_ptr<const framework::structured_output::Grammar> response_grammar;
  // The tools (kChatCompletions): each tools[] entry as JSON text for the
  // chat template, and its name and parameters schema.
  std::vector<std::string> tool_definitions;
  std::vector<framework::structured_output::ToolDefinition> tools;
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string forced_tool;  // kFunction: the function's name
  // parallel_tool_calls: false allows one call per reply.
  bool parallel_tool_calls = true;
};

struct RequestLimits {
  int default_max_tokens = 128;  // when the request gives none
  int32_t vocab_size = 0;        // logit_bias ids must be below it
};

// The request in `body`, or the 400 error naming the field and what is
// wrong (malformed JSON, invalid UTF-8, a wrong type or range, n != 1, a
// response_format schema that is invalid or uses an unsupported keyword,
// malformed tools, tool_choice naming no tool or given without tools,
// response_format json together with tools unless tool_choice is "none").
std::variant<CompletionRequest, ApiError> ParseCompletionRequest(
    std::string_view body, Endpoint endpoint, const RequestLimits& limits);

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_OPENAI_REQUEST_H_
