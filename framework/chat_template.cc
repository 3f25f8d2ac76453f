#include "framework/chat_template.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "framework/tokenizer/utf8.h"
#include "nlohmann/json.hpp"

namespace lnpu::framework {
namespace {

constexpr std::array<std::pair<ChatFamily, std::string_view>, 11> kFamilyNames = {{
    {ChatFamily::kChatMl, "chatml"},
    {ChatFamily::kLlama3, "llama3"},
    {ChatFamily::kLlama31, "llama3.1"},
    {ChatFamily::kLlama2, "llama2"},
    {ChatFamily::kZephyr, "zephyr"},
    {ChatFamily::kPhi3, "phi3"},
    {ChatFamily::kPhi4, "phi4"},
    {ChatFamily::kGemma, "gemma"},
    {ChatFamily::kQwen3, "qwen3"},
    {ChatFamily::kMistralV3, "mistral-v3"},
    {ChatFamily::kMistralTekken, "mistral-tekken"},
}};

bool Contains(std::string_view text, std::string_view marker) {
  return text.find(marker) != std::string_view::npos;
}

// Python's str.isspace, which Jinja's trim filter and str.strip() use.
bool IsPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// `text` (well-formed UTF-8) without leading whitespace, as Python's
// lstrip() produces.
std::string_view StripLeft(std::string_view text) {
  while (!text.empty()) {
    const utf8::DecodedChar c = utf8::DecodeChar(text);
    if (c.kind != utf8::DecodedChar::Kind::kValid || !IsPythonSpace(c.code_point)) {
      break;
    }
    text.remove_prefix(c.length);
  }
  return text;
}

// `text` (well-formed UTF-8) without trailing whitespace (rstrip()).
std::string_view StripRight(std::string_view text) {
  while (!text.empty()) {
    size_t start = text.size() - 1;  // back to the last character's lead byte
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
      --start;
    }
    const utf8::DecodedChar c = utf8::DecodeChar(text.substr(start));
    if (c.kind != utf8::DecodedChar::Kind::kValid || !IsPythonSpace(c.code_point)) {
      break;
    }
    text.remove_suffix(text.size() - start);
  }
  return text;
}

// Jinja's trim and Python's strip().
std::string_view Strip(std::string_view text) { return StripRight(StripLeft(text)); }

// Python's lstrip('\n') and rstrip('\n').
std::string_view StripNewlinesLeft(std::string_view text) {
  text.remove_prefix(std::min(text.find_first_not_of('\n'), text.size()));
  return text;
}
std::string_view StripNewlinesRight(std::string_view text) {
  const size_t last = text.find_last_not_of('\n');
  return text.substr(0, last == std::string_view::npos ? 0 : last + 1);
}

// Collects a prompt as segments: the template's own text (its special
// tokens are parsed) and message content (plain text). Empty text is
// dropped and adjacent text of one kind joined.
class PromptBuilder {
 public:
  PromptBuilder& Template(std::string_view text) { return Add(text, true); }
  PromptBuilder& Content(std::string_view text) { return Add(text, false); }
  // Appends `segments` (already of their kind).
  PromptBuilder& Append(const std::vector<TextSegment>& segments) {
    for (const TextSegment& segment : segments) Add(segment.text, segment.parse_special);
    return *this;
  }
  // Strips leading and trailing whitespace off the whole prompt, across
  // segments, as strip() on the joined text would.
  PromptBuilder& Strip() {
    while (!segments_.empty()) {
      std::string& text = segments_.front().text;
      text.erase(0, text.size() - StripLeft(text).size());
      if (!text.empty()) break;
      segments_.erase(segments_.begin());
    }
    while (!segments_.empty()) {
      std::string& text = segments_.back().text;
      text.resize(StripRight(text).size());
      if (!text.empty()) break;
      segments_.pop_back();
    }
    return *this;
  }
  std::vector<TextSegment> Take() { return std::move(segments_); }

 private:
  PromptBuilder& Add(std::string_view text, bool parse_special) {
    if (text.empty()) return *this;
    if (!segments_.empty() && segments_.back().parse_special == parse_special) {
      segments_.back().text.append(text);
    } else {
      segments_.push_back({std::string(text), parse_special});
    }
    return *this;
  }

  std::vector<TextSegment> segments_;
};

// A Jinja string literal's text with its escapes (\n, \t, \', \", \\)
// resolved.
std::string Unescape(std::string_view literal) {
  std::string out;
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal[i] != '\\' || i + 1 == literal.size()) {
      out += literal[i];
      continue;
    }
    const char next = literal[++i];
    out += next == 'n' ? '\n' : next == 't' ? '\t' : next;
  }
  return out;
}

// The system prompt a ChatML template writes as one literal when the
// conversation has none: the text of '<|im_start|>system\n...<|im_end|>'
// that is not followed by the message's content.
std::optional<std::string> DefaultSystemPrompt(std::string_view jinja) {
  constexpr std::string_view kStart = "<|im_start|>system";
  constexpr std::string_view kEnd = "<|im_end|>";
  for (size_t at = jinja.find(kStart); at != std::string_view::npos;
       at = jinja.find(kStart, at + 1)) {
    std::string_view rest = jinja.substr(at + kStart.size());
    if (rest.substr(0, 2) == "\\n") {
      rest.remove_prefix(2);
    } else if (rest.substr(0, 1) == "\n") {
      rest.remove_prefix(1);
    } else {
      continue;
    }
    if (rest.empty() || rest[0] == '\'' || rest[0] == '"') continue;
    const size_t end = rest.find(kEnd);
    const std::string_view text = rest.substr(0, end);
    // One literal: no quote that would end it before <|im_end|>.
    if (end == std::string_view::npos ||
        text.find_first_of("'\"{}") != std::string_view::npos) {
      continue;
    }
    return Unescape(text);
  }
  return std::nullopt;
}

absl::Status UnsupportedTemplate(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the model's chat template (", absl::string_view(what.data(), what.size()),
      ") is not of a supported family; supported: ", SupportedChatFamilies(),
      ". Pass --chat-template FAMILY to choose one"));
}

// Rejects tools, tool calls and "tool" messages unless `tools_support`.
absl::Status CheckMessages(absl::Span<const ChatMessage> messages,
                           absl::Span<const std::string> tools, bool tools_support,
                           ChatFamily family) {
  if (messages.empty()) {
    return absl::InvalidArgumentError(
        "the conversation has no messages: add at least a user message");
  }
  const auto no_tools = [family](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(
        absl::string_view(what.data(), what.size()), ": the ",
        absl::string_view(ChatFamilyName(family).data(), ChatFamilyName(family).size()),
        " chat template does not define tool calling (templates that do: qwen3, llama3.1, "
        "and ChatML templates with <tool_call> blocks such as Qwen2.5's)"));
  };
  if (!tools.empty() && !tools_support) return no_tools("tools were given");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role == "tool" || !messages[i].tool_calls.empty()) {
      if (!tools_support) {
        return no_tools(
            absl::StrCat("message ", i, role == "tool" ? " is a tool result" : " has tool calls"));
      }
    } else if (role != "system" && role != "user" && role != "assistant") {
      return absl::InvalidArgumentError(absl::StrCat(
          "message ", i, " has role \"", role, "\"; use \"system\", \"user\" or \"assistant\"",
          tools_support ? " (or \"tool\")" : ""));
    }
    if (!messages[i].tool_calls.empty() && role != "assistant") {
      return absl::InvalidArgumentError(
          absl::StrCat("message ", i, " has tool calls but is not an assistant message"));
    }
    // Validate() fails with InvalidArgument.
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(utf8::Validate(messages[i].content), "message ", i,
                                     " content is not well-formed UTF-8: ");
  }
  return absl::OkStatus();
}

using Json = nlohmann::ordered_json;

// `text` as a JSON object; InvalidArgument naming `what` otherwise.
absl::StatusOr<Json> ParseObject(std::string_view text, std::string_view what) {
  Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::string_view(what.data(), what.size()), " is not a JSON object: ",
                     absl::string_view(text.data(), std::min<size_t>(text.size(), 200))));
  }
  return value;
}

// Jinja's tojson as chat templates run it: Python's json.dumps with
// ensure_ascii=False, so ", " and ": " separators when `indent` < 0, else
// one item per line (which nlohmann writes the same way).
std::string PythonJson(const Json& value, int indent = -1) {
  constexpr auto kReplace = nlohmann::detail::error_handler_t::replace;
  if (indent >= 0) return value.dump(indent, ' ', false, kReplace);
  if (value.is_object()) {
    std::string out = "{";
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (it != value.begin()) out += ", ";
      absl::StrAppend(&out, Json(it.key()).dump(-1, ' ', false, kReplace), ": ",
                      PythonJson(it.value()));
    }
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < value.size(); ++i) {
      absl::StrAppend(&out, i == 0 ? "" : ", ", PythonJson(value[i]));
    }
    return out + "]";
  }
  return value.dump(-1, ' ', false, kReplace);
}

// The tool definitions, parsed; InvalidArgument naming the one that is
// not a JSON object.
absl::StatusOr<std::vector<Json>> ParseTools(absl::Span<const std::string> tools) {
  std::vector<Json> parsed;
  for (size_t i = 0; i < tools.size(); ++i) {
    LNPU_ASSIGN_OR_RETURN(Json tool, ParseObject(tools[i], absl::StrCat("tool ", i)));
    parsed.push_back(std::move(tool));
  }
  return parsed;
}

// The "# Tools" system text of Qwen2.5 and Qwen3 (after the system
// message and a blank line, if any).
void AppendHermesTools(PromptBuilder& out, std::optional<std::string_view> system,
                       const std::vector<Json>& tools) {
  out.Template("<|im_start|>system\n");
  if (system.has_value()) out.Content(*system).Template("\n\n");
  out.Template(
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
  for (const Json& tool : tools) out.Template("\n").Content(PythonJson(tool));
  out.Template(
      "\n</tools>\n\nFor each function call, return a json object with function name and "
      "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
      "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
}

// One <tool_call> block of Qwen2.5 / Qwen3; `arguments` as the template
// writes them.
void AppendHermesCall(PromptBuilder& out, std::string_view name, std::string_view arguments) {
  out.Template("<tool_call>\n{\"name\": \"").Content(name).Template("\", \"arguments\": ");
  out.Content(arguments).Template("}\n</tool_call>");
}

// A "tool" message of Qwen2.5 / Qwen3: consecutive results share one user
// turn.
void AppendHermesToolResult(PromptBuilder& out, absl::Span<const ChatMessage> messages, size_t i) {
  if (i == 0 || messages[i - 1].role != "tool") out.Template("<|im_start|>user");
  out.Template("\n<tool_response>\n").Content(messages[i].content);
  out.Template("\n</tool_response>");
  if (i + 1 == messages.size() || messages[i + 1].role != "tool") out.Template("<|im_end|>\n");
}

// The calls of message `i`, their arguments parsed.
absl::StatusOr<std::vector<Json>> ParseArguments(const ChatMessage& message, size_t i) {
  std::vector<Json> arguments;
  for (size_t j = 0; j < message.tool_calls.size(); ++j) {
    LNPU_ASSIGN_OR_RETURN(Json parsed, ParseObject(message.tool_calls[j].arguments,
                                                   absl::StrCat("the arguments of tool call ", j,
                                                                " of message ", i)));
    arguments.push_back(std::move(parsed));
  }
  return arguments;
}

// The content of the first message if it is a system message, which is
// then taken off `messages`.
std::optional<std::string_view> TakeSystem(absl::Span<const ChatMessage>& messages) {
  if (messages.front().role != "system") return std::nullopt;
  const std::string_view system = messages.front().content;
  messages.remove_prefix(1);
  return system;
}

// Error unless `turns` alternate user/assistant starting with user, as
// the templates of `family` require after an optional first system
// message (`system` tells whether there was one).
absl::Status CheckAlternating(absl::Span<const ChatMessage> turns, bool system,
                              std::string_view family) {
  for (size_t i = 0; i < turns.size(); ++i) {
    const std::string_view expected = i % 2 == 0 ? "user" : "assistant";
    if (turns[i].role != expected) {
      return absl::InvalidArgumentError(absl::StrCat(
          "message ", i + (system ? 1 : 0), " has role \"", turns[i].role, "\" where ",
          absl::string_view(family.data(), family.size()), " expects \"",
          absl::string_view(expected.data(), expected.size()),
          "\": after an optional first system message, turns must alternate "
          "user/assistant starting with user"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

ReasoningReply SplitReasoning(std::string_view reply) {
  constexpr std::string_view kOpen = "<think>";
  constexpr std::string_view kClose = "</think>";
  const size_t close = reply.find(kClose);
  if (close == std::string_view::npos) {
    const size_t open = reply.find(kOpen);
    if (open == std::string_view::npos) return {"", std::string(reply)};
    return {std::string(StripNewlinesLeft(reply.substr(open + kOpen.size()))), ""};
  }
  std::string_view reasoning = StripNewlinesRight(reply.substr(0, close));
  if (const size_t open = reasoning.rfind(kOpen); open != std::string_view::npos) {
    reasoning.remove_prefix(open + kOpen.size());
  }
  return {std::string(StripNewlinesLeft(reasoning)),
          std::string(StripNewlinesLeft(reply.substr(reply.rfind(kClose) + kClose.size())))};
}

std::string_view ChatFamilyName(ChatFamily family) {
  for (const auto& [f, name] : kFamilyNames) {
    if (f == family) return name;
  }
  return "unknown";
}

absl::StatusOr<ChatFamily> ParseChatFamily(std::string_view name) {
  for (const auto& [family, family_name] : kFamilyNames) {
    if (family_name == name) return family;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown chat template family \"", std::string(name),
                   "\"; supported: ", SupportedChatFamilies()));
}

std::string SupportedChatFamilies() {
  std::string names;
  for (const auto& [family, name] : kFamilyNames) {
    absl::StrAppend(&names, names.empty() ? "" : ", ",
                    absl::string_view(name.data(), name.size()));
  }
  return names;
}

ChatSpecialTokens SpecialTokensOf(const Tokenizer& tokenizer) {
  const Vocabulary& vocabulary = tokenizer.vocabulary();
  ChatSpecialTokens tokens;
  if (vocabulary.bos_id >= 0) tokens.bos = vocabulary.tokens[vocabulary.bos_id];
  if (vocabulary.eos_id >= 0) tokens.eos = vocabulary.tokens[vocabulary.eos_id];
  tokens.add_bos = vocabulary.add_bos;
  return tokens;
}

absl::StatusOr<ChatTemplate> ChatTemplate::Detect(
    std::string_view jinja, const ChatSpecialTokens& tokens) {
  if (Strip(jinja).empty()) {
    return absl::NotFoundError(absl::StrCat(
        "the model has no chat template; pass --chat-template FAMILY, one of ",
        SupportedChatFamilies()));
  }
  if (Contains(jinja, "<start_of_turn>")) return ChatTemplate(ChatFamily::kGemma, tokens);
  if (Contains(jinja, "<|im_start|>") && Contains(jinja, "<think>") &&
      Contains(jinja, "reasoning_content")) {
    return ChatTemplate(ChatFamily::kQwen3, tokens);
  }
  if (Contains(jinja, "<|im_start|>")) {
    ChatTemplate chat(ChatFamily::kChatMl, tokens);
    chat.default_system_prompt_ = DefaultSystemPrompt(jinja);
    chat.chatml_tools_ = Contains(jinja, "<tool_call>");
    return chat;
  }
  if (Contains(jinja, "<|start_header_id|>")) {
    return ChatTemplate(Contains(jinja, "Cutting Knowledge Date")
                            ? ChatFamily::kLlama31
                            : ChatFamily::kLlama3,
                        tokens);
  }
  if (Contains(jinja, "[INST]")) {
    if (Contains(jinja, "<<SYS>>")) return ChatTemplate(ChatFamily::kLlama2, tokens);
    if (Contains(jinja, "\"[INST]\"") || Contains(jinja, "'[INST]'")) {
      return ChatTemplate(ChatFamily::kMistralTekken, tokens);
    }
    if (Contains(jinja, "[INST] ") && !Contains(jinja, " [/INST]")) {
      return ChatTemplate(ChatFamily::kMistralV3, tokens);
    }
    return UnsupportedTemplate("[INST] turns ending in \" [/INST]\", as Mistral v0.1's");
  }
  // Phi-4-mini: '<|assistant|>' with no newline after it, as the whole
  // generation prompt.
  if (Contains(jinja, "<|end|>") &&
      (Contains(jinja, "'<|assistant|>' }}") || Contains(jinja, "'<|assistant|>' -}}"))) {
    return ChatTemplate(ChatFamily::kPhi4, tokens);
  }
  if (Contains(jinja, "<|user|>")) {
    if (Contains(jinja, "<|end|>")) return ChatTemplate(ChatFamily::kPhi3, tokens);
    if (Contains(jinja, "eos_token")) {
      return ChatTemplate(ChatFamily::kZephyr, tokens);
    }
    return UnsupportedTemplate("<|user|> turns ended by neither <|end|> nor EOS");
  }
  return UnsupportedTemplate("no known turn markers");
}

ChatTemplate ChatTemplate::ForFamily(ChatFamily family,
                                     const ChatSpecialTokens& tokens) {
  return ChatTemplate(family, tokens);
}

ChatTemplate ChatTemplate::WithDateString(std::string date_string) const {
  ChatTemplate copy = *this;
  copy.date_string_ = std::move(date_string);
  return copy;
}

ChatTemplate ChatTemplate::WithThinking(bool enable_thinking) const {
  ChatTemplate copy = *this;
  copy.enable_thinking_ = enable_thinking;
  return copy;
}

std::string_view ChatTemplate::LeadingBos() const {
  return tokens_.add_bos ? std::string_view() : std::string_view(tokens_.bos);
}

bool ChatTemplate::supports_tools() const {
  return family_ == ChatFamily::kQwen3 || family_ == ChatFamily::kLlama31 ||
         (family_ == ChatFamily::kChatMl && chatml_tools_);
}

absl::StatusOr<std::string> ChatTemplate::Render(absl::Span<const ChatMessage> messages,
                                                 bool add_generation_prompt,
                                                 absl::Span<const std::string> tools) const {
  LNPU_ASSIGN_OR_RETURN(const std::vector<TextSegment> segments,
                        RenderSegments(messages, add_generation_prompt, tools));
  std::string text;
  for (const TextSegment& segment : segments) text += segment.text;
  return text;
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderSegments(
    absl::Span<const ChatMessage> messages, bool add_generation_prompt,
    absl::Span<const std::string> tools) const {
  LNPU_RETURN_IF_ERROR(CheckMessages(messages, tools, supports_tools(), family_));
  switch (family_) {
    case ChatFamily::kChatMl:
      return RenderChatMl(messages, add_generation_prompt, tools);
    case ChatFamily::kLlama3:
    case ChatFamily::kLlama31:
      return RenderLlama3(messages, add_generation_prompt, tools);
    case ChatFamily::kLlama2:
      return RenderLlama2(messages);
    case ChatFamily::kZephyr:
    case ChatFamily::kPhi3:
    case ChatFamily::kPhi4:
      return RenderTagged(messages, add_generation_prompt);
    case ChatFamily::kGemma:
      return RenderGemma(messages, add_generation_prompt);
    case ChatFamily::kQwen3:
      return RenderQwen3(messages, add_generation_prompt, tools);
    case ChatFamily::kMistralV3:
    case ChatFamily::kMistralTekken:
      return RenderMistral(messages);
  }
  return absl::InternalError("unknown chat family");
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderChatMl(
    absl::Span<const ChatMessage> messages, bool add_generation_prompt,
    absl::Span<const std::string> tools) const {
  PromptBuilder out;
  if (!tools.empty()) {
    // Qwen2.5: the system message (or the default one), then the tools.
    LNPU_ASSIGN_OR_RETURN(const std::vector<Json> parsed, ParseTools(tools));
    std::optional<std::string_view> system = TakeSystem(messages);
    if (!system.has_value() && default_system_prompt_.has_value()) {
      system = *default_system_prompt_;
    }
    AppendHermesTools(out, system, parsed);
  } else if (messages.front().role != "system" && default_system_prompt_.has_value()) {
    out.Template("<|im_start|>system\n").Template(*default_system_prompt_);
    out.Template("<|im_end|>\n");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool") {
      AppendHermesToolResult(out, messages, i);
      continue;
    }
    if (m.tool_calls.empty()) {
      out.Template("<|im_start|>").Template(m.role).Template("\n");
      out.Content(m.content).Template("<|im_end|>\n");
      continue;
    }
    // Qwen2.5 writes the arguments with tojson.
    LNPU_ASSIGN_OR_RETURN(const std::vector<Json> arguments, ParseArguments(m, i));
    out.Template("<|im_start|>assistant");
    if (!m.content.empty()) out.Template("\n").Content(m.content);
    for (size_t j = 0; j < m.tool_calls.size(); ++j) {
      out.Template("\n");
      AppendHermesCall(out, m.tool_calls[j].name, PythonJson(arguments[j]));
    }
    out.Template("<|im_end|>\n");
  }
  if (add_generation_prompt) out.Template("<|im_start|>assistant\n");
  return out.Take();
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderLlama3(
    absl::Span<const ChatMessage> messages, bool add_generation_prompt,
    absl::Span<const std::string> tools) const {
  // `content` as given: the caller trims what the template trims. `preamble`
  // is template text before it.
  auto append_turn = [](PromptBuilder& out, std::string_view role, std::string_view preamble,
                        std::string_view content) {
    out.Template("<|start_header_id|>").Template(role).Template("<|end_header_id|>\n\n");
    out.Template(preamble).Content(content).Template("<|eot_id|>");
  };
  PromptBuilder out;
  out.Template(LeadingBos());
  if (family_ == ChatFamily::kLlama31) {
    // The system turn is always there: the dates, then the system message.
    std::string_view system;
    if (messages.front().role == "system") {
      system = Strip(messages.front().content);
      messages.remove_prefix(1);
    }
    append_turn(
        out, "system",
        absl::StrCat(tools.empty() ? "" : "Environment: ipython\n",
                     "Cutting Knowledge Date: December 2023\nToday Date: ", date_string_, "\n\n"),
        system);
    if (!tools.empty()) {
      // Llama 3.1's tools_in_user_message: the tools go before the first
      // user message's content.
      LNPU_ASSIGN_OR_RETURN(const std::vector<Json> parsed, ParseTools(tools));
      if (messages.empty() || messages.front().role != "user") {
        return absl::InvalidArgumentError(
            "llama3.1 puts the tools into the first user message: give a user message first "
            "(after an optional system message)");
      }
      PromptBuilder preamble;
      preamble.Template(
          "Given the following functions, please respond with a JSON for a function call "
          "with its proper arguments that best answers the given prompt.\n\n"
          "Respond in the format {\"name\": function name, \"parameters\": dictionary of "
          "argument name and its value}.Do not use variables.\n\n");
      for (const Json& tool : parsed) preamble.Content(PythonJson(tool, 4)).Template("\n\n");
      out.Template("<|start_header_id|>user<|end_header_id|>\n\n").Append(preamble.Take());
      out.Content(Strip(messages.front().content)).Template("<|eot_id|>");
      messages.remove_prefix(1);
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool") {
      // The template writes a result with tojson (a string is iterable).
      append_turn(out, "ipython", "", PythonJson(Json(m.content)));
    } else if (!m.tool_calls.empty()) {
      if (m.tool_calls.size() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("message ", i, " has ", m.tool_calls.size(),
                         " tool calls: llama3.1 supports one tool call per assistant message"));
      }
      LNPU_ASSIGN_OR_RETURN(const std::vector<Json> arguments, ParseArguments(m, i));
      out.Template("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"");
      out.Content(m.tool_calls[0].name).Template("\", \"parameters\": ");
      out.Content(PythonJson(arguments.front())).Template("}<|eot_id|>");
    } else {
      append_turn(out, m.role, "", Strip(m.content));
    }
  }
  if (add_generation_prompt) {
    out.Template("<|start_header_id|>assistant<|end_header_id|>\n\n");
  }
  return out.Take();
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderLlama2(
    absl::Span<const ChatMessage> messages) const {
  const std::optional<std::string_view> system = TakeSystem(messages);
  if (system.has_value()) {
    if (messages.empty()) {
      return absl::InvalidArgumentError(
          "llama2 folds the system message into the first user message: add "
          "a user message after it");
    }
  }
  LNPU_RETURN_IF_ERROR(CheckAlternating(messages, system.has_value(), "llama2"));
  PromptBuilder out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      // The template strips the user content with the system block
      // prepended to it.
      PromptBuilder content;
      if (i == 0 && system.has_value()) {
        content.Template("<<SYS>>\n").Content(*system).Template("\n<</SYS>>\n\n");
      }
      content.Content(m.content).Strip();
      out.Template(i == 0 ? LeadingBos() : std::string_view(tokens_.bos));
      out.Template("[INST] ").Append(content.Take()).Template(" [/INST]");
    } else {
      out.Template(" ").Content(Strip(m.content)).Template(" ").Template(tokens_.eos);
    }
  }
  return out.Take();
}

std::vector<TextSegment> ChatTemplate::RenderTagged(absl::Span<const ChatMessage> messages,
                                                    bool add_generation_prompt) const {
  // Zephyr ends a turn with EOS, Phi-3 and Phi-4 with <|end|>; Phi-4-mini
  // has no newlines after the role tag and the turn.
  const std::string_view end =
      family_ == ChatFamily::kZephyr ? std::string_view(tokens_.eos) : "<|end|>";
  const std::string_view newline = family_ == ChatFamily::kPhi4 ? "" : "\n";
  PromptBuilder out;
  for (const ChatMessage& m : messages) {
    out.Template("<|").Template(m.role).Template("|>").Template(newline).Content(m.content);
    out.Template(end).Template(newline);
  }
  if (add_generation_prompt) {
    out.Template("<|assistant|>").Template(newline);
  } else if (family_ != ChatFamily::kZephyr) {
    out.Template(tokens_.eos);
  }
  return out.Take();
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderGemma(
    absl::Span<const ChatMessage> messages, bool add_generation_prompt) const {
  // Gemma has no system turn: Gemma 3's template puts the system message,
  // then a blank line, before the first user message.
  const std::optional<std::string_view> system = TakeSystem(messages);
  LNPU_RETURN_IF_ERROR(CheckAlternating(messages, system.has_value(), "gemma"));
  PromptBuilder out;
  out.Template(LeadingBos());
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    out.Template("<start_of_turn>").Template(m.role == "assistant" ? "model" : m.role);
    out.Template("\n");
    if (i == 0 && system.has_value()) out.Content(*system).Template("\n\n");
    out.Content(Strip(m.content)).Template("<end_of_turn>\n");
  }
  if (add_generation_prompt) out.Template("<start_of_turn>model\n");
  return out.Take();
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderQwen3(
    absl::Span<const ChatMessage> messages, bool add_generation_prompt,
    absl::Span<const std::string> tools) const {
  // Assistant turns after the last user message keep their reasoning in a
  // <think> block; earlier ones keep only the answer.
  size_t last_query = messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role == "user") {
      last_query = i;
      break;
    }
  }
  PromptBuilder out;
  size_t first = 0;
  if (!tools.empty()) {
    LNPU_ASSIGN_OR_RETURN(const std::vector<Json> parsed, ParseTools(tools));
    std::optional<std::string_view> system;
    if (messages.front().role == "system") {
      system = messages.front().content;
      first = 1;
    }
    AppendHermesTools(out, system, parsed);
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool") {
      AppendHermesToolResult(out, messages, i);
      continue;
    }
    out.Template("<|im_start|>").Template(m.role).Template("\n");
    if (m.role != "assistant") {
      out.Content(m.content).Template("<|im_end|>\n");
      continue;
    }
    const bool has_reasoning = Contains(m.content, "</think>");
    const ReasoningReply reply =
        has_reasoning ? SplitReasoning(m.content) : ReasoningReply{"", m.content};
    if (i > last_query && (i + 1 == messages.size() || !reply.reasoning.empty())) {
      out.Template("<think>\n").Content(StripNewlinesRight(StripNewlinesLeft(reply.reasoning)));
      out.Template("\n</think>\n\n").Content(StripNewlinesLeft(reply.answer));
    } else {
      out.Content(reply.answer);
    }
    // Qwen3 writes the arguments text as given.
    LNPU_RETURN_IF_ERROR(ParseArguments(m, i).status());
    for (size_t j = 0; j < m.tool_calls.size(); ++j) {
      if (j > 0 || !reply.answer.empty()) out.Template("\n");
      AppendHermesCall(out, m.tool_calls[j].name, m.tool_calls[j].arguments);
    }
    out.Template("<|im_end|>\n");
  }
  if (add_generation_prompt) {
    out.Template("<|im_start|>assistant\n");
    if (!enable_thinking_) out.Template("<think>\n\n</think>\n\n");
  }
  return out.Take();
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderMistral(
    absl::Span<const ChatMessage> messages) const {
  // The system message goes before the last user message.
  const std::optional<std::string_view> system = TakeSystem(messages);
  const std::string_view family = ChatFamilyName(family_);
  LNPU_RETURN_IF_ERROR(CheckAlternating(messages, system.has_value(), family));
  const bool tekken = family_ == ChatFamily::kMistralTekken;
  PromptBuilder out;
  out.Template(LeadingBos());
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out.Template(tekken ? "[INST]" : "[INST] ");
      if (i + 1 == messages.size() && system.has_value()) {
        out.Content(*system).Template("\n\n");
      }
      out.Content(m.content).Template("[/INST]");
    } else if (tekken) {
      out.Content(m.content).Template(tokens_.eos);
    } else {
      out.Template(" ").Content(Strip(m.content)).Template(tokens_.eos);
    }
  }
  return out.Take();
}

}  // namespace lnpu::framework
