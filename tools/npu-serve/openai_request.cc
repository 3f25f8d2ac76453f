#include "tools/npu-serve/openai_request.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "framework/sampler.h"
#include "nlohmann/json.hpp"

namespace lnpu::serve {
namespace {

using nlohmann::json;

// A field's value, or the error naming it. Each reader returns an error
// when the field has the wrong type or range.
struct Reader {
  const json& body;
  std::optional<ApiError> error;

  const json* Find(const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  }
  void Fail(const char* name, std::string what) {
    if (!error) error = InvalidRequest(absl::StrCat("'", name, "' ", what), name);
  }
  void Number(const char* name, float& out, double min, double max) {
    const json* v = Find(name);
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
    const json* v = Find(name);
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
    const json* v = Find(name);
    if (v == nullptr) return;
    if (!v->is_boolean()) return Fail(name, "must be true or false");
    out = v->get<bool>();
  }
};

// A message's content: a string, or text parts.
std::optional<std::string> ContentText(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return std::nullopt;
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      return std::nullopt;
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

void ReadMessages(Reader& r, CompletionRequest& request) {
  const json* messages = r.Find("messages");
  if (messages == nullptr) return r.Fail("messages", "is required");
  if (!messages->is_array() || messages->empty()) {
    return r.Fail("messages", "must be a non-empty array of {\"role\", \"content\"} objects");
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string where = absl::StrCat("messages[", i, "]");
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      r.error = InvalidRequest(absl::StrCat(where, " must be an object with a string 'role'"),
                               where);
      return;
    }
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer") {
      r.error = InvalidRequest(
          absl::StrCat(where, ".role is '", role,
                       "': supported roles are system, developer, user and assistant"),
          where + ".role");
      return;
    }
    const std::optional<std::string> content =
        m.contains("content") ? ContentText(m["content"]) : std::nullopt;
    if (!content) {
      r.error = InvalidRequest(
          absl::StrCat(where, ".content must be a string or an array of text parts"),
          where + ".content");
      return;
    }
    // OpenAI's "developer" role is the system role of newer models.
    request.messages.push_back({role == "developer" ? "system" : role, *content});
  }
}

void ReadStop(Reader& r, framework::GenerationConfig& config) {
  const json* stop = r.Find("stop");
  if (stop == nullptr) return;
  if (stop->is_string()) {
    config.stop_strings = {stop->get<std::string>()};
  } else if (stop->is_array() && stop->size() <= 4) {
    for (const json& s : *stop) {
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

void ReadLogitBias(Reader& r, framework::GenerationConfig& config, int32_t vocab_size) {
  const json* bias = r.Find("logit_bias");
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

// Fields that ask for structured output, refused until it is supported.
void RefuseStructuredOutput(Reader& r) {
  if (const json* format = r.Find("response_format")) {
    if (!format->is_object() || format->value("type", "") != "text") {
      return r.Fail("response_format", "is not supported yet: only {\"type\": \"text\"}");
    }
  }
  if (const json* tools = r.Find("tools"); tools != nullptr && !tools->empty()) {
    return r.Fail("tools", "are not supported yet");
  }
  if (const json* choice = r.Find("tool_choice");
      choice != nullptr && !(choice->is_string() && choice->get<std::string>() == "none")) {
    return r.Fail("tool_choice", "is not supported yet: only \"none\"");
  }
}

}  // namespace

std::variant<CompletionRequest, ApiError> ParseCompletionRequest(std::string_view body,
                                                                 Endpoint endpoint,
                                                                 const RequestLimits& limits) {
  json parsed;
  try {
    parsed = json::parse(body);
  } catch (const json::parse_error& e) {
    return InvalidRequest(absl::StrCat("the body is not valid JSON (or not UTF-8): ", e.what()),
                          "", "invalid_json");
  }
  if (!parsed.is_object()) return InvalidRequest("the body must be a JSON object");

  CompletionRequest request;
  request.endpoint = endpoint;
  framework::GenerationConfig& config = request.config;
  config.temperature = 1.0f;
  config.max_new_tokens = limits.default_max_tokens;
  Reader r{parsed, std::nullopt};

  if (const json* model = r.Find("model")) {
    if (!model->is_string()) r.Fail("model", "must be a string");
    else request.model = model->get<std::string>();
  }
  if (endpoint == Endpoint::kChatCompletions) {
    ReadMessages(r, request);
  } else if (const json* prompt = r.Find("prompt"); prompt == nullptr) {
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
  ReadLogitBias(r, config, limits.vocab_size);
  r.Bool("stream", request.stream);
  if (const json* options = r.Find("stream_options")) {
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
  RefuseStructuredOutput(r);
  if (r.error) return *r.error;
  if (absl::Status valid = framework::Sampler::Validate(config, limits.vocab_size); !valid.ok()) {
    return InvalidRequest(std::string(valid.message()));
  }
  return request;
}

}  // namespace lnpu::serve
