// The HTTP routes of npu-serve on a cpp-httplib server: the OpenAI
// endpoints (POST /v1/chat/completions, POST /v1/completions, GET
// /v1/models), GET /health, GET /metrics, and the chat page at /.
//
// A completion request is parsed (openai_request.h), rendered with the
// chat template (with its tools), tokenized, and queued on the scheduler
// with the grammar its response_format or tool_choice asks for
// (reply_format.h); the handler then
// waits for the first text or the end, so that errors found before any
// token (a prompt the cache cannot hold, a device fault while prefilling)
// still get their own HTTP status in streaming mode; after that the reply
// streams as server-sent events. A client that goes away cancels its
// generation. Every error is OpenAI's error JSON with its status; one log
// line per request goes to stderr.
//
// Until SetModel(), /health answers 503 "loading" and the model endpoints
// 503; after StopAccepting(), new completions get 503.
//
// Thread-safety: handlers run on the HTTP server's threads; SetModel and
// StopAccepting may be called from any thread.
#ifndef TOOLS_NPU_SERVE_API_SERVER_H_
#define TOOLS_NPU_SERVE_API_SERVER_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "framework/chat_template.h"
#include "framework/llm.h"
#include "framework/structured_output/token_trie.h"
#include "httplib.h"
#include "tools/npu-serve/api_error.h"
#include "tools/npu-serve/metrics.h"
#include "tools/npu-serve/openai_request.h"
#include "tools/npu-serve/scheduler.h"

namespace lnpu::serve {

struct ApiOptions {
  std::string api_key;            // empty: no authentication
  size_t max_body_bytes = 1 << 20;
  bool log_requests = true;       // one line per request on stderr
};

// What SetModel publishes; must outlive the ApiServer's use of it.
struct ServedModel {
  const framework::Llm* llm = nullptr;
  Scheduler* scheduler = nullptr;
  // The chat template, or why /v1/chat/completions is unavailable.
  absl::StatusOr<framework::ChatTemplate> chat_template =
      absl::NotFoundError("no chat template");
  // The vocabulary's trie, for the grammars of structured output.
  std::shared_ptr<const framework::structured_output::TokenTrie> token_trie;
  std::string id;  // the model's name in /v1/models and responses
  int64_t created = 0;
  bool ring_policy = false;
};

class ApiServer {
 public:
  ApiServer(const ApiOptions& options, Metrics& metrics);

  // Installs the routes, error handler, body limit, logger and TCP_NODELAY
  // on `http`.
  void Register(httplib::Server& http);

  // The model is loaded: /health becomes ready.
  void SetModel(const ServedModel* model) { model_.store(model); }
  // Graceful shutdown: /health answers 503 and new completions 503.
  void StopAccepting() { stopping_.store(true); }
  // Waits until every streamed response has been written to its end (or
  // its client went away), at most `timeout`: the HTTP server cuts streams
  // short when it stops.
  void WaitForStreams(absl::Duration timeout);

 private:
  void HandleCompletion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  void HandleHealth(httplib::Response& res) const;
  // Sets the 401 answer unless the request carries the API key.
  bool Authorized(const httplib::Request& req, httplib::Response& res) const;
  // The model, or the 503 answer while loading / stopping.
  const ServedModel* ModelOr503(httplib::Response& res) const;

  const ApiOptions options_;
  Metrics& metrics_;
  std::atomic<const ServedModel*> model_{nullptr};
  std::atomic<bool> stopping_{false};
  absl::Mutex streams_mu_;
  int open_streams_ ABSL_GUARDED_BY(streams_mu_) = 0;
};

// Sets `res` to `error`'s JSON body and status.
void SetError(httplib::Response& res, const ApiError& error);

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_API_SERVER_H_
