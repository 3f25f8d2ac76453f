#include "tools/npu-serve/reply_format.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace lnpu::serve {
namespace {

namespace so = framework::structured_output;

}  // namespace

std::optional<so::ToolCallFormat> ToolCallFormatOf(const framework::ChatTemplate& chat_template) {
  if (!chat_template.supports_tools()) return std::nullopt;
  return chat_template.family() == framework::ChatFamily::kLlama31 ? so::ToolCallFormat::kLlama3Json
                                                                   : so::ToolCallFormat::kHermes;
}

std::variant<ReplyFormat, ApiError> ReplyFormatOf(
    const CompletionRequest& request,
    const absl::StatusOr<framework::ChatTemplate>& chat_template) {
  ReplyFormat reply{.grammar = request.response_grammar, .tool_calls = std::nullopt};
  // Without a template, rendering the prompt reports why.
  if (request.tools.empty() || !chat_template.ok()) return reply;
  const std::optional<so::ToolCallFormat> format = ToolCallFormatOf(*chat_template);
  if (!format.has_value()) {
    return InvalidRequest(
        absl::StrCat("this model's chat template (",
                     std::string(framework::ChatFamilyName(chat_template->family())),
                     ") defines no tool calling, so 'tools' cannot be used: serve a model whose "
                     "template does (Qwen2.5, Qwen3, Llama 3.1-3.3), or start npu-serve with "
                     "--chat-template qwen3 or llama3.1 if the model was trained on one of them"),
        "tools");
  }
  if (request.tool_choice == ToolChoice::kNone) return reply;
  reply.tool_calls = format;
  so::ToolCallRule rule{.allow_text = request.tool_choice == ToolChoice::kAuto,
                        .max_calls = request.parallel_tool_calls ? kMaxParallelToolCalls : 1};
  if (request.tool_choice == ToolChoice::kFunction) rule.forced_name = request.forced_tool;
  absl::StatusOr<std::shared_ptr<const so::Grammar>> grammar =
      so::ToolCallGrammar(*format, request.tools, rule);
  if (!grammar.ok()) {
    return InvalidRequest(absl::StrCat("cannot enforce the tool calls that tool_choice allows: ",
                                       grammar.status().message()),
                          "tools");
  }
  reply.grammar = *std::move(grammar);
  return reply;
}

}  // namespace lnpu::serve
