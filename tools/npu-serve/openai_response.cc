#include "tools/npu-serve/openai_response.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace lnpu::serve {
namespace {

using nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json UsageJson(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

json Envelope(const ResponseHeader& header, bool chunk) {
  const bool chat = header.endpoint == Endpoint::kChatCompletions;
  return {{"id", header.id},
          {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                          : "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"system_fingerprint", nullptr}};
}

std::string Event(const json& j) { return absl::StrCat("data: ", Dump(j), "\n\n"); }

// OpenAI's tool_calls array of a message.
json ToolCallsJson(const ResponseHeader& header,
                   absl::Span<const framework::structured_output::ToolCall> calls) {
  json array = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    array.push_back({{"id", ToolCallId(header, i)},
                     {"type", "function"},
                     {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
  }
  return array;
}

}  // namespace

std::string_view OpenAiFinishReason(framework::FinishReason reason, bool tool_calls) {
  if (reason == framework::FinishReason::kLength) return "length";
  return tool_calls ? "tool_calls" : "stop";
}

std::string ToolCallId(const ResponseHeader& header, size_t index) {
  const size_t dash = header.id.find('-');
  return absl::StrCat("call_", dash == std::string::npos ? header.id : header.id.substr(dash + 1),
                      "-", index);
}

std::string CompletionJson(const ResponseHeader& header, std::string_view text,
                           framework::FinishReason reason, const Usage& usage,
                           absl::Span<const framework::structured_output::ToolCall> calls) {
  const bool chat = header.endpoint == Endpoint::kChatCompletions;
  json choice = {{"index", 0},
                 {"finish_reason", OpenAiFinishReason(reason, chat && !calls.empty())},
                 {"logprobs", nullptr}};
  if (chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
    if (!calls.empty()) {
      if (text.empty()) choice["message"]["content"] = nullptr;
      choice["message"]["tool_calls"] = ToolCallsJson(header, calls);
    }
  } else {
    choice["text"] = text;
  }
  json response = Envelope(header, false);
  response["choices"] = json::array({std::move(choice)});
  response["usage"] = UsageJson(usage);
  return Dump(response);
}

std::string ChunkEvent(const ResponseHeader& header, std::string_view delta, bool first,
                       std::optional<std::string_view> finish) {
  json choice = {{"index", 0}, {"logprobs", nullptr}};
  choice["finish_reason"] = finish ? json(*finish) : json(nullptr);
  if (header.endpoint == Endpoint::kChatCompletions) {
    json d = json::object();
    if (first) d["role"] = "assistant";
    if (!finish) d["content"] = delta;
    choice["delta"] = std::move(d);
  } else {
    choice["text"] = delta;
  }
  json chunk = Envelope(header, true);
  chunk["choices"] = json::array({std::move(choice)});
  return Event(chunk);
}

std::string ToolCallDeltaEvent(const ResponseHeader& header, size_t index,
                               std::optional<std::string_view> name, std::string_view arguments,
                               bool first) {
  json call = {{"index", index}};
  if (name.has_value()) {
    call["id"] = ToolCallId(header, index);
    call["type"] = "function";
    call["function"] = {{"name", *name}, {"arguments", arguments}};
  } else {
    call["function"] = {{"arguments", arguments}};
  }
  json delta = {{"tool_calls", json::array({std::move(call)})}};
  if (first) delta["role"] = "assistant";
  json chunk = Envelope(header, true);
  chunk["choices"] = json::array({{{"index", 0},
                                   {"delta", std::move(delta)},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullptr}}});
  return Event(chunk);
}

std::string UsageEvent(const ResponseHeader& header, const Usage& usage) {
  json chunk = Envelope(header, true);
  chunk["choices"] = json::array();
  chunk["usage"] = UsageJson(usage);
  return Event(chunk);
}

std::string ErrorEvent(std::string_view error_body) {
  return std::string("data: ").append(error_body).append("\n\n");
}

std::string_view DoneEvent() { return "data: [DONE]\n\n"; }

std::string ModelsJson(std::string_view model_id, int64_t created) {
  return Dump({{"object", "list"},
               {"data", json::array({{{"id", model_id},
                                      {"object", "model"},
                                      {"created", created},
                                      {"owned_by", "lnpu"}}})}});
}

}  // namespace lnpu::serve
