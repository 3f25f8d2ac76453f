#include "tools/npu-serve/api_server.h"

#include <functional>
#include <iostream>
#include <memory>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "framework/structured_output/grammar_matcher.h"
#include "framework/structured_output/tool_calls.h"
#include "tools/npu-serve/chat_page.h"
#include "tools/npu-serve/openai_response.h"
#include "tools/npu-serve/reply_format.h"

namespace lnpu::serve {

namespace so = framework::structured_output;

namespace {

constexpr char kJson[] = "application/json";

// What the log line of the request handled on this thread says beyond the
// method, path and status (set by the handler, read by the logger, which
// httplib runs on the same thread after the response was written).
thread_local absl::Time request_start;
thread_local std::string request_note;

std::string NewResponseId(Endpoint endpoint) {
  static std::atomic<uint64_t> next{1};
  return absl::StrFormat("%s-%x-%d", endpoint == Endpoint::kChatCompletions ? "chatcmpl" : "cmpl",
                         absl::ToUnixMicros(absl::Now()), next.fetch_add(1));
}

// The prompt tokens of `request` (BOS as the vocabulary asks).
absl::StatusOr<std::vector<int32_t>> PromptTokens(const ServedModel& model,
                                                  const CompletionRequest& request) {
  const framework::Tokenizer& tokenizer = model.llm->tokenizer();
  const bool add_bos = tokenizer.vocabulary().add_bos;
  if (request.endpoint == Endpoint::kCompletions) {
    return tokenizer.Encode(request.prompt, add_bos);
  }
  if (!model.chat_template.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this model has no chat template (", model.chat_template.status().message(),
        "): use /v1/completions, or start npu-serve with --chat-template FAMILY"));
  }
  absl::StatusOr<std::vector<framework::TextSegment>> segments =
      model.chat_template->RenderSegments(request.messages, /*add_generation_prompt=*/true,
                                          request.tool_definitions);
  if (!segments.ok()) return segments.status();
  return tokenizer.EncodeSegments(*segments, add_bos);
}

// The state of one streamed response, shared by its content provider calls.
struct StreamState {
  std::shared_ptr<RequestStream> stream;
  ResponseHeader header;
  bool include_usage = false;
  // With tools: splits the text into content and tool calls.
  std::optional<so::ToolCallParser> tool_calls;
  std::string text;  // to send next
  bool first = true;
  bool finished = false;
  absl::Time last_write;
};

Usage UsageOf(const RequestOutcome& outcome) {
  return {.prompt_tokens = outcome.result.stats.prompt_tokens,
          .completion_tokens = outcome.result.stats.generated_tokens,
          .cached_tokens = outcome.cached_tokens};
}

std::string NoteOf(const RequestOutcome& outcome) {
  if (!outcome.status.ok()) return absl::StrCat("error=\"", outcome.status.message(), "\"");
  const framework::GenerationResult& r = outcome.result;
  std::string note = absl::StrFormat(
      "prompt=%d cached=%d completion=%d finish=%s ttft_ms=%.1f tok/s=%.1f",
      r.stats.prompt_tokens, outcome.cached_tokens, r.stats.generated_tokens,
      framework::FinishReasonName(r.finish_reason), r.stats.time_to_first_token_ms,
      r.stats.decode_tokens_per_second);
  if (!r.error.ok()) absl::StrAppend(&note, " error=\"", r.error.message(), "\"");
  return note;
}

// The answer for the error that ended a generation: 400 naming logit_bias
// when it banned every token left (InvalidArgument,
// GenerationResult::error), otherwise 500 for the device.
ApiError GenerationError(const absl::Status& error) {
  if (error.code() == absl::StatusCode::kInvalidArgument) {
    return InvalidRequest(std::string(error.message()), "logit_bias");
  }
  return {.http_status = 500,
          .type = "server_error",
          .message = absl::StrCat("the device failed during generation: ", error.message())};
}

// The 500 answer for a reply that departed from the tool-call format,
// which its grammar rules out.
ApiError ToolCallFormatError(const absl::Status& status) {
  return {.http_status = 500,
          .type = "server_error",
          .message = absl::StrCat("the reply is not in the tool-call format its grammar enforces: ",
                                  status.message())};
}

// Writes the events of `pieces` (content and tool call deltas) of `state`'s
// reply; false when the client is gone.
bool WritePieces(StreamState& state, std::vector<so::ReplyPiece>& pieces,
                 const std::function<bool(std::string_view)>& write) {
  using Kind = so::ReplyPiece::Kind;
  for (const so::ReplyPiece& piece : pieces) {
    const std::string event =
        piece.kind == Kind::kContent
            ? ChunkEvent(state.header, piece.text, state.first, std::nullopt)
            : ToolCallDeltaEvent(state.header, piece.call,
                                 piece.kind == Kind::kCallStart
                                     ? std::optional<std::string_view>(piece.text)
                                     : std::nullopt,
                                 piece.kind == Kind::kCallStart ? "" : piece.text, state.first);
    if (!write(event)) return false;
    state.first = false;
  }
  pieces.clear();
  return true;
}

// Writes the next events of `state` to `sink`; false when the client is gone.
bool WriteStreamEvents(StreamState& state, httplib::DataSink& sink) {
  const std::function<bool(std::string_view)> write = [&sink, &state](std::string_view event) {
    state.last_write = absl::Now();
    return sink.write(event.data(), event.size());
  };
  std::vector<so::ReplyPiece> pieces;
  if (state.tool_calls) {
    state.tool_calls->Push(state.text, pieces);
  } else if (!state.text.empty()) {
    pieces.push_back({.text = std::move(state.text)});
  }
  state.text.clear();
  if (pieces.empty() && state.first) {
    if (!write(ChunkEvent(state.header, "", true, std::nullopt))) return false;
    state.first = false;
  }
  if (!WritePieces(state, pieces, write)) return false;
  if (!state.finished) {
    // A comment every few seconds keeps proxies from timing out and finds
    // clients that went away.
    if (absl::Now() - state.last_write > absl::Seconds(5) && !write(": keep-alive\n\n")) {
      return false;
    }
    return true;
  }
  const RequestOutcome& outcome = state.stream->outcome();
  request_note = NoteOf(outcome);
  if (!outcome.status.ok()) {
    if (!write(ErrorEvent(ApiErrorFromStatus(outcome.status).Body()))) return false;
  } else if (outcome.result.finish_reason == framework::FinishReason::kError) {
    if (!write(ErrorEvent(GenerationError(outcome.result.error).Body()))) return false;
  } else if (state.tool_calls && !state.tool_calls->status().ok()) {
    if (!write(ErrorEvent(ToolCallFormatError(state.tool_calls->status()).Body()))) return false;
  } else {
    if (state.tool_calls) state.tool_calls->Finish(pieces);
    if (!WritePieces(state, pieces, write)) return false;
    const bool called = state.tool_calls && state.tool_calls->calls() > 0;
    if (!write(ChunkEvent(state.header, "", false,
                          OpenAiFinishReason(outcome.result.finish_reason, called)))) {
      return false;
    }
    if (state.include_usage && !write(UsageEvent(state.header, UsageOf(outcome)))) return false;
  }
  if (!write(DoneEvent())) return false;
  sink.done();
  return true;
}

}  // namespace

void SetError(httplib::Response& res, const ApiError& error) {
  if (request_note.empty()) request_note = absl::StrCat("error=\"", error.message, "\"");
  res.status = error.http_status;
  res.set_content(error.Body(), kJson);
}

ApiServer::ApiServer(const ApiOptions& options, Metrics& metrics)
    : options_(options), metrics_(metrics) {}

bool ApiServer::Authorized(const httplib::Request& req, httplib::Response& res) const {
  if (options_.api_key.empty() ||
      req.get_header_value("Authorization") == absl::StrCat("Bearer ", options_.api_key)) {
    return true;
  }
  SetError(res, {.http_status = 401,
                 .type = "authentication_error",
                 .message = "missing or wrong API key: send the header "
                            "'Authorization: Bearer KEY'",
                 .code = "invalid_api_key"});
  return false;
}

const ServedModel* ApiServer::ModelOr503(httplib::Response& res) const {
  const ServedModel* model = model_.load();
  if (model == nullptr || stopping_.load()) {
    SetError(res, {.http_status = 503,
                   .type = "server_error",
                   .message = model == nullptr ? "the model is still loading: retry shortly"
                                               : "the server is shutting down"});
    return nullptr;
  }
  return model;
}

void ApiServer::HandleHealth(httplib::Response& res) const {
  const ServedModel* model = model_.load();
  const char* status = model == nullptr ? "loading" : stopping_.load() ? "shutting_down" : "ok";
  res.status = model != nullptr && !stopping_.load() ? 200 : 503;
  res.set_content(absl::StrCat("{\"status\":\"", status, "\"}"), kJson);
}

void ApiServer::HandleCompletion(const httplib::Request& req, httplib::Response& res,
                                 Endpoint endpoint) {
  if (!Authorized(req, res)) return;
  const ServedModel* model = ModelOr503(res);
  if (model == nullptr) return;
  const runtime::ModelInfo& info = model->llm->info();
  std::variant<CompletionRequest, ApiError> parsed = ParseCompletionRequest(
      req.body, endpoint,
      {.default_max_tokens = static_cast<int>(info.kv_capacity),
       .vocab_size = static_cast<int32_t>(info.vocab_size)});
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) return SetError(res, *error);
  CompletionRequest& request = std::get<CompletionRequest>(parsed);
  std::variant<ReplyFormat, ApiError> format = ReplyFormatOf(request, model->chat_template);
  if (const ApiError* error = std::get_if<ApiError>(&format)) return SetError(res, *error);
  const ReplyFormat& reply_format = std::get<ReplyFormat>(format);

  absl::StatusOr<std::vector<int32_t>> prompt = PromptTokens(*model, request);
  if (!prompt.ok()) return SetError(res, InvalidRequest(std::string(prompt.status().message())));
  if (!model->ring_policy && prompt->size() > info.kv_capacity) {
    return SetError(res, InvalidRequest(
        absl::StrCat("the prompt has ", prompt->size(), " tokens but the model's context holds ",
                     info.kv_capacity, ": shorten it"),
        endpoint == Endpoint::kChatCompletions ? "messages" : "prompt",
        "context_length_exceeded"));
  }
  std::unique_ptr<framework::TokenConstraint> constraint;
  if (reply_format.grammar != nullptr) {
    constraint = std::make_unique<so::GrammarMatcher>(reply_format.grammar, model->token_trie);
  }
  absl::StatusOr<std::shared_ptr<RequestStream>> stream = model->scheduler->Submit(
      *std::move(prompt), request.config, request_start, std::move(constraint));
  if (!stream.ok()) {
    if (absl::IsResourceExhausted(stream.status())) {
      res.set_header("Retry-After", "1");
      return SetError(res, {.http_status = 429,
                            .type = "rate_limit_exceeded",
                            .message = std::string(stream.status().message()),
                            .code = "queue_full"});
    }
    return SetError(res, ApiErrorFromStatus(stream.status()));
  }

  auto state = std::make_shared<StreamState>();
  state->stream = *stream;
  state->header = {.endpoint = endpoint,
                   .id = NewResponseId(endpoint),
                   .created = absl::ToUnixSeconds(absl::Now()),
                   .model = request.model.empty() ? model->id : request.model};
  state->include_usage = request.include_usage;
  if (reply_format.tool_calls) state->tool_calls.emplace(*reply_format.tool_calls);
  // Streaming waits for the first text only, so that errors found before
  // any token still get their own status.
  while (!state->finished && (!request.stream || state->text.empty())) {
    state->finished = state->stream->Wait(absl::Seconds(1), state->text);
  }
  if (state->finished) {
    const RequestOutcome& outcome = state->stream->outcome();
    request_note = NoteOf(outcome);
    if (!outcome.status.ok()) return SetError(res, ApiErrorFromStatus(outcome.status));
    if (outcome.result.finish_reason == framework::FinishReason::kError) {
      return SetError(res, GenerationError(outcome.result.error));
    }
    if (!request.stream) {
      so::ParsedReply reply{.content = outcome.result.text, .calls = {}};
      if (reply_format.tool_calls) {
        absl::StatusOr<so::ParsedReply> parsed =
            so::ParseToolCalls(*reply_format.tool_calls, outcome.result.text);
        if (!parsed.ok()) return SetError(res, ToolCallFormatError(parsed.status()));
        reply = *std::move(parsed);
      }
      return res.set_content(
          CompletionJson(state->header, reply.content, outcome.result.finish_reason,
                         UsageOf(outcome), reply.calls),
          kJson);
    }
  }
  res.set_header("Cache-Control", "no-cache");
  state->last_write = absl::Now();
  {
    absl::MutexLock lock(&streams_mu_);
    ++open_streams_;
  }
  res.set_chunked_content_provider(
      "text/event-stream",
      [state](size_t, httplib::DataSink& sink) {
        if (!WriteStreamEvents(*state, sink)) {
          state->stream->Cancel();
          return false;
        }
        if (!state->finished) {
          state->finished = state->stream->Wait(absl::Milliseconds(500), state->text);
        }
        return true;
      },
      // Ends the generation at once when the client went away.
      [this, state](bool) {
        state->stream->Cancel();
        absl::MutexLock lock(&streams_mu_);
        --open_streams_;
      });
}

void ApiServer::WaitForStreams(absl::Duration timeout) {
  absl::MutexLock lock(&streams_mu_);
  const auto none_open = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(streams_mu_) {
    return open_streams_ == 0;
  };
  streams_mu_.AwaitWithTimeout(absl::Condition(&none_open), timeout);
}

void ApiServer::Register(httplib::Server& http) {
  http.set_payload_max_length(options_.max_body_bytes);
  // Stream events are small writes: without TCP_NODELAY, Nagle's algorithm
  // holds each one until the previous is acknowledged.
  http.set_tcp_nodelay(true);
  http.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_start = absl::Now();
    request_note.clear();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // an API error set by a handler
    switch (res.status) {
      case 404:
        return SetError(res, {.http_status = 404,
                              .type = "not_found_error",
                              .message = absl::StrCat("no route ", req.method, " ", req.path)});
      case 413:
        return SetError(res, {.http_status = 413,
                              .type = "invalid_request_error",
                              .message = absl::StrCat("the request body is larger than ",
                                                      options_.max_body_bytes, " bytes"),
                              .code = "request_too_large"});
      default:
        return SetError(res, {.http_status = res.status,
                              .type = res.status < 500 ? "invalid_request_error" : "server_error",
                              .message = absl::StrCat("HTTP ", res.status, " for ", req.method,
                                                      " ", req.path)});
    }
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.CountRequest(req.matches.empty() ? "other" : req.path, res.status);
    if (!options_.log_requests) return;
    const double ms = request_start == absl::Time()
                          ? 0
                          : absl::ToDoubleMilliseconds(absl::Now() - request_start);
    std::cerr << absl::StrFormat("npu-serve: %s %s %s %d %.1fms %s\n", req.remote_addr,
                                 req.method, req.path, res.status, ms, request_note);
  });

  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(ChatPageHtml()), "text/html; charset=utf-8");
  });
  http.Get("/health",
           [this](const httplib::Request&, httplib::Response& res) { HandleHealth(res); });
  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    const ServedModel* model = model_.load();
    res.set_content(metrics_.Render(model ? model->scheduler->Gauges() : MetricsGauges{}),
                    "text/plain; version=0.0.4");
  });
  http.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    const ServedModel* model = ModelOr503(res);
    if (model != nullptr) res.set_content(ModelsJson(model->id, model->created), kJson);
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(req, res, Endpoint::kChatCompletions);
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(req, res, Endpoint::kCompletions);
  });
}

}  // namespace lnpu::serve
