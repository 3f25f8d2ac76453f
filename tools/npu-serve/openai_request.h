// Parses and validates the body of POST /v1/chat/completions and
// /v1/completions (OpenAI's wire format) into what generation needs.
//
// Accepted fields: model (any string: the server has one model), messages
// (chat; content a string or an array of {"type": "text", "text": ...}
// parts; roles system/user/assistant), prompt (completions; a string),
// max_tokens / max_completion_tokens, temperature, top_p, top_k, min_p,
// seed, stop (a string or up to 4 strings), presence_penalty,
// frequency_penalty, logit_bias ({"token id": bias in [-100, 100]}), n (1
// only), stream, stream_options.include_usage, user (ignored). Unknown
// fields are ignored, as OpenAI does. response_format other than
// {"type": "text"}, tools and tool_choice other than "none" are refused
// with 400 until structured output is supported.
//
// Defaults follow OpenAI: temperature 1, top_p 1; max_tokens defaults to
// the caller's limit (the cache capacity). Greedy decoding: temperature 0.
//
// Pure functions; thread-safe.
#ifndef TOOLS_NPU_SERVE_OPENAI_REQUEST_H_
#define TOOLS_NPU_SERVE_OPENAI_REQUEST_H_

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "framework/chat_template.h"
#include "framework/generation.h"
#include "tools/npu-serve/api_error.h"

namespace lnpu::serve {

enum class Endpoint { kChatCompletions, kCompletions };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string model;
  std::vector<framework::ChatMessage> messages;  // kChatCompletions
  std::string prompt;                            // kCompletions
  framework::GenerationConfig config;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

struct RequestLimits {
  int default_max_tokens = 128;  // when the request gives none
  int32_t vocab_size = 0;        // logit_bias ids must be below it
};

// The request in `body`, or the 400 error naming the field and what is
// wrong (malformed JSON, invalid UTF-8, a wrong type or range, n != 1,
// structured output).
std::variant<CompletionRequest, ApiError> ParseCompletionRequest(
    std::string_view body, Endpoint endpoint, const RequestLimits& limits);

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_OPENAI_REQUEST_H_
