// What a request asks of its reply beyond text: the grammar that
// constrains generation (response_format json_object / json_schema, or
// tool_choice "required" / a named function), and the tool calls to find
// in the generated text (whenever tools are given and tool_choice is not
// "none"), as a whole reply or while it streams.
//
// Tool calls are written in the chat template's format
// (framework/structured_output/tool_calls.h): Qwen2.5 / Qwen3 <tool_call>
// blocks (kHermes), Llama 3.1 JSON (kLlama3Json). With tool_choice "auto"
// generation is not constrained: the model chooses, and a reply whose
// calls do not parse is returned as content.
//
// Pure functions and a per-request filter; the functions are thread-safe,
// a ToolCallStreamFilter is used by one thread at a time.
#ifndef TOOLS_NPU_SERVE_REPLY_FORMAT_H_
#define TOOLS_NPU_SERVE_REPLY_FORMAT_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

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

// The ReplyFormat of `request` rendered with `chat_template` (when the
// request is a chat; the template's error otherwise). A 400 with param
// "tools" when the request has tools (or tool messages) and the template
// defines no tool calling, or when tool_choice requires calls and a tool's
// parameters schema cannot be enforced (naming the tool and the keyword).
std::variant<ReplyFormat, ApiError> ReplyFormatOf(
    const CompletionRequest& request, const absl::StatusOr<framework::ChatTemplate>& chat_template);

// A reply's text as OpenAI's message: the content outside the calls and
// the calls. Without a format, or when the calls do not parse, all text is
// content.
struct ReplyMessage {
  std::string content;
  std::vector<framework::structured_output::ToolCall> calls;
};
ReplyMessage ParseReply(std::optional<framework::structured_output::ToolCallFormat> format,
                        std::string_view text);

// Streams the content of a reply that may hold tool calls: text that
// cannot be part of a call goes out at once; from where a call may begin
// (kHermes: a "<tool_call>" tag, or a prefix of one at the end of the text
// so far; kLlama3Json: a reply whose first non-blank character is '{' or
// '<') the text is held until the end, when it becomes the calls, or
// content if it holds none.
class ToolCallStreamFilter {
 public:
  explicit ToolCallStreamFilter(framework::structured_output::ToolCallFormat format)
      : format_(format) {}

  // Appends generated text; returns the content that can be sent now.
  std::string Push(std::string_view text);
  // At the end of the reply: the held content not sent yet, and the calls.
  ReplyMessage Finish() const;

 private:
  framework::structured_output::ToolCallFormat format_;
  std::string text_;           // all text so far
  size_t sent_ = 0;            // bytes of text_ returned by Push
  bool holding_ = false;       // a call may have begun at sent_
  bool content_only_ = false;  // kLlama3Json: the reply is not a call
};

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_REPLY_FORMAT_H_
