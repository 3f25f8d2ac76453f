#include "tools/npu-serve/reply_format.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lnpu::serve {
namespace {

namespace so = framework::structured_output;

constexpr std::string_view kHermesOpen = "<tool_call>";

}  // namespace

std::optional<so::ToolCallFormat> ToolCallFormatOf(const framework::ChatTemplate& chat_template) {
  if (!chat_template.supports_tools()) return std::nullopt;
  return chat_template.family() == framework::ChatFamily::kLlama31 ? so::ToolCallFormat::kLlama3Json
                                                                   : so::ToolCallFormat::kHermes;
}

std::variant<ReplyFormat, ApiError> ReplyFormatOf(
    const CompletionRequest& request,
    const absl::StatusOr<framework::ChatTemplate>& chat_template) {
  ReplyFormat reply{.grammar = request.response_grammar};
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
  if (request.tool_choice == ToolChoice::kAuto) return reply;
  const std::optional<std::string_view> forced =
      request.tool_choice == ToolChoice::kFunction
          ? std::optional<std::string_view>(request.forced_tool)
          : std::nullopt;
  absl::StatusOr<std::shared_ptr<const so::Grammar>> grammar =
      so::ToolCallGrammar(*format, request.tools, forced);
  if (!grammar.ok()) {
    return InvalidRequest(absl::StrCat("cannot enforce the tool calls that tool_choice requires: ",
                                       grammar.status().message()),
                          "tools");
  }
  reply.grammar = *std::move(grammar);
  return reply;
}

ReplyMessage ParseReply(std::optional<so::ToolCallFormat> format, std::string_view text) {
  if (format.has_value()) {
    absl::StatusOr<so::ParsedReply> parsed = so::ParseToolCalls(*format, text);
    if (parsed.ok() && !parsed->calls.empty()) {
      return {std::move(parsed->content), std::move(parsed->calls)};
    }
  }
  return {std::string(text), {}};
}

std::string ToolCallStreamFilter::Push(std::string_view text) {
  text_.append(text);
  if (holding_) return "";
  size_t end = text_.size();
  if (format_ == so::ToolCallFormat::kLlama3Json) {
    if (!content_only_) {
      const size_t first = text_.find_first_not_of(" \t\r\n");
      if (first == std::string::npos) return "";  // blank so far: undecided
      holding_ = text_[first] == '{' || text_[first] == '<';
      content_only_ = !holding_;
      if (holding_) return "";
    }
  } else if (const size_t tag = text_.find(kHermesOpen, sent_); tag != std::string::npos) {
    holding_ = true;
    end = tag;
  } else {
    // Holds back an end of the text that may be the start of the tag.
    for (size_t k = std::min(kHermesOpen.size() - 1, text_.size() - sent_); k > 0; --k) {
      if (kHermesOpen.starts_with(std::string_view(text_).substr(text_.size() - k))) {
        end = text_.size() - k;
        break;
      }
    }
  }
  std::string out = text_.substr(sent_, end - sent_);
  sent_ = end;
  return out;
}

ReplyMessage ToolCallStreamFilter::Finish() const {
  const std::string_view held = std::string_view(text_).substr(sent_);
  if (!holding_) return {std::string(held), {}};
  return ParseReply(format_, held);
}

}  // namespace lnpu::serve
