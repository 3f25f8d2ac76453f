// npu-serve's command line: `npu-serve -m MODEL.lnpu [--flag value]...`
// (also --flag=value). ServeUsage() lists the flags and their defaults.
//
// Pure functions; thread-safe.
#ifndef TOOLS_NPU_SERVE_SERVE_OPTIONS_H_
#define TOOLS_NPU_SERVE_SERVE_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/npu-serve/api_server.h"
#include "tools/npu-serve/scheduler.h"

namespace lnpu::serve {

struct ServeOptions {
  std::string model_path;         // -m
  std::string device = "auto";    // --device
  std::string host = "127.0.0.1"; // --host
  int port = 8080;                // --port; 0 picks a free port
  std::string chat_template;      // --chat-template FAMILY; empty: the model's
  int http_threads = 0;           // --http-threads; 0: sessions + queue + 4
  double shutdown_timeout_seconds = 30;  // --shutdown-timeout
  SchedulerOptions scheduler;     // --sessions, --decode-batch, --queue, --prefill-chunk,
                                  // --ctx-policy, --sink-tokens,
                                  // --prefix-cache-entries, --prefix-cache-mb
  ApiOptions api;                 // --api-key / --api-key-file, --max-body-bytes,
                                  // --quiet
  std::string trace_path;         // --trace FILE.json; empty: no trace
  bool help = false;              // -h / --help
};

// The options of `args` (without the program name). InvalidArgument naming
// the flag for an unknown flag, a missing or malformed value, or no -m
// (unless --help); NotFound / PermissionDenied for an unreadable
// --api-key-file.
absl::StatusOr<ServeOptions> ParseServeOptions(const std::vector<std::string>& args);

std::string ServeUsage();

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_SERVE_OPTIONS_H_
