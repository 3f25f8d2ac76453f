#include "tools/npu-serve/openai_request.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "framework/sampler.h"
#include "framework/structured_output/json_schema.h"
#include "nlohmann/json.hpp"

namespace lnpu::serve {
namespace {

namespace so = framework::structured_output;
// Objects keep the order of their keys: a schema's properties are
// generated in the order the client wrote them, and the chat template
// renders tools as given.
using OrderedJson = nlohmann::ordered_json;

// A field's value, or the error naming it. Each reader returns an error
// when the field has the wrong type or range.
struct Reader {
  const OrderedJson& body;
  std::optional<ApiError> error;

  const OrderedJson* Find(const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  }
  void Fail(const char* name, std::string what) {
    if (!error) error = InvalidRequest(absl::StrCat("'", name, "' ", what), name);
  }
  void Number(const char* name, float& out, double min, double max) {
    const OrderedJson* v = Find(name);
    if (v == nullptr) return;
    if (!v->is_number()) return Fail(name, "must be a number");
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < min || d > max) {
      return Fail(name, absl::StrCat("is ", d, ": give a number in [", min, ", ", max, "]"));
    }
    out = static_cast<float>(d);
  }
  template <typename Int>
  bool Integer(const char* name, Int& out, int64_t min, int64_t max) {
    const OrderedJson* v = Find(name);
    if (v == nullptr) return false;
    if (!v->is_number_integer()) {
      Fail(name, "must be an integer");
      return false;
    }
    // nlohmann stores non-negative integers as unsigned.
    const bool in_range =
        v->is_number_unsigned()
            ? v->get<uint64_t>() <= static_cast<uint64_t>(max) &&
                  (min <= 0 || v->get<uint64_t>() >= static_cast<uint64_t>(min))
            : v->get<int64_t>() >= min && v->get<int64_t>() <= max;
    if (!in_range) {
      Fail(name, absl::StrCat("is ", v->dump(), ": give an integer in [", min, ", ", max, "]"));
      return false;
    }
    out = static_cast<Int>(v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>())
                                                   : v->get<int64_t>());
    return true;
  }
  void Bool(const char* name, bool& out) {
    const OrderedJson* v = Find(name);
    if (v == nullptr) return;
    if (!v->is_boolean()) return Fail(name, "must be true or false");
    out = v->get<bool>();
  }
};

// The string member `key` of `object`; "" when absent or not a string
// (OrderedJson::value would throw on another type).
std::string StringMember(const OrderedJson& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// A message's content: a string, or text parts.
std::optional<std::string> ContentText(const OrderedJson& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return std::nullopt;
  std::string text;
  for (const OrderedJson& part : content) {
    if (!part.is_object() || StringMember(part, "type") != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      return std::nullopt;
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

// OpenAI's rule for function names.
bool IsFunctionName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// The tool_calls of an assistant message `m` (at `where`), or the error.
std::optional<ApiError> ReadToolCalls(const OrderedJson& m, const std::string& where,
                                      framework::ChatMessage& message) {
  const OrderedJson& calls = m["tool_calls"];
  const std::string field = where + ".tool_calls";
  if (!calls.is_array()) return InvalidRequest(absl::StrCat(field, " must be an array"), field);
  for (size_t j = 0; j < calls.size(); ++j) {
    const std::string call_field = absl::StrCat(field, "[", j, "]");
    const OrderedJson& call = calls[j];
    const OrderedJson* function =
        call.is_object() && call.contains("function") ? &call["function"] : nullptr;
    if (function == nullptr || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string()) {
      return InvalidRequest(
          absl::StrCat(call_field,
                       " must be {\"type\": \"function\", \"function\": {\"name\", "
                       "\"arguments\"}}"),
          call_field);
    }
    std::string arguments = "{}";
    if (function->contains("arguments")) {
      const OrderedJson& given = (*function)["arguments"];
      const OrderedJson parsed =
          given.is_string() ? OrderedJson::parse(given.get<std::string>(), nullptr, false) : given;
      if (!parsed.is_object()) {
        return InvalidRequest(
            absl::StrCat(call_field, ".function.arguments must be a JSON object's text"),
            call_field + ".function.arguments");
      }
      arguments = given.is_string() ? given.get<std::string>() : given.dump();
    }
    message.tool_calls.push_back({(*function)["name"].get<std::string>(), std::move(arguments)});
  }
  return std::nullopt;
}

void ReadMessages(Reader& r, CompletionRequest& request) {
  const OrderedJson* messages = r.Find("messages");
  if (messages == nullptr) return r.Fail("messages", "is required");
  if (!messages->is_array() || messages->empty()) {
    return r.Fail("messages", "must be a non-empty array of {\"role\", \"content\"} objects");
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    const OrderedJson& m = (*messages)[i];
    const std::string where = absl::StrCat("messages[", i, "]");
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      r.error = InvalidRequest(absl::StrCat(where, " must be an object with a string 'role'"),
                               where);
      return;
    }
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer" &&
        role != "tool") {
      r.error = InvalidRequest(
          absl::StrCat(where, ".role is '", role,
                       "': supported roles are system, developer, user, assistant and tool"),
          where + ".role");
      return;
    }
    framework::ChatMessage message;
    // OpenAI's "developer" role is the system role of newer models.
    message.role = role == "developer" ? "system" : role;
    const bool has_calls =
        role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (has_calls) {
      if (std::optional<ApiError> error = ReadToolCalls(m, where, message)) {
        r.error = *std::move(error);
        return;
      }
    }
    // An assistant message with tool calls may have no content.
    const bool no_content = !m.contains("content") || m["content"].is_null();
    const std::optional<std::string> content = has_calls && no_content
                                                   ? std::optional<std::string>("")
                                               : no_content ? std::nullopt
                                                            : ContentText(m["content"]);
    if (!content) {
      r.error = InvalidRequest(
          absl::StrCat(where, ".content must be a string or an array of text parts"),
          where + ".content");
      return;
    }
    message.content = *content;
    request.messages.push_back(std::move(message));
  }
}

void ReadStop(Reader& r, framework::GenerationConfig& config) {
  const OrderedJson* stop = r.Find("stop");
  if (stop == nullptr) return;
  if (stop->is_string()) {
    config.stop_strings = {stop->get<std::string>()};
  } else if (stop->is_array() && stop->size() <= 4) {
    for (const OrderedJson& s : *stop) {
      if (!s.is_string()) return r.Fail("stop", "must be a string or an array of strings");
      config.stop_strings.push_back(s.get<std::string>());
    }
  } else {
    return r.Fail("stop", "must be a string or an array of up to 4 strings");
  }
  for (const std::string& s : config.stop_strings) {
    if (s.empty()) return r.Fail("stop", "must not contain an empty string");
  }
}

// `bias`: the body's logit_bias member, parsed apart (ParseBody); null when
// absent.
void ReadLogitBias(Reader& r, const nlohmann::json& bias_member, framework::GenerationConfig& config,
                   int32_t vocab_size) {
  const nlohmann::json* bias = bias_member.is_null() ? nullptr : &bias_member;
  if (bias == nullptr) return;
  if (!bias->is_object()) return r.Fail("logit_bias", "must map token ids to biases");
  for (const auto& [key, value] : bias->items()) {
    int32_t id = 0;
    if (!absl::SimpleAtoi(key, &id) || id < 0 || id >= vocab_size) {
      return r.Fail("logit_bias", absl::StrCat("has key '", key,
                                               "': keys are token ids in [0, ", vocab_size,
                                               ")"));
    }
    if (!value.is_number() || !(std::abs(value.get<double>()) <= 100)) {
      return r.Fail("logit_bias", absl::StrCat("has bias ", value.dump(), " for token ", key,
                                               ": biases are numbers in [-100, 100]"));
    }
    // OpenAI's -100 bans the token.
    const double b = value.get<double>();
    config.logit_bias[id] =
        b <= -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(b);
  }
}

// response_format: compiles the grammar of a json_object / json_schema
// reply.
void ReadResponseFormat(Reader& r, CompletionRequest& request) {
  const OrderedJson* format = r.Find("response_format");
  if (format == nullptr) return;
  const std::string type =
      format->is_object() && format->contains("type") && (*format)["type"].is_string()
          ? (*format)["type"].get<std::string>()
          : "";
  if (type == "text") return;
  if (type == "json_object") {
    request.response_grammar = so::JsonObjectGrammar();
    return;
  }
  if (type != "json_schema") {
    return r.Fail("response_format",
                  "must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                  "{\"type\": \"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": "
                  "{...}}}");
  }
  const OrderedJson* spec = format->contains("json_schema") ? &(*format)["json_schema"] : nullptr;
  if (spec == nullptr || !spec->is_object()) {
    return r.Fail("response_format", "of type json_schema needs a 'json_schema' object");
  }
  if (!spec->contains("name") || !(*spec)["name"].is_string() ||
      !IsFunctionName((*spec)["name"].get<std::string>())) {
    return r.Fail("response_format",
                  "json_schema.name must be a string of 1 to 64 letters, digits, '_' or '-'");
  }
  if (spec->contains("strict") && !(*spec)["strict"].is_boolean() && !(*spec)["strict"].is_null()) {
    return r.Fail("response_format", "json_schema.strict must be true or false");
  }
  if (!spec->contains("schema") ||
      !((*spec)["schema"].is_object() || (*spec)["schema"].is_boolean())) {
    return r.Fail("response_format", "json_schema.schema must be a JSON Schema object");
  }
  absl::StatusOr<std::shared_ptr<const so::Grammar>> grammar =
      so::JsonSchemaGrammar((*spec)["schema"].dump());
  if (!grammar.ok()) {
    return r.Fail("response_format", absl::StrCat("json_schema.schema cannot be enforced: ",
                                                  grammar.status().message()));
  }
  request.response_grammar = *std::move(grammar);
}

// tools and tool_choice.
void ReadTools(Reader& r, CompletionRequest& request) {
  const OrderedJson* tools = r.Find("tools");
  if (tools != nullptr) {
    if (request.endpoint != Endpoint::kChatCompletions) {
      return r.Fail("tools", "are only for /v1/chat/completions");
    }
    if (!tools->is_array()) {
      return r.Fail("tools",
                    "must be an array of {\"type\": \"function\", \"function\": {...}} objects");
    }
    for (size_t i = 0; i < tools->size(); ++i) {
      const OrderedJson& tool = (*tools)[i];
      const OrderedJson* function = tool.is_object() && StringMember(tool, "type") == "function" &&
                                     tool.contains("function") && tool["function"].is_object()
                                 ? &tool["function"]
                                 : nullptr;
      if (function == nullptr) {
        return r.Fail("tools", absl::StrCat("[", i,
                                            "] must be {\"type\": \"function\", "
                                            "\"function\": {\"name\", \"description\", "
                                            "\"parameters\"}}"));
      }
      const std::string name = StringMember(*function, "name");
      if (!IsFunctionName(name)) {
        return r.Fail("tools", absl::StrCat("[", i,
                                            "].function.name must be a string of 1 to 64 "
                                            "letters, digits, '_' or '-'"));
      }
      for (const so::ToolDefinition& other : request.tools) {
        if (other.name == name) {
          return r.Fail("tools", absl::StrCat("define function '", name, "' twice"));
        }
      }
      so::ToolDefinition definition{.name = name};
      if (function->contains("parameters") && !(*function)["parameters"].is_null()) {
        if (!(*function)["parameters"].is_object()) {
          return r.Fail("tools", absl::StrCat("[", i,
                                              "].function.parameters must be a JSON "
                                              "Schema object"));
        }
        definition.parameters_schema = (*function)["parameters"].dump();
      }
      request.tools.push_back(std::move(definition));
      request.tool_definitions.push_back(tool.dump());
    }
    if (!request.tools.empty()) request.tool_choice = ToolChoice::kAuto;
  }
  const OrderedJson* choice = r.Find("tool_choice");
  if (choice == nullptr) return;
  if (choice->is_string() && choice->get<std::string>() == "none") {
    request.tool_choice = ToolChoice::kNone;
    return;
  }
  if (request.tools.empty()) return r.Fail("tool_choice", "needs 'tools' to choose from");
  if (choice->is_string() && choice->get<std::string>() == "auto") return;
  if (choice->is_string() && choice->get<std::string>() == "required") {
    request.tool_choice = ToolChoice::kRequired;
    return;
  }
  const OrderedJson* function = choice->is_object() && StringMember(*choice, "type") == "function" &&
                                 choice->contains("function") && (*choice)["function"].is_object()
                             ? &(*choice)["function"]
                             : nullptr;
  if (function == nullptr || !function->contains("name") || !(*function)["name"].is_string()) {
    return r.Fail("tool_choice",
                  "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                  "\"function\": {\"name\": ...}}");
  }
  request.forced_tool = (*function)["name"].get<std::string>();
  request.tool_choice = ToolChoice::kFunction;
  for (const so::ToolDefinition& tool : request.tools) {
    if (tool.name == request.forced_tool) return;
  }
  r.Fail("tool_choice",
         absl::StrCat("names function '", request.forced_tool, "', which is not among the tools"));
}

// Members one JSON object of a request may have, logit_bias aside: an
// ordered object finds a key by linear search when it is inserted, so its
// parse costs time quadratic in its size.
constexpr size_t kMaxObjectMembers = 4096;

struct ParsedBody {
  OrderedJson object;  // without its logit_bias member
  // logit_bias (null if absent), parsed into a sorted map: it may hold a
  // member per token of the vocabulary, and its order does not matter.
  nlohmann::json logit_bias;
};

// Thrown by the parse callback to stop at an object over the limit.
struct TooManyMembers {
  int depth;
};

std::variant<ParsedBody, ApiError> ParseBody(std::string_view text) {
  ParsedBody body;
  bool has_logit_bias = false;
  // Members seen so far of the open object at each depth; within
  // logit_bias (the last top-level key) nothing is counted or kept.
  std::vector<size_t> members;
  bool in_logit_bias = false;
  auto keep = [&](int depth, OrderedJson::parse_event_t event, OrderedJson& value) {
    const auto d = static_cast<size_t>(depth);
    if (event == OrderedJson::parse_event_t::object_start) {
      if (members.size() < d + 2) members.resize(d + 2);
      members[d + 1] = 0;
    } else if (event == OrderedJson::parse_event_t::key) {
      if (depth == 1) {
        in_logit_bias = value == "logit_bias";
        has_logit_bias = has_logit_bias || in_logit_bias;
        if (in_logit_bias) return false;
      }
      if (!in_logit_bias && ++members[d] > kMaxObjectMembers) throw TooManyMembers{depth};
    }
    return true;
  };
  try {
    body.object = OrderedJson::parse(text, keep);
    if (has_logit_bias) {
      body.logit_bias = nlohmann::json::parse(
          text, [](int depth, nlohmann::json::parse_event_t event, nlohmann::json& value) {
            return depth != 1 || event != nlohmann::json::parse_event_t::key ||
                   value == "logit_bias";
          });
      body.logit_bias = body.logit_bias.is_object() && body.logit_bias.contains("logit_bias")
                            ? nlohmann::json(std::move(body.logit_bias["logit_bias"]))
                            : nlohmann::json();
    }
  } catch (const OrderedJson::parse_error& e) {
    return InvalidRequest(absl::StrCat("the body is not valid JSON (or not UTF-8): ", e.what()),
                          "", "invalid_json");
  } catch (const TooManyMembers& e) {
    return InvalidRequest(absl::StrCat("the body has an object (at depth ", e.depth,
                                       ") with more than ", kMaxObjectMembers,
                                       " members; only logit_bias may be that large"));
  }
  return body;
}

}  // namespace

std::variant<CompletionRequest, ApiError> ParseCompletionRequest(std::string_view text,
                                                                 Endpoint endpoint,
                                                                 const RequestLimits& limits) {
  std::variant<ParsedBody, ApiError> parsed_body = ParseBody(text);
  if (auto* error = std::get_if<ApiError>(&parsed_body)) return *std::move(error);
  const ParsedBody& body = std::get<ParsedBody>(parsed_body);
  const OrderedJson& parsed = body.object;
  if (!parsed.is_object()) return InvalidRequest("the body must be a JSON object");

  CompletionRequest request;
  request.endpoint = endpoint;
  framework::GenerationConfig& config = request.config;
  config.temperature = 1.0f;
  config.max_new_tokens = limits.default_max_tokens;
  Reader r{parsed, std::nullopt};

  if (const OrderedJson* model = r.Find("model")) {
    if (!model->is_string()) r.Fail("model", "must be a string");
    else request.model = model->get<std::string>();
  }
  if (endpoint == Endpoint::kChatCompletions) {
    ReadMessages(r, request);
  } else if (const OrderedJson* prompt = r.Find("prompt"); prompt == nullptr) {
    r.Fail("prompt", "is required");
  } else if (!prompt->is_string() || prompt->get<std::string>().empty()) {
    r.Fail("prompt", "must be a non-empty string");
  } else {
    request.prompt = prompt->get<std::string>();
  }
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  r.Integer("max_tokens", config.max_new_tokens, 1, kMaxInt);
  r.Integer("max_completion_tokens", config.max_new_tokens, 1, kMaxInt);
  r.Number("temperature", config.temperature, 0, 2);
  r.Number("top_p", config.top_p, 0, 1);
  if (config.top_p == 0) r.Fail("top_p", "is 0: give a number in (0, 1]");
  r.Integer("top_k", config.top_k, 0, kMaxInt);
  r.Number("min_p", config.min_p, 0, 1);
  r.Integer("seed", config.seed, std::numeric_limits<int64_t>::min(),
            std::numeric_limits<int64_t>::max());
  r.Number("presence_penalty", config.presence_penalty, -2, 2);
  r.Number("frequency_penalty", config.frequency_penalty, -2, 2);
  int n = 1;
  if (r.Integer("n", n, 1, kMaxInt) && n != 1) r.Fail("n", "must be 1: one choice per request");
  ReadStop(r, config);
  ReadLogitBias(r, body.logit_bias, config, limits.vocab_size);
  r.Bool("stream", request.stream);
  if (const OrderedJson* options = r.Find("stream_options")) {
    if (!options->is_object()) {
      r.Fail("stream_options", "must be an object");
    } else if (options->contains("include_usage")) {
      if (!(*options)["include_usage"].is_boolean()) {
        r.Fail("stream_options", "include_usage must be true or false");
      } else {
        request.include_usage = (*options)["include_usage"].get<bool>();
      }
    }
  }
  ReadTools(r, request);
  r.Bool("parallel_tool_calls", request.parallel_tool_calls);
  ReadResponseFormat(r, request);
  if (!r.error && request.response_grammar != nullptr && request.tool_choice != ToolChoice::kNone) {
    r.Fail("response_format",
           "cannot be enforced together with tools (tool_choice \"auto\", \"required\" or a "
           "function), as the reply may be tool calls: send tool_choice \"none\" or leave out "
           "response_format");
  }
  if (r.error) return *r.error;
  if (absl::Status valid = framework::Sampler::Validate(config, limits.vocab_size); !valid.ok()) {
    return InvalidRequest(std::string(valid.message()));
  }
  return request;
}

}  // namespace lnpu::serve
