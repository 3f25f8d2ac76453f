// What a request asks of its reply beyond text: the grammar that
// constrains generation (response_format json_object / json_schema, or
// the tool calls tool_choice allows), and the format of the tool calls to
// find in the generated text (whenever tools are given and tool_choice is
// not "none"; framework/structured_output/tool_calls.h's ToolCallParser
// finds them, in a whole reply or while it streams).
//
// Tool calls are written in the chat template's format: Qwen2.5 / Qwen3
// <tool_call> blocks (kHermes), Llama 3.1 JSON (kLlama3Json). Every mode
// with tools is constrained: "auto" lets the model write text or calls,
// "required" calls only, a named function calls of it only; every call
// names one of the tools and has arguments valid against its parameters
// schema. parallel_tool_calls false allows one call (kLlama3Json always
// allows one).
//
// Pure functions; thread-safe.
#ifndef TOOLS_NPU_SERVE_REPLY_FORMAT_H_
#define TOOLS_NPU_SERVE_REPLY_FORMAT_H_

#include <memory>
#include <optional>
#include <variant>

#include "absl/status/statusor.h"
#include "framework/chat_template.h"
#include "framework/structured_output/grammar.h"
#include "framework/structured_output/tool_calls.h"
#include "tools/npu-serve/api_error.h"
#include "tools/npu-serve/openai_request.h"

namespace lnpu::serve {

// How the model writes tool calls under `chat_template`; std::nullopt when
// the template defines no tool calling.
std::optional<framework::structured_output::ToolCallFormat> ToolCallFormatOf(
    const framework::ChatTemplate& chat_template);

struct ReplyFormat {
  // Constrains every token of the reply; null: unconstrained.
  std::shared_ptr<const framework::structured_output::Grammar> grammar;
  // Set when the reply may hold tool calls in this format.
  std::optional<framework::structured_output::ToolCallFormat> tool_calls;
};

// Calls per reply when parallel_tool_calls is true.
inline constexpr int kMaxParallelToolCalls = 8;

// The ReplyFormat of `request` rendered with `chat_template` (when the
// request is a chat; the template's error otherwise). A 400 with param
// "tools" when the request has tools and the template defines no tool
// calling, or when tool_choice is not "none" and a tool's parameters
// schema cannot be enforced (naming the tool and the keyword).
std::variant<ReplyFormat, ApiError> ReplyFormatOf(
    const CompletionRequest& request, const absl::StatusOr<framework::ChatTemplate>& chat_template);

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_REPLY_FORMAT_H_
