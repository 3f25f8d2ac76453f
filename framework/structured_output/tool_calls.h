// Tool calls in the formats chat models are trained on: the grammar that
// forces a reply to be tool calls (OpenAI tool_choice "required" or a
// named function), and the parser that finds the calls in generated text
// so a server can return them as OpenAI `tool_calls`.
//
// Formats:
//  - kHermes (Qwen2.5, Qwen3; the chat template's <tool_call> blocks):
//      <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>
//    one block per call, blocks separated by "\n".
//  - kLlama3Json (Llama 3.1-3.3 JSON tool calling): the whole reply is
//      {"name": "NAME", "parameters": {...}}
//    one call per reply.
//
// Thread-safe (no state).
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_TOOL_CALLS_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_TOOL_CALLS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "framework/structured_output/grammar.h"

namespace lnpu::framework::structured_output {

enum class ToolCallFormat {
  kHermes,
  kLlama3Json,
};

// A function the model may call (OpenAI tools[].function).
struct ToolDefinition {
  std::string name;
  // JSON Schema of the arguments object (OpenAI function.parameters).
  std::string parameters_schema = R"({"type": "object"})";
};

// One call found in generated text.
struct ToolCall {
  std::string name;
  std::string arguments;  // compact JSON text of the arguments object
};

struct ParsedReply {
  std::string content;          // the text outside tool calls, trimmed
  std::vector<ToolCall> calls;  // in order of appearance
};

// The grammar of a reply made only of tool calls of `tools` (only of the
// one named `forced_name` when given), each call's arguments valid against
// its parameters schema. kHermes allows up to `max_calls` calls (>= 1),
// kLlama3Json one. InvalidArgument for no tools, a forced name that is not
// among them, duplicate names or max_calls < 1; a parameters schema's
// errors (JsonSchemaGrammar), naming the tool.
absl::StatusOr<std::shared_ptr<const Grammar>> ToolCallGrammar(
    ToolCallFormat format, absl::Span<const ToolDefinition> tools,
    std::optional<std::string_view> forced_name = std::nullopt, int max_calls = 8);

// The tool calls in `text`. kHermes: every <tool_call> block (an
// unterminated last block is taken to the end of the text); InvalidArgument
// naming the block when one does not hold a JSON object with a string
// "name" and an object "arguments" (a JSON string holding an object is
// accepted too). kLlama3Json: the text (after an optional "<|python_tag|>")
// when it is one JSON object with a string "name" and an object
// "parameters" or "arguments"; otherwise no calls and the text as content.
absl::StatusOr<ParsedReply> ParseToolCalls(ToolCallFormat format, std::string_view text);

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_TOOL_CALLS_H_
