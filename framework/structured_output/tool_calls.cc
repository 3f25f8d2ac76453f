#include "framework/structured_output/tool_calls.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "framework/structured_output/json_schema.h"
#include "nlohmann/json.hpp"

namespace lnpu::framework::structured_output {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kOpen[] = "<tool_call>";
constexpr char kClose[] = "</tool_call>";
constexpr std::string_view kOpenTag = kOpen;
constexpr std::string_view kWhitespace = " \t\r\n";

bool IsWhitespace(char c) { return kWhitespace.find(c) != std::string_view::npos; }

std::string JsonText(const Json& value) {
  return value.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

const char* ArgumentsKey(ToolCallFormat format) {
  return format == ToolCallFormat::kHermes ? "\"arguments\"" : "\"parameters\"";
}

// Text that has matched the first i bytes of kOpenTag is in rule
// `rules[i]`; the tag's last byte goes on to `after_tag`. Any text is
// allowed (the rules are a KMP automaton of the tag), and may end anywhere.
void DefineTextUntilTag(GrammarBuilder& builder, const std::vector<int>& rules,
                        const Expr& after_tag) {
  const size_t n = kOpenTag.size();
  for (size_t i = 0; i < n; ++i) {
    std::vector<ByteSet> to_state(n);  // bytes other than tag[i], by next state
    for (int b = 0; b < 256; ++b) {
      if (b == static_cast<uint8_t>(kOpenTag[i])) continue;
      const std::string seen = std::string(kOpenTag.substr(0, i)) + static_cast<char>(b);
      size_t k = std::min(i, n - 1);
      while (k > 0 && !std::string_view(seen).ends_with(kOpenTag.substr(0, k))) --k;
      to_state[k].set(b);
    }
    std::vector<Expr> alternatives = {
        Sequence({Literal(kOpenTag.substr(i, 1)), i + 1 < n ? RuleRef(rules[i + 1]) : after_tag}),
        Literal("")};
    for (size_t k = 0; k < n; ++k) {
      if (to_state[k].any())
        alternatives.push_back(Sequence({Set(to_state[k]), RuleRef(rules[k])}));
    }
    builder.DefineRule(rules[i], Choice(std::move(alternatives)));
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Grammar>> ToolCallGrammar(
    ToolCallFormat format, absl::Span<const ToolDefinition> tools, const ToolCallRule& rule) {
  if (tools.empty()) {
    return absl::InvalidArgumentError("a tool-call grammar needs at least one tool");
  }
  if (rule.max_calls < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_calls is ", rule.max_calls, ": allow at least 1 call"));
  }
  std::set<std::string_view> names;
  for (const ToolDefinition& tool : tools) {
    if (!names.insert(tool.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tool \"", tool.name, "\" is defined twice: tool names must be unique"));
    }
  }
  if (rule.forced_name.has_value() && names.count(*rule.forced_name) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tool_choice names function \"", *rule.forced_name, "\", which is not among the tools"));
  }
  GrammarBuilder builder;
  JsonSchemaCompiler compiler(builder);
  std::vector<Expr> calls;
  for (const ToolDefinition& tool : tools) {
    if (rule.forced_name.has_value() && tool.name != *rule.forced_name) continue;
    absl::StatusOr<Expr> arguments = compiler.CompileDocument(tool.parameters_schema);
    if (!arguments.ok()) {
      return absl::Status(arguments.status().code(),
                          absl::StrCat("the parameters of tool \"", tool.name,
                                       "\": ", arguments.status().message()));
    }
    calls.push_back(Sequence({Literal(absl::StrCat("{\"name\": ", JsonText(Json(tool.name)), ", ",
                                                   ArgumentsKey(format), ": ")),
                              *std::move(arguments), Literal("}")}));
  }
  const Expr call = RuleRef(builder.DefineNewRule("call", Choice(std::move(calls))));
  int root = -1;
  if (format == ToolCallFormat::kHermes) {
    // What follows an opening tag: the rest of the block, then more blocks.
    const Expr block_body = Sequence({Literal("\n"), call, Literal(absl::StrCat("\n", kClose))});
    const Expr after_tag =
        Sequence({block_body, Repeat(Sequence({Literal(absl::StrCat("\n", kOpen)), block_body}), 0,
                                     rule.max_calls - 1)});
    if (rule.allow_text) {
      std::vector<int> text_rules;
      for (size_t i = 0; i < kOpenTag.size(); ++i) text_rules.push_back(builder.AddRule("text"));
      DefineTextUntilTag(builder, text_rules, after_tag);
      root = text_rules[0];
    } else {
      root = builder.DefineNewRule("root", Sequence({Literal(kOpenTag), after_tag}));
    }
  } else if (rule.allow_text) {
    ByteSet first_of_text = ~BytesOf(kWhitespace);
    first_of_text.reset('{');
    root = builder.DefineNewRule(
        "root",
        Choice({call, Literal(""), Sequence({Set(first_of_text), Star(Set(ByteSet().set()))})}));
  } else {
    root = builder.DefineNewRule("root", call);
  }
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  if (!grammar.ok()) return grammar.status();
  return std::make_shared<const Grammar>(*std::move(grammar));
}

void ToolCallParser::Expect(std::string_view literal, State next) {
  literal_ = std::string(literal);
  literal_pos_ = 0;
  after_literal_ = next;
  state_ = State::kLiteral;
}

void ToolCallParser::Fail(std::string_view text, size_t pos) {
  status_ = absl::InvalidArgumentError(absl::StrCat(
      "tool call ", calls_ + (state_ == State::kLiteral && after_literal_ == State::kName ? 1 : 0),
      " departs from {\"name\": STRING, ", ArgumentsKey(format_), ": OBJECT} at \"",
      std::string(text.substr(pos, 40)), "\""));
  state_ = State::kFailed;
}

void ToolCallParser::EmitContent(std::string_view text, std::vector<ReplyPiece>& pieces) {
  if (text.empty()) return;
  if (!pieces.empty() && pieces.back().kind == ReplyPiece::Kind::kContent) {
    pieces.back().text.append(text);
  } else {
    pieces.push_back({.kind = ReplyPiece::Kind::kContent, .text = std::string(text)});
  }
}

size_t ToolCallParser::StepText(std::string_view text, size_t pos,
                                std::vector<ReplyPiece>& pieces) {
  if (format_ == ToolCallFormat::kLlama3Json && !started_) {
    const size_t first = text.find_first_not_of(kWhitespace, pos);
    if (first == std::string_view::npos) {
      held_.append(text.substr(pos));
      return text.size();
    }
    started_ = true;
    if (text[first] == '{') {
      held_.clear();  // blanks before a call
      Expect("{ \"name\" : \"", State::kName);
      return first;
    }
    EmitContent(held_, pieces);
    held_.clear();
  }
  if (format_ == ToolCallFormat::kLlama3Json && calls_ == 0) {
    EmitContent(text.substr(pos), pieces);  // a reply of text
    return text.size();
  }
  const size_t held_before = held_.size();
  held_.append(text.substr(pos));
  if (format_ == ToolCallFormat::kHermes) {
    const size_t tag = held_.find(kOpenTag);
    if (tag != std::string::npos) {
      const size_t content_end = held_.find_last_not_of(kWhitespace, tag == 0 ? 0 : tag - 1);
      if (tag > 0 && content_end != std::string::npos) {
        EmitContent(std::string_view(held_).substr(0, content_end + 1), pieces);
      }
      const size_t next = pos + (tag + kOpenTag.size() - held_before);
      held_.clear();
      Expect(" { \"name\" : \"", State::kName);
      return next;
    }
  }
  return text.size();
}

size_t ToolCallParser::StepLiteral(std::string_view text, size_t pos, std::vector<ReplyPiece>&) {
  while (pos < text.size()) {
    if (literal_pos_ == literal_.size()) break;
    const char c = text[pos];
    if (literal_[literal_pos_] == ' ') {
      if (IsWhitespace(c)) {
        ++pos;
      } else {
        ++literal_pos_;
      }
    } else if (literal_[literal_pos_] == c) {
      ++literal_pos_;
      ++pos;
    } else {
      Fail(text, pos);
      return text.size();
    }
  }
  if (literal_pos_ == literal_.size()) {
    state_ = after_literal_;
    if (state_ == State::kName) name_.clear();
    if (state_ == State::kArguments) depth_ = 0;
  }
  return pos;
}

size_t ToolCallParser::StepName(std::string_view text, size_t pos,
                                std::vector<ReplyPiece>& pieces) {
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
    } else if (c == '"') {
      const Json name = Json::parse(absl::StrCat("\"", name_, "\""), nullptr, false);
      if (!name.is_string()) {
        Fail(text, pos);
        return text.size();
      }
      pieces.push_back({.kind = ReplyPiece::Kind::kCallStart,
                        .call = calls_++,
                        .text = name.get<std::string>()});
      Expect(absl::StrCat(" , ", ArgumentsKey(format_), " : "), State::kArguments);
      return pos + 1;
    }
    name_.push_back(c);
  }
  return pos;
}

size_t ToolCallParser::StepArguments(std::string_view text, size_t pos,
                                     std::vector<ReplyPiece>& pieces) {
  if (depth_ == 0 && text[pos] != '{') {
    Fail(text, pos);
    return text.size();
  }
  const size_t begin = pos;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        arguments_.append(text.substr(begin, pos + 1 - begin));
        pieces.push_back({.kind = ReplyPiece::Kind::kArguments,
                          .call = calls_ - 1,
                          .text = std::move(arguments_)});
        arguments_.clear();
        Expect(format_ == ToolCallFormat::kHermes ? absl::StrCat(" } ", kClose) : " }",
               State::kText);
        return pos + 1;
      }
    }
  }
  arguments_.append(text.substr(begin));
  return pos;
}

size_t ToolCallParser::Step(std::string_view text, size_t pos, std::vector<ReplyPiece>& pieces) {
  switch (state_) {
    case State::kText:
      return StepText(text, pos, pieces);
    case State::kLiteral:
      return StepLiteral(text, pos, pieces);
    case State::kName:
      return StepName(text, pos, pieces);
    case State::kArguments:
      return StepArguments(text, pos, pieces);
    case State::kFailed:
      break;
  }
  return text.size();
}

void ToolCallParser::Push(std::string_view text, std::vector<ReplyPiece>& pieces) {
  size_t pos = 0;
  while (pos < text.size()) pos = Step(text, pos, pieces);
  if (state_ == State::kArguments && !arguments_.empty()) {
    pieces.push_back(
        {.kind = ReplyPiece::Kind::kArguments, .call = calls_ - 1, .text = std::move(arguments_)});
    arguments_.clear();
  }
  if (state_ != State::kText || held_.empty()) return;
  if (format_ == ToolCallFormat::kLlama3Json && !started_) return;  // undecided
  // Holds back an end that may begin the tag (kHermes), and the whitespace
  // before it, which goes with a call.
  size_t end = held_.size();
  if (format_ == ToolCallFormat::kHermes) {
    for (size_t k = std::min(kOpenTag.size() - 1, held_.size()); k > 0; --k) {
      if (kOpenTag.starts_with(std::string_view(held_).substr(held_.size() - k))) {
        end = held_.size() - k;
        break;
      }
    }
  }
  const size_t last = end == 0 ? std::string::npos : held_.find_last_not_of(kWhitespace, end - 1);
  end = last == std::string::npos ? 0 : last + 1;
  EmitContent(std::string_view(held_).substr(0, end), pieces);
  held_.erase(0, end);
}

void ToolCallParser::Finish(std::vector<ReplyPiece>& pieces) {
  if (state_ != State::kText) return;
  std::string_view rest = held_;
  if (calls_ > 0) {
    const size_t last = rest.find_last_not_of(kWhitespace);
    rest = rest.substr(0, last == std::string_view::npos ? 0 : last + 1);
  }
  EmitContent(rest, pieces);
  held_.clear();
}

absl::StatusOr<ParsedReply> ParseToolCalls(ToolCallFormat format, std::string_view text) {
  ToolCallParser parser(format);
  std::vector<ReplyPiece> pieces;
  parser.Push(text, pieces);
  parser.Finish(pieces);
  if (!parser.status().ok()) return parser.status();
  ParsedReply reply;
  for (ReplyPiece& piece : pieces) {
    switch (piece.kind) {
      case ReplyPiece::Kind::kContent:
        reply.content.append(piece.text);
        break;
      case ReplyPiece::Kind::kCallStart:
        reply.calls.push_back({.name = std::move(piece.text), .arguments = ""});
        break;
      case ReplyPiece::Kind::kArguments:
        reply.calls[piece.call].arguments.append(piece.text);
        break;
    }
  }
  return reply;
}

}  // namespace lnpu::framework::structured_output
