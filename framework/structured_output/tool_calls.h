// Tool calls in the formats chat models are trained on: the grammar that
// constrains a reply to tool calls (OpenAI tool_choice "required" or a
// named function) or to text or tool calls (tool_choice "auto"), and the
// parser that finds the calls in generated text, whole or as it streams,
// so a server can return them as OpenAI `tool_calls`.
//
// Formats:
//  - kHermes (Qwen2.5, Qwen3; the chat template's <tool_call> blocks):
//      <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>
//    one block per call, blocks separated by "\n"; with text allowed, the
//    calls may follow text (e.g. Qwen3's <think> section).
//  - kLlama3Json (Llama 3.1-3.3 JSON tool calling): the whole reply is
//      {"name": "NAME", "parameters": {...}}
//    one call per reply; with text allowed, a reply whose first character
//    is '{' is a call, any other reply is text.
//
// The functions are thread-safe (no state); a ToolCallParser is used by
// one thread at a time.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_TOOL_CALLS_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_TOOL_CALLS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
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
  std::string arguments;  // the JSON text of the arguments, as generated
};

struct ParsedReply {
  std::string content;          // the text outside tool calls
  std::vector<ToolCall> calls;  // in order of appearance
};

// What a reply may hold (OpenAI tool_choice and parallel_tool_calls).
struct ToolCallRule {
  // false: only tool calls ("required" or a named function). true: text
  // or tool calls ("auto"); kHermes: text, then optionally calls from the
  // first "<tool_call>" on (text never holds the tag); kLlama3Json: a call,
  // or text that does not begin with '{' or whitespace (or nothing).
  bool allow_text = false;
  // Only calls of the tool of this name.
  std::optional<std::string> forced_name = std::nullopt;
  // At most this many calls (>= 1); kLlama3Json allows one whatever this is.
  int max_calls = 8;
};

// The grammar of a reply that `rule` allows, made of text and tool calls
// of `tools` in `format`, each call's arguments valid against its tool's
// parameters schema. InvalidArgument for no tools, a forced name that is
// not among them, duplicate names or max_calls < 1; a parameters schema's
// errors (JsonSchemaGrammar), naming the tool.
absl::StatusOr<std::shared_ptr<const Grammar>> ToolCallGrammar(
    ToolCallFormat format, absl::Span<const ToolDefinition> tools, const ToolCallRule& rule = {});

// A piece of a reply as ToolCallParser finds it.
struct ReplyPiece {
  enum class Kind {
    kContent,    // `text` is text outside the calls
    kCallStart,  // call number `call` begins; `text` is its name
    kArguments,  // `text` continues the JSON text of call `call`'s arguments
  };
  Kind kind = Kind::kContent;
  int call = 0;
  std::string text;
};

// Splits a reply into content and tool calls as it is generated. A call is
// recognised in the shape ToolCallGrammar produces, with any JSON
// whitespace between its tokens: kHermes "<tool_call>" {"name": STRING,
// "arguments": OBJECT} "</tool_call>"; kLlama3Json {"name": STRING,
// "parameters": OBJECT} as the whole reply. The arguments are passed on as
// generated (not re-serialised), so the pieces of a stream concatenate to
// the arguments of the whole reply.
//
// Content is passed on as soon as it cannot be the start of a call:
// kHermes holds back an end of the text that may begin "<tool_call>", and
// whitespace that may precede one (dropped before a call, kept in a reply
// without calls); kLlama3Json holds leading whitespace until the first
// other character decides. Text between and after kHermes blocks other
// than whitespace is content.
class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format) : format_(format) {}

  // Appends generated text to the reply; appends the pieces it completes
  // to `pieces`. After an error, ignores the text.
  void Push(std::string_view text, std::vector<ReplyPiece>& pieces);
  // At the end of the reply: appends the text held back. A call cut short
  // (the reply ended inside it) stays as far as it got.
  void Finish(std::vector<ReplyPiece>& pieces);

  // InvalidArgument naming the call and the offending text when the reply
  // departed from a call's shape (never for a reply generated under
  // ToolCallGrammar); OK otherwise.
  const absl::Status& status() const { return status_; }
  // The calls begun so far.
  int calls() const { return calls_; }

 private:
  enum class State {
    kText,       // outside calls
    kLiteral,    // matching literal_ (a ' ' in it: any JSON whitespace)
    kName,       // inside the name string
    kArguments,  // inside the arguments object
    kFailed,
  };

  // Consumes bytes of `text` from `pos` in the current state.
  size_t Step(std::string_view text, size_t pos, std::vector<ReplyPiece>& pieces);
  size_t StepText(std::string_view text, size_t pos, std::vector<ReplyPiece>& pieces);
  size_t StepLiteral(std::string_view text, size_t pos, std::vector<ReplyPiece>& pieces);
  size_t StepName(std::string_view text, size_t pos, std::vector<ReplyPiece>& pieces);
  size_t StepArguments(std::string_view text, size_t pos, std::vector<ReplyPiece>& pieces);
  // Begins matching `literal`, then moves to `next`.
  void Expect(std::string_view literal, State next);
  void Fail(std::string_view text, size_t pos);
  void EmitContent(std::string_view text, std::vector<ReplyPiece>& pieces);

  ToolCallFormat format_;
  State state_ = State::kText;
  absl::Status status_;
  int calls_ = 0;
  bool started_ = false;  // kLlama3Json: a non-blank character was seen
  std::string held_;      // kText: text held back (whitespace, part of a tag)
  std::string literal_;   // kLiteral: what to match
  size_t literal_pos_ = 0;
  State after_literal_ = State::kText;
  std::string name_;        // kName: the name's JSON string so far
  std::string arguments_;   // kArguments: bytes not yet passed on
  int depth_ = 0;           // kArguments: nesting depth
  bool in_string_ = false;  // kArguments
  bool escaped_ = false;    // kArguments, kName: after a backslash
};

// The content and calls of a whole reply: a ToolCallParser run over it,
// its content pieces concatenated and its calls put together. The
// parser's error when the reply departs from a call's shape.
absl::StatusOr<ParsedReply> ParseToolCalls(ToolCallFormat format, std::string_view text);

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_TOOL_CALLS_H_
