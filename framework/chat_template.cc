#include "framework/chat_template.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/tokenizer/utf8.h"

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

absl::Status CheckMessages(absl::Span<const ChatMessage> messages) {
  if (messages.empty()) {
    return absl::InvalidArgumentError(
        "the conversation has no messages: add at least a user message");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      return absl::InvalidArgumentError(absl::StrCat(
          "message ", i, " has role \"", role,
          "\"; use \"system\", \"user\" or \"assistant\""));
    }
    if (absl::Status valid = utf8::Validate(messages[i].content); !valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("message ", i, " content is not well-formed UTF-8: ",
                       std::string(valid.message())));
    }
  }
  return absl::OkStatus();
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

absl::StatusOr<std::string> ChatTemplate::Render(
    absl::Span<const ChatMessage> messages, bool add_generation_prompt) const {
  absl::StatusOr<std::vector<TextSegment>> segments =
      RenderSegments(messages, add_generation_prompt);
  if (!segments.ok()) return segments.status();
  std::string text;
  for (const TextSegment& segment : *segments) text += segment.text;
  return text;
}

absl::StatusOr<std::vector<TextSegment>> ChatTemplate::RenderSegments(
    absl::Span<const ChatMessage> messages, bool add_generation_prompt) const {
  if (absl::Status valid = CheckMessages(messages); !valid.ok()) return valid;
  switch (family_) {
    case ChatFamily::kChatMl:
      return RenderChatMl(messages, add_generation_prompt);
    case ChatFamily::kLlama3:
    case ChatFamily::kLlama31:
      return RenderLlama3(messages, add_generation_prompt);
    case ChatFamily::kLlama2:
      return RenderLlama2(messages);
    case ChatFamily::kZephyr:
    case ChatFamily::kPhi3:
    case ChatFamily::kPhi4:
      return RenderTagged(messages, add_generation_prompt);
    case ChatFamily::kGemma:
      return RenderGemma(messages, add_generation_prompt);
    case ChatFamily::kQwen3:
      return RenderQwen3(messages, add_generation_prompt);
    case ChatFamily::kMistralV3:
    case ChatFamily::kMistralTekken:
      return RenderMistral(messages);
  }
  return absl::InternalError("unknown chat family");
}

std::vector<TextSegment> ChatTemplate::RenderChatMl(absl::Span<const ChatMessage> messages,
                                                    bool add_generation_prompt) const {
  PromptBuilder out;
  if (messages.front().role != "system" && default_system_prompt_.has_value()) {
    out.Template("<|im_start|>system\n").Template(*default_system_prompt_);
    out.Template("<|im_end|>\n");
  }
  for (const ChatMessage& m : messages) {
    out.Template("<|im_start|>").Template(m.role).Template("\n");
    out.Content(m.content).Template("<|im_end|>\n");
  }
  if (add_generation_prompt) out.Template("<|im_start|>assistant\n");
  return out.Take();
}

std::vector<TextSegment> ChatTemplate::RenderLlama3(absl::Span<const ChatMessage> messages,
                                                    bool add_generation_prompt) const {
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
    append_turn(out, "system",
                absl::StrCat("Cutting Knowledge Date: December 2023\nToday Date: ",
                             date_string_, "\n\n"),
                system);
  }
  for (const ChatMessage& m : messages) {
    append_turn(out, m.role, "", Strip(m.content));
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
  if (absl::Status alternating = CheckAlternating(messages, system.has_value(), "llama2");
      !alternating.ok()) {
    return alternating;
  }
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
  if (absl::Status alternating = CheckAlternating(messages, system.has_value(), "gemma");
      !alternating.ok()) {
    return alternating;
  }
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

std::vector<TextSegment> ChatTemplate::RenderQwen3(absl::Span<const ChatMessage> messages,
                                                   bool add_generation_prompt) const {
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
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
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
  if (absl::Status alternating = CheckAlternating(messages, system.has_value(), family);
      !alternating.ok()) {
    return alternating;
  }
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
