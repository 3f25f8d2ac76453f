// Renders a conversation into the prompt text a chat model was trained on.
//
// A GGUF model carries its chat template as Jinja source
// (tokenizer.chat_template). A full Jinja engine is not needed for the
// supported families: Detect recognizes the family by the markers in the
// template text and Render reproduces, byte for byte, what the family's
// template renders (docs/chat-and-sampling.md lists the rules).
//
// Immutable after construction; every method is const and thread-safe.
#ifndef FRAMEWORK_CHAT_TEMPLATE_H_
#define FRAMEWORK_CHAT_TEMPLATE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "framework/tokenizer/tokenizer.h"

namespace lnpu::framework {

// A function call an assistant message made (OpenAI
// message.tool_calls[].function), rendered back by templates with tools.
struct ChatToolCall {
  std::string name;
  std::string arguments;  // the text of a JSON object
};

struct ChatMessage {
  // "system", "user", "assistant", or "tool" (a tool's result, for
  // templates with tools: ChatTemplate::supports_tools()).
  std::string role;
  std::string content;  // well-formed UTF-8
  // The calls of an assistant message (templates with tools only).
  std::vector<ChatToolCall> tool_calls = {};
};

enum class ChatFamily {
  kChatMl,   // <|im_start|>role\n...<|im_end|>\n (Qwen2, Qwen2.5, SmolLM, ...)
  kLlama3,   // Llama 3.0: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
  kLlama31,  // Llama 3.1-3.3: Llama 3 plus a system header with knowledge dates
  kLlama2,   // [INST] ... [/INST], <<SYS>> folded into the first user turn
  kZephyr,   // <|user|>\n...EOS\n (Zephyr, TinyLlama-chat)
  kPhi3,     // <|user|>\n...<|end|>\n (Phi-3, Phi-3.5)
  kPhi4,     // <|user|>...<|end|> without newlines (Phi-4-mini)
  kGemma,    // <start_of_turn>user\n...<end_of_turn>\n, "model" for assistant (Gemma 2, 3)
  kQwen3,    // ChatML with <think>...</think> reasoning blocks (Qwen3)
  kMistralV3,      // [INST] ...[/INST] reply</s> (Mistral 7B v0.3)
  kMistralTekken,  // [INST]...[/INST]reply</s> (Mistral Nemo, tekken vocabularies)
};

// "chatml", "llama3", "llama3.1", "llama2", "zephyr", "phi3", "phi4", "gemma",
// "qwen3", "mistral-v3", "mistral-tekken".
std::string_view ChatFamilyName(ChatFamily family);
// The family for one of the names above; InvalidArgument listing them
// otherwise.
absl::StatusOr<ChatFamily> ParseChatFamily(std::string_view name);
// The names above, comma-separated, for messages and help texts.
std::string SupportedChatFamilies();

// The tokenizer facts the templates refer to.
struct ChatSpecialTokens {
  // The spellings of the BOS and EOS tokens (the template's bos_token and
  // eos_token, e.g. "<s>"): Vocabulary::tokens[id], not TokenBytes, which
  // is empty for control tokens. May be empty.
  std::string bos;
  std::string eos;
  // Whether the tokenizer will prepend BOS when the rendered text is
  // encoded (Vocabulary::add_bos). Then Render leaves out the template's
  // leading bos_token so that the prompt does not start with BOS twice.
  bool add_bos = false;
};

// The ChatSpecialTokens of `tokenizer`'s vocabulary.
ChatSpecialTokens SpecialTokensOf(const Tokenizer& tokenizer);

// A reasoning model's reply split as Qwen3's template splits an assistant
// message: `reasoning` is the text between <think> and the first </think>
// (without the newlines next to the tags), `answer` the text after the last
// </think> (without leading newlines). A reply without </think> is all
// answer, unless it opens a <think> block that never closed (generation
// stopped while reasoning): then all of it after <think> is reasoning.
struct ReasoningReply {
  std::string reasoning;
  std::string answer;
};
ReasoningReply SplitReasoning(std::string_view reply);

class ChatTemplate {
 public:
  // Recognizes the family of `jinja_template` (GGUF tokenizer.chat_template)
  // by its markers: <|im_start|> (ChatML; a default system prompt the
  // template injects when the conversation has none, as Qwen2.5's does, is
  // taken over), <|start_header_id|> (Llama 3; with "Cutting Knowledge
  // Date", Llama 3.1), [INST] with <<SYS>> (Llama 2), <|user|> with <|end|>
  // (Phi-3) or with eos_token (Zephyr), <|end|> with a generation prompt
  // '<|assistant|>' without a newline (Phi-4-mini), <start_of_turn> (Gemma), <|im_start|> with <think>
  // and reasoning_content (Qwen3), [INST] without <<SYS>>: "[INST]" quoted
  // without a space (Mistral tekken) or "[INST] " without " [/INST]"
  // (Mistral v3). NotFound for an empty template and
  // InvalidArgument for one of no supported family, both naming the
  // supported families and the --chat-template FAMILY override.
  static absl::StatusOr<ChatTemplate> Detect(std::string_view jinja_template,
                                             const ChatSpecialTokens& tokens);

  // The family's template as its reference model ships it (ChatML without
  // a default system prompt; Llama 3.1 dated "26 Jul 2024").
  static ChatTemplate ForFamily(ChatFamily family,
                                const ChatSpecialTokens& tokens);

  ChatFamily family() const { return family_; }
  // The system prompt rendered when the conversation has none (ChatML
  // only), if any.
  const std::optional<std::string>& default_system_prompt() const {
    return default_system_prompt_;
  }

  // Llama 3.1's "Today Date: ..." line: "26 Jul 2024" (the template's
  // fallback) unless set, e.g. to today's date as "05 Mar 2025".
  ChatTemplate WithDateString(std::string date_string) const;

  // Qwen3's enable_thinking (default true): when false, the generation
  // prompt ends with an empty <think>\n\n</think>\n\n block so that the
  // model answers without reasoning. Other families ignore it.
  ChatTemplate WithThinking(bool enable_thinking) const;
  bool thinking() const { return enable_thinking_; }

  // Whether the template renders tool definitions, assistant tool calls
  // and "tool" messages: Qwen3, Llama 3.1, and ChatML templates that
  // define <tool_call> blocks (Qwen2.5's, as detected).
  bool supports_tools() const;

  // The prompt text for `messages`, ending with the start of an assistant
  // turn when `add_generation_prompt`. `tools` are the functions the model
  // may call, each an OpenAI tools[] entry as a JSON object's text
  // ({"type": "function", "function": {"name", "description",
  // "parameters"}}), rendered as the family's template renders them
  // (Python's json.dumps of the object, as Jinja's tojson). InvalidArgument,
  // naming the message, for no messages, a role other than
  // system/user/assistant (and tool, with tools support), content that is
  // not well-formed UTF-8, tools, tool calls or "tool" messages for a
  // template without tools support, tool arguments or definitions that are
  // not JSON objects, or a conversation the family cannot express (Llama 2,
  // Gemma, Mistral: a system message after the first, or turns that do not
  // alternate user/assistant starting with user; Llama 3.1 with tools: no
  // user message first, or an assistant message with more than one call).
  absl::StatusOr<std::string> Render(absl::Span<const ChatMessage> messages,
                                     bool add_generation_prompt,
                                     absl::Span<const std::string> tools = {}) const;

  // The same text as Render, in segments to tokenize with
  // Tokenizer::EncodeSegments: the template's own text (turn markers,
  // BOS/EOS texts, default system prompt, role names) with parse_special,
  // so that "<|im_start|>" becomes its control token, and the messages'
  // content without, so that content spelling a control token stays text.
  // No segment is empty; adjacent segments differ in parse_special.
  absl::StatusOr<std::vector<TextSegment>> RenderSegments(
      absl::Span<const ChatMessage> messages, bool add_generation_prompt,
      absl::Span<const std::string> tools = {}) const;

 private:
  ChatTemplate(ChatFamily family, ChatSpecialTokens tokens)
      : family_(family), tokens_(std::move(tokens)) {}

  // The template's bos_token at the very start of the prompt: empty when
  // the tokenizer adds BOS itself.
  std::string_view LeadingBos() const;
  absl::StatusOr<std::vector<TextSegment>> RenderChatMl(
      absl::Span<const ChatMessage> messages, bool add_generation_prompt,
      absl::Span<const std::string> tools) const;
  absl::StatusOr<std::vector<TextSegment>> RenderLlama3(
      absl::Span<const ChatMessage> messages, bool add_generation_prompt,
      absl::Span<const std::string> tools) const;
  absl::StatusOr<std::vector<TextSegment>> RenderLlama2(
      absl::Span<const ChatMessage> messages) const;
  std::vector<TextSegment> RenderTagged(absl::Span<const ChatMessage> messages,
                                        bool add_generation_prompt) const;
  absl::StatusOr<std::vector<TextSegment>> RenderGemma(
      absl::Span<const ChatMessage> messages, bool add_generation_prompt) const;
  absl::StatusOr<std::vector<TextSegment>> RenderQwen3(
      absl::Span<const ChatMessage> messages, bool add_generation_prompt,
      absl::Span<const std::string> tools) const;
  absl::StatusOr<std::vector<TextSegment>> RenderMistral(
      absl::Span<const ChatMessage> messages) const;

  ChatFamily family_;
  ChatSpecialTokens tokens_;
  std::optional<std::string> default_system_prompt_;
  bool chatml_tools_ = false;  // a detected ChatML template with <tool_call>
  std::string date_string_ = "26 Jul 2024";
  bool enable_thinking_ = true;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_CHAT_TEMPLATE_H_
