// The chat templates' fuzz target (parser_targets.h).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "framework/chat_template.h"
#include "framework/tokenizer/utf8.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/parser_targets.h"

namespace lnpu::fuzz {
namespace {

using framework::ChatFamily;
using framework::ChatMessage;
using framework::ChatTemplate;
using framework::TextSegment;

constexpr ChatFamily kFamilies[] = {ChatFamily::kChatMl, ChatFamily::kLlama3,
                                    ChatFamily::kLlama31, ChatFamily::kLlama2,
                                    ChatFamily::kZephyr, ChatFamily::kPhi3};

bool HasVisibleAscii(std::string_view text) {
  for (char c : text) {
    if (c > ' ' && c < 0x7F) return true;
  }
  return false;
}

// The concatenated texts of the segments with `parse_special`.
std::string Joined(absl::Span<const TextSegment> segments, bool parse_special) {
  std::string text;
  for (const TextSegment& s : segments) {
    if (s.parse_special == parse_special) text += s.text;
  }
  return text;
}

// Detect or ForFamily, as the flags say; nullopt when Detect fails (as it
// may), after checking how it fails.
std::optional<ChatTemplate> MakeTemplate(
    uint8_t flags, std::string_view jinja,
    const framework::ChatSpecialTokens& tokens, ParserRun& run) {
  const uint8_t selector = flags & 7;
  if (selector < 6) {
    const ChatFamily family = kFamilies[selector];
    const auto parsed =
        framework::ParseChatFamily(framework::ChatFamilyName(family));
    if (!parsed.ok() || *parsed != family) {
      run.Fail(absl::StrCat("ParseChatFamily does not invert ChatFamilyName for ",
                            selector));
    }
    return ChatTemplate::ForFamily(family, tokens);
  }
  absl::StatusOr<ChatTemplate> detected = ChatTemplate::Detect(jinja, tokens);
  if (detected.ok()) return *std::move(detected);
  const absl::StatusCode code = detected.status().code();
  if (jinja.empty() && code != absl::StatusCode::kNotFound) {
    run.Fail("Detect of an empty template is not NotFound");
  }
  if (HasVisibleAscii(jinja) && code == absl::StatusCode::kNotFound) {
    run.Fail("Detect of a non-blank template is NotFound");
  }
  if (code != absl::StatusCode::kNotFound &&
      code != absl::StatusCode::kInvalidArgument) {
    run.Fail(absl::StrCat("Detect fails with ", detected.status().ToString()));
  }
  return std::nullopt;
}

void CheckSegments(absl::Span<const TextSegment> segments,
                   absl::Span<const ChatMessage> messages, ParserRun& run) {
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].text.empty()) run.Fail("an empty segment");
    if (i > 0 && segments[i].parse_special == segments[i - 1].parse_special) {
      run.Fail("adjacent segments agree in parse_special");
    }
  }
  std::string contents;
  for (const ChatMessage& m : messages) contents += m.content;
  for (const TextSegment& s : segments) {
    if (s.parse_special) continue;
    // A template may write content as a JSON string (Llama 3.1's tool
    // results, with tojson): then its value is the content.
    bool is_content = contents.find(s.text) != std::string::npos;
    if (!is_content && s.text.size() >= 2 && s.text.front() == '"' && s.text.back() == '"') {
      const nlohmann::json value = nlohmann::json::parse(s.text, nullptr, false);
      is_content = value.is_string() && contents.find(value.get<std::string>()) != std::string::npos;
    }
    if (!is_content) {
      run.Fail(absl::StrCat("the plain segment \"", s.text,
                            "\" is not message content"));
    }
  }
}

}  // namespace

ParserRun RunChatTemplateTarget(absl::Span<const uint8_t> input) {
  ParserRun run;
  const uint8_t flags = input.empty() ? 0 : input[0];
  if (!input.empty()) input.remove_prefix(1);
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(reinterpret_cast<const char*>(input.data()),
                        input.size()),
      '\0');
  auto field = [&](size_t i) {
    return i < fields.size() ? std::string(fields[i]) : std::string();
  };
  framework::ChatSpecialTokens tokens{field(1), field(2), (flags & 8) != 0};
  const std::optional<ChatTemplate> chat =
      MakeTemplate(flags, field(0), tokens, run);
  if (!chat.has_value()) return run;
  // "tool" (a tool's result) is a role only for templates with tools.
  std::vector<ChatMessage> messages;
  bool expect_rejected = fields.size() <= 3;
  for (size_t i = 3; i < fields.size(); i += 2) {
    messages.push_back({field(i), field(i + 1)});
    const std::string& role = messages.back().role;
    const bool known_role = role == "system" || role == "user" || role == "assistant" ||
                            (role == "tool" && chat->supports_tools());
    expect_rejected |= !framework::utf8::Validate(messages.back().content).ok() || !known_role;
  }

  const bool generation_prompt = (flags & 16) != 0;
  const absl::StatusOr<std::string> text =
      chat->Render(messages, generation_prompt);
  const absl::StatusOr<std::vector<TextSegment>> segments =
      chat->RenderSegments(messages, generation_prompt);
  run.accepted = text.ok();
  if (text.ok() != segments.ok()) {
    run.Fail("Render and RenderSegments disagree on accepting");
    return run;
  }
  if (!text.ok()) {
    if (text.status().code() != absl::StatusCode::kInvalidArgument) {
      run.Fail(absl::StrCat("Render fails with ", text.status().ToString()));
    }
    return run;
  }
  if (expect_rejected) {
    run.Fail("Render accepts no messages, an unknown role or ill-formed content");
  }
  std::string joined;
  for (const TextSegment& s : *segments) joined += s.text;
  if (joined != *text) run.Fail("RenderSegments' text differs from Render's");
  CheckSegments(*segments, messages, run);

  // The template's own text does not depend on what the messages say.
  // (Except that a blank content lets a template's strip reach the
  // template text next to it: Llama 2 strips "<<SYS>>...\n\n" + content.)
  for (const ChatMessage& m : messages) {
    if (!HasVisibleAscii(m.content)) return run;
  }
  std::vector<ChatMessage> neutral = messages;
  for (ChatMessage& m : neutral) m.content.assign(1, 'x');  // not = "x": GCC 12 -Wrestrict false positive
  const auto neutral_segments = chat->RenderSegments(neutral, generation_prompt);
  if (!neutral_segments.ok()) {
    run.Fail("rendering fails once every content is \"x\"");
  } else if (Joined(*neutral_segments, true) != Joined(*segments, true)) {
    run.Fail("the template's own text depends on message content");
  }
  return run;
}

}  // namespace lnpu::fuzz
