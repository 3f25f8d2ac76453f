// An error answer of the OpenAI API: the HTTP status and the body
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// Immutable value; thread-safe.
#ifndef TOOLS_NPU_SERVE_API_ERROR_H_
#define TOOLS_NPU_SERVE_API_ERROR_H_

#include <string>

#include "absl/status/status.h"

namespace lnpu::serve {

struct ApiError {
  int http_status = 500;
  // OpenAI's error types: "invalid_request_error", "authentication_error",
  // "not_found_error", "rate_limit_exceeded", "server_error", ...
  std::string type = {};
  std::string message = {};
  std::string param = {};  // the offending request field, or empty
  std::string code = {};   // a machine-readable code, or empty

  // The JSON body.
  std::string Body() const;
};

ApiError InvalidRequest(std::string message, std::string param = "",
                        std::string code = "");

// The answer for a framework status: InvalidArgument -> 400,
// ResourceExhausted (the prompt does not fit the cache) -> 400 with code
// "context_length_exceeded", Unavailable -> 503, anything else (device
// errors) -> 500.
ApiError ApiErrorFromStatus(const absl::Status& status);

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_API_ERROR_H_
