#include "framework/structured_output/tool_calls.h"

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
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kOpenTag = kOpen;
constexpr std::string_view kCloseTag = kClose;

std::string_view Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

std::string JsonText(const Json& value) {
  return value.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

// The call in `object`, whose arguments are under one of `argument_keys`;
// std::nullopt when it does not have that shape.
std::optional<ToolCall> CallOf(const Json& object,
                               std::initializer_list<const char*> argument_keys) {
  if (!object.is_object()) return std::nullopt;
  auto name = object.find("name");
  if (name == object.end() || !name->is_string()) return std::nullopt;
  for (const char* key : argument_keys) {
    auto arguments = object.find(key);
    if (arguments == object.end()) continue;
    if (arguments->is_object()) return ToolCall{name->get<std::string>(), JsonText(*arguments)};
    if (arguments->is_string()) {
      const std::string& text = arguments->get_ref<const std::string&>();
      Json inner = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (inner.is_object()) return ToolCall{name->get<std::string>(), JsonText(inner)};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Grammar>> ToolCallGrammar(
    ToolCallFormat format, absl::Span<const ToolDefinition> tools,
    std::optional<std::string_view> forced_name, int max_calls) {
  if (tools.empty()) {
    return absl::InvalidArgumentError("a tool-call grammar needs at least one tool");
  }
  if (max_calls < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_calls is ", max_calls, ": allow at least 1 call"));
  }
  std::set<std::string_view> names;
  for (const ToolDefinition& tool : tools) {
    if (!names.insert(tool.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tool \"", tool.name, "\" is defined twice: tool names must be unique"));
    }
  }
  if (forced_name.has_value() && names.count(*forced_name) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tool_choice names function \"", std::string(*forced_name), "\", which is not among the tools"));
  }
  GrammarBuilder builder;
  JsonSchemaCompiler compiler(builder);
  const char* const arguments_key =
      format == ToolCallFormat::kHermes ? "\"arguments\"" : "\"parameters\"";
  std::vector<Expr> calls;
  for (const ToolDefinition& tool : tools) {
    if (forced_name.has_value() && tool.name != *forced_name) continue;
    absl::StatusOr<Expr> arguments = compiler.CompileDocument(tool.parameters_schema);
    if (!arguments.ok()) {
      return absl::Status(arguments.status().code(),
                          absl::StrCat("the parameters of tool \"", tool.name,
                                       "\": ", arguments.status().message()));
    }
    calls.push_back(Sequence({Literal(absl::StrCat("{\"name\": ", JsonText(Json(tool.name)), ", ",
                                                   arguments_key, ": ")),
                              *std::move(arguments), Literal("}")}));
  }
  Expr reply;
  const Expr call = RuleRef(builder.DefineNewRule("call", Choice(std::move(calls))));
  if (format == ToolCallFormat::kHermes) {
    const Expr block = Sequence({Literal(absl::StrCat(kOpen, "\n")), call,
                                 Literal(absl::StrCat("\n", kClose))});
    reply = Sequence({block, Repeat(Sequence({Literal("\n"), block}), 0, max_calls - 1)});
  } else {
    reply = call;
  }
  const int root = builder.DefineNewRule("root", reply);
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  if (!grammar.ok()) return grammar.status();
  return std::make_shared<const Grammar>(*std::move(grammar));
}

absl::StatusOr<ParsedReply> ParseToolCalls(ToolCallFormat format, std::string_view text) {
  ParsedReply reply;
  if (format == ToolCallFormat::kLlama3Json) {
    std::string_view body = Trim(text);
    if (body.substr(0, kPythonTag.size()) == kPythonTag) {
      body = Trim(body.substr(kPythonTag.size()));
    }
    if (!body.empty() && body.front() == '{') {
      const Json object = Json::parse(body.begin(), body.end(), nullptr, false);
      if (std::optional<ToolCall> call = CallOf(object, {"parameters", "arguments"})) {
        reply.calls.push_back(*std::move(call));
        return reply;
      }
    }
    reply.content = std::string(Trim(text));
    return reply;
  }
  std::string content;
  size_t pos = 0;
  while (true) {
    const size_t open = text.find(kOpenTag, pos);
    if (open == std::string_view::npos) {
      content += text.substr(pos);
      break;
    }
    content += text.substr(pos, open - pos);
    const size_t body_start = open + kOpenTag.size();
    const size_t close = text.find(kCloseTag, body_start);
    const std::string_view body = Trim(
        text.substr(body_start, close == std::string_view::npos ? std::string_view::npos
                                                                 : close - body_start));
    const Json object = Json::parse(body.begin(), body.end(), nullptr, false);
    std::optional<ToolCall> call = CallOf(object, {"arguments"});
    if (!call.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tool call ", reply.calls.size() + 1,
          " is not a JSON object with a string \"name\" and an object \"arguments\": ",
          std::string(body.substr(0, 200))));
    }
    reply.calls.push_back(*std::move(call));
    if (close == std::string_view::npos) break;
    pos = close + kCloseTag.size();
  }
  reply.content = std::string(Trim(content));
  return reply;
}

}  // namespace lnpu::framework::structured_output
