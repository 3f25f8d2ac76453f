#include "tools/npu-serve/api_error.h"

#include <utility>

#include "nlohmann/json.hpp"

namespace lnpu::serve {

std::string ApiError::Body() const {
  nlohmann::json error = {{"message", message}, {"type", type}};
  error["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  error["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return nlohmann::json{{"error", std::move(error)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError InvalidRequest(std::string message, std::string param, std::string code) {
  return {.http_status = 400,
          .type = "invalid_request_error",
          .message = std::move(message),
          .param = std::move(param),
          .code = std::move(code)};
}

ApiError ApiErrorFromStatus(const absl::Status& status) {
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return InvalidRequest(message);
    case absl::StatusCode::kResourceExhausted:
      return InvalidRequest(message, "messages", "context_length_exceeded");
    case absl::StatusCode::kUnavailable:
      return {.http_status = 503, .type = "server_error", .message = message};
    default:
      return {.http_status = 500, .type = "server_error", .message = message};
  }
}

}  // namespace lnpu::serve
