// Encodes completions in OpenAI's wire format: the JSON of a whole
// response, the chunks of a stream as server-sent events, usage, and
// /v1/models.
//
// Pure functions; thread-safe. Text that is not well-formed UTF-8 (it
// cannot be: the framework streams whole characters) would be written
// with U+FFFD replacements rather than fail.
#ifndef TOOLS_NPU_SERVE_OPENAI_RESPONSE_H_
#define TOOLS_NPU_SERVE_OPENAI_RESPONSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "framework/generation.h"
#include "framework/structured_output/tool_calls.h"
#include "tools/npu-serve/openai_request.h"

namespace lnpu::serve {

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // prompt tokens taken from the prefix cache
};

// What every response and chunk of one request shares.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::kChatCompletions;
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// "stop" for kStop ("tool_calls" when `tool_calls`: the reply made
// calls), "length" for kLength; a cancelled generation (the client went
// away) reports "stop" too, as it is never seen by a client.
std::string_view OpenAiFinishReason(framework::FinishReason reason, bool tool_calls = false);

// The id of the `index`th tool call of the response `header` ("call_...").
std::string ToolCallId(const ResponseHeader& header, size_t index);

// The non-streaming response: one choice with the whole text; a chat
// message with `calls` carries them as tool_calls (content null when
// `text` is empty) and finish reason "tool_calls".
std::string CompletionJson(const ResponseHeader& header, std::string_view text,
                           framework::FinishReason reason, const Usage& usage,
                           absl::Span<const framework::structured_output::ToolCall> calls = {});

// One server-sent event "data: JSON\n\n" of a stream. A chunk carries a
// text delta; the first chunk of a chat stream also carries the role; the
// last one the finish reason (an OpenAiFinishReason; and no text).
std::string ChunkEvent(const ResponseHeader& header, std::string_view delta, bool first,
                       std::optional<std::string_view> finish_reason);
// A chat chunk whose delta carries a part of tool call number `index`:
// with `name`, its start (index, id, type, function name and the first
// `arguments`, often ""); without, the next text of its
// function.arguments (and the index). The role too when `first`.
std::string ToolCallDeltaEvent(const ResponseHeader& header, size_t index,
                               std::optional<std::string_view> name, std::string_view arguments,
                               bool first);
// The usage chunk (stream_options.include_usage): no choices.
std::string UsageEvent(const ResponseHeader& header, const Usage& usage);
// An error inside a stream whose HTTP status was already sent.
std::string ErrorEvent(std::string_view error_body);
// "data: [DONE]\n\n".
std::string_view DoneEvent();

// GET /v1/models with the one model.
std::string ModelsJson(std::string_view model_id, int64_t created);

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_OPENAI_RESPONSE_H_
