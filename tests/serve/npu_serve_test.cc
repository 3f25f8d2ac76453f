// npu-serve as a program ($LNPU_NPU_SERVE) over loopback (127.0.0.1 only,
// bounded in requests and time), on stories260K compiled here: every
// endpoint, streaming and not, output equal to the framework's for the
// same greedy request, every error case, client disconnects, a slow
// reader, a burst of 1,000 requests, a device fault, SIGTERM, and a
// bounded soak test of mixed clients.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "framework/chat_template.h"
#include "framework/llm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/serve/serve_test_support.h"
#include "tests/tools/tool_test_support.h"

extern char** environ;

// How far the server's RSS may stay above its baseline after load: the
// prefix cache's small states, or AddressSanitizer's quarantine of freed
// memory (256 MiB by default) and its shadow in a sanitizer build; the
// normal build keeps the tight bound. (GCC says ASan with
// __SANITIZE_ADDRESS__, clang with __has_feature.)
#if defined(__SANITIZE_ADDRESS__)
#define LNPU_SERVE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LNPU_SERVE_TEST_ASAN 1
#endif
#endif
#if defined(LNPU_SERVE_TEST_ASAN)
constexpr long kRssAllowanceKib = 640 * 1024;
#else
constexpr long kRssAllowanceKib = 16 * 1024;
#endif

namespace lnpu {
namespace {

using nlohmann::json;
using serve::testing::kKey;
using serve::testing::PostStream;
using serve::testing::ServerProcess;
using serve::testing::Stream;
using ::testing::HasSubstr;
using tools::testing::ReadFileOrEmpty;
using tools::testing::TestDirectory;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("npu_serve_test"));

// stories260K with a 128 + 64 slot cache and prefill chunks {16, 64}.
const std::string& Artifact() {
  static const std::string* const path = [] {
    const char* models = std::getenv("LNPU_MODELS_DIR");
    compiler::CompileOptions options;
    options.max_prompt_len = 128;
    options.min_response_len = 64;
    options.prefill_chunks = {16, 64};
    const std::string artifact = TestDirectory::Path("stories.lnpu");
    const absl::Status compiled = compiler::CompileGguf(
        std::string(models ? models : "models") + "/stories260K.gguf", artifact, options);
    EXPECT_TRUE(compiled.ok()) << compiled;
    return new std::string(artifact);
  }();
  return *path;
}

framework::GenerationConfig Greedy(int max_new_tokens) {
  framework::GenerationConfig config;
  config.max_new_tokens = max_new_tokens;
  return config;
}

class NpuServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(Artifact(), "main",
                                {"--api-key", kKey, "--sessions", "2", "--queue", "8",
                                 "--max-body-bytes", "65536", "--chat-template", "chatml"});
    llm_ = framework::Llm::Load(Artifact(), {.device = "soft"}).value().release();
  }
  static void TearDownTestSuite() {
    delete llm_;
    delete server_;
  }

  static httplib::Result Post(const std::string& path, const std::string& body) {
    return server_->Client().Post(path, body, "application/json");
  }
  // Posts `body` and expects an OpenAI error with `status`; the error.
  static json ExpectError(const std::string& path, const std::string& body, int status) {
    httplib::Result res = Post(path, body);
    EXPECT_TRUE(res) << "connection dropped for " << body.substr(0, 200);
    if (!res) return {};
    EXPECT_EQ(res->status, status) << res->body;
    const json error = json::parse(res->body, nullptr, false);
    EXPECT_TRUE(error.contains("error") && error["error"].contains("message")) << res->body;
    return error.contains("error") ? error["error"] : json();
  }

  static ServerProcess* server_;
  static framework::Llm* llm_;
};

ServerProcess* NpuServeTest::server_ = nullptr;
framework::Llm* NpuServeTest::llm_ = nullptr;

TEST_F(NpuServeTest, HealthModelsPageAndMetrics) {
  httplib::Result health = server_->Client(false).Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  httplib::Result models = server_->Client().Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "stories");
  httplib::Result page = server_->Client(false).Get("/");
  ASSERT_TRUE(page);
  EXPECT_THAT(page->body, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(page->body, HasSubstr("/v1/chat/completions"));
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(server_->Metric("npu_serve_sessions"), 2);
  EXPECT_GT(server_->Metric("npu_serve_device_memory_bytes"), 0);
  EXPECT_THAT(server_->log(), HasSubstr("GET /health 200"));
}

TEST_F(NpuServeTest, GreedyCompletionEqualsFrameworkGeneration) {
  const std::string prompt = "Once upon a time, there was a little";
  const framework::GenerationResult expected = llm_->Generate(prompt, Greedy(24)).value();
  ASSERT_FALSE(expected.text.empty());
  const json body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}};
  httplib::Result res = Post("/v1/completions", body.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json whole = json::parse(res->body);
  EXPECT_EQ(whole["object"], "text_completion");
  EXPECT_EQ(whole["choices"][0]["text"], expected.text);
  EXPECT_EQ(whole["choices"][0]["finish_reason"],
            expected.finish_reason == framework::FinishReason::kLength ? "length" : "stop");
  EXPECT_EQ(whole["usage"]["completion_tokens"], expected.tokens.size());
  EXPECT_EQ(whole["usage"]["prompt_tokens"], expected.stats.prompt_tokens);

  json stream_body = body;
  stream_body["stream"] = true;
  stream_body["stream_options"] = {{"include_usage", true}};
  const Stream stream = PostStream(server_->Client(), "/v1/completions", stream_body);
  EXPECT_EQ(stream.status, 200);
  EXPECT_TRUE(stream.done);
  EXPECT_EQ(stream.text, expected.text);
  ASSERT_GE(stream.chunks.size(), 3u);
  const json& last = stream.chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], expected.tokens.size());
  EXPECT_EQ(stream.chunks[stream.chunks.size() - 2]["choices"][0]["finish_reason"],
            whole["choices"][0]["finish_reason"]);
}

TEST_F(NpuServeTest, ChatCompletionEqualsFrameworkGeneration) {
  const std::vector<framework::ChatMessage> messages = {
      {"system", "You tell stories."}, {"user", "Tell me about a cat"}};
  const framework::ChatTemplate chat =
      llm_->GetChatTemplate(framework::ChatFamily::kChatMl).value();
  const std::vector<int32_t> prompt =
      llm_->tokenizer()
          .EncodeSegments(chat.RenderSegments(messages, true).value(),
                          llm_->tokenizer().vocabulary().add_bos)
          .value();
  const framework::GenerationResult expected =
      llm_->GenerateFromTokens(prompt, Greedy(20)).value();
  json body = {{"messages",
                {{{"role", "system"}, {"content", "You tell stories."}},
                 {{"role", "user"}, {"content", "Tell me about a cat"}}}},
               {"max_tokens", 20},
               {"temperature", 0},
               {"an_unknown_field", {1, 2}}};
  httplib::Result res = Post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json whole = json::parse(res->body);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], expected.text);
  EXPECT_EQ(whole["usage"]["prompt_tokens"], prompt.size());

  body["stream"] = true;
  const Stream stream = PostStream(server_->Client(), "/v1/chat/completions", body);
  EXPECT_TRUE(stream.done);
  EXPECT_EQ(stream.text, expected.text);
  EXPECT_EQ(stream.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(stream.chunks.front()["object"], "chat.completion.chunk");
}

TEST_F(NpuServeTest, ResentConversationReportsCachedTokens) {
  const std::string first = "Tim and Sue went to the big green park to";
  const json one = {{"prompt", first}, {"max_tokens", 8}, {"temperature", 0}};
  httplib::Result r1 = Post("/v1/completions", one.dump());
  ASSERT_TRUE(r1);
  ASSERT_EQ(r1->status, 200);
  const json w1 = json::parse(r1->body);
  const std::string second = first + w1["choices"][0]["text"].get<std::string>() + " Then";
  const json two = {{"prompt", second}, {"max_tokens", 8}, {"temperature", 0}};
  httplib::Result r2 = Post("/v1/completions", two.dump());
  ASSERT_TRUE(r2);
  const json w2 = json::parse(r2->body);
  EXPECT_GE(w2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            w1["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(w2["choices"][0]["text"], llm_->Generate(second, Greedy(8)).value().text);
  EXPECT_GT(server_->Metric("npu_serve_cached_prompt_tokens_total"), 0);
}

TEST_F(NpuServeTest, BadRequestsGetOpenAiErrors) {
  EXPECT_EQ(ExpectError("/v1/chat/completions", "{\"messages\": [", 400)["type"],
            "invalid_request_error");
  EXPECT_EQ(ExpectError("/v1/chat/completions",
                        R"({"messages": [{"role": "user", "content": "x"}], "top_k": "5"})",
                        400)["param"],
            "top_k");
  EXPECT_EQ(ExpectError("/v1/completions", "{\"prompt\": \"abc\xc3\x28\"}", 400)["code"],
            "invalid_json");
  EXPECT_THAT(ExpectError("/v1/chat/completions",
                          R"({"messages": [{"role": "user", "content": "x"}],
                              "response_format": {"type": "json_schema", "json_schema":
                              {"name": "n", "schema": {"type": "integer", "multipleOf": 2}}}})",
                          400)["message"]
                  .get<std::string>(),
              HasSubstr("'multipleOf'"));
  std::string long_prompt;
  for (int i = 0; i < 400; ++i) long_prompt += "the dog ran and ";
  EXPECT_EQ(ExpectError("/v1/completions", json{{"prompt", long_prompt}}.dump(), 400)["code"],
            "context_length_exceeded");
  const std::string huge = json{{"prompt", std::string(200000, 'a')}}.dump();
  EXPECT_EQ(ExpectError("/v1/completions", huge, 413)["code"], "request_too_large");
  httplib::Result missing = server_->Client().Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["error"]["type"], "not_found_error");
  httplib::Result no_key = server_->Client(false).Post(
      "/v1/completions", R"({"prompt": "x"})", "application/json");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  EXPECT_EQ(json::parse(no_key->body)["error"]["code"], "invalid_api_key");
  // The server still answers.
  httplib::Result ok = Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 2})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// Sends a streaming request on a raw socket and reads nothing for a while:
// the other clients are served meanwhile, and the reply is whole at the end.
TEST_F(NpuServeTest, SlowReaderDoesNotHoldUpOthers) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server_->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::string body =
      json{{"prompt", "A slow reader"}, {"max_tokens", 60}, {"stream", true}}.dump();
  const std::string request = absl::StrCat(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ", kKey,
      "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ", body.size(),
      "\r\n\r\n", body);
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  for (int i = 0; i < 3; ++i) {
    httplib::Result other = Post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 4})");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 200);
  }
  absl::SleepFor(absl::Milliseconds(500));
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  EXPECT_THAT(response, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(response, HasSubstr("data: [DONE]"));
}

TEST_F(NpuServeTest, SoakOfMixedClientsReturnsToBaseline) {
  const char* seconds_env = std::getenv("LNPU_SERVE_SOAK_SECONDS");
  const int seconds = seconds_env ? std::atoi(seconds_env) : 30;
  // Warm-up, then the baseline.
  for (int i = 0; i < 20; ++i) Post("/v1/completions", R"({"prompt": "Warm", "max_tokens": 8})");
  const int64_t baseline_kib = server_->RssKib();
  ASSERT_GT(baseline_kib, 0);
  const absl::Time end = absl::Now() + absl::Seconds(seconds);
  std::atomic<int> requests{0}, failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; absl::Now() < end; ++i) {
        const std::string prompt = absl::StrCat("Client ", c, " story ", i % 7, " of the day");
        const json body = {{"prompt", prompt}, {"max_tokens", 4 + (i % 5) * 8}, {"seed", i},
                           {"temperature", 0.8}};
        bool ok = false;
        switch ((c + i) % 4) {
          case 0: {
            httplib::Result res = Post("/v1/completions", body.dump());
            ok = res && (res->status == 200 || res->status == 429);
            break;
          }
          case 1: {
            json streaming = body;
            streaming["stream"] = true;
            const Stream s = PostStream(server_->Client(), "/v1/completions", streaming);
            ok = (s.status == 200 && s.done) || s.status == 429;
            break;
          }
          case 2: {  // gone after the first event
            json streaming = body;
            streaming["stream"] = true;
            streaming["max_tokens"] = 60;
            PostStream(server_->Client(), "/v1/completions", streaming,
                       [](const Stream&) { return false; });
            ok = true;
            break;
          }
          default: {
            httplib::Result res = Post("/v1/completions", "{\"prompt\": ");
            ok = res && res->status == 400;
          }
        }
        ++requests;
        if (!ok) ++failures;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_GT(requests.load(), 20);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(server_->MetricReaches("npu_serve_active_requests", 0));
  EXPECT_TRUE(server_->MetricReaches("npu_serve_queue_depth", 0));
  // The prefix cache may hold up to its cap of states; stories' are small.
  EXPECT_LT(server_->RssKib(), baseline_kib + kRssAllowanceKib)
      << "baseline " << baseline_kib << " KiB";
}

// npu-serve --trace writes a trace at shutdown that parses and holds each
// session's steps with their jobs, one slice per command of a step's graph
// on the engine that ran it, the scheduler's rounds and each request's
// time queued and generating.
TEST(NpuServeTraceTest, TraceHoldsStepsCommandsRoundsAndRequests) {
  const std::string trace_path = TestDirectory::Path("serve_trace.json");
  {
    ServerProcess server(Artifact(), "trace", {"--sessions", "2", "--trace", trace_path});
    for (const char* prompt : {"Once upon a time", "The little dog"}) {
      const json body = {{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}};
      httplib::Result res = server.Client().Post("/v1/completions", body.dump(),
                                                 "application/json");
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
    }
    ASSERT_EQ(server.Stop(), 0) << server.log();
  }
  const json trace = json::parse(ReadFileOrEmpty(trace_path), nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << "the trace does not parse";
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::map<std::pair<int, int>, std::string> thread_names;  // (pid, tid): name
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      thread_names[{event["pid"].get<int>(), event["tid"].get<int>()}] = event["args"]["name"];
    }
  }
  std::map<std::string, std::vector<std::string>> host;  // track: span names in order
  std::vector<const json*> jobs, commands;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    const std::string track = thread_names[{event["pid"].get<int>(), event["tid"].get<int>()}];
    if (event["cat"] == "job") jobs.push_back(&event);
    if (event["cat"] == "command") commands.push_back(&event);
    if (event["pid"] == 1) host[track].push_back(event["name"]);
  }
  for (const char* request : {"request 1", "request 2"}) {
    EXPECT_EQ(host[request], (std::vector<std::string>{"queued", "generating"})) << request;
  }
  const auto count = [](const std::vector<std::string>& names, const std::string& name) {
    return std::count(names.begin(), names.end(), name);
  };
  EXPECT_EQ(count(host["scheduler"], "admit"), 2);
  EXPECT_EQ(count(host["scheduler"], "finish"), 2);
  // Requests run one after the other on session 1: a prefill, then a
  // decode step per token after the first, each in a round of its own.
  const std::vector<std::string>& session = host["session 1"];
  const int64_t decode_steps = count(session, "step decode");
  EXPECT_EQ(decode_steps, 2 * 5);
  EXPECT_GE(count(host["scheduler"], "round"), decode_steps + 2);
  // Each decode job on the compute engine holds one slice per command of
  // the decode graph: the same count for every step.
  std::vector<size_t> decode_commands;
  for (const json* job : jobs) {
    if ((*job)["name"] != "decode job 1") continue;
    const double start = (*job)["ts"], end = start + (*job)["dur"].get<double>();
    size_t inside = 0;
    for (const json* command : commands) {
      const double ts = (*command)["ts"];
      inside += (*command)["tid"] == (*job)["tid"] && ts >= start && ts <= end;
    }
    decode_commands.push_back(inside);
  }
  ASSERT_EQ(decode_commands.size(), static_cast<size_t>(decode_steps));
  EXPECT_GT(decode_commands.front(), 10u);
  EXPECT_EQ(std::count(decode_commands.begin(), decode_commands.end(), decode_commands.front()),
            static_cast<ptrdiff_t>(decode_commands.size()));
}

// A server whose cache never fills (ring policy): generation only ends
// when the client goes away or the server stops.
class EndlessServeTest : public ::testing::Test {};

TEST_F(EndlessServeTest, ClientDisconnectFreesTheSessionAtOnce) {
  ServerProcess server(Artifact(), "ring",
                       {"--api-key", kKey, "--sessions", "1", "--ctx-policy", "ring"});
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 1000000}, {"stream", true}};
  const Stream stream = PostStream(server.Client(), "/v1/completions", body,
                                   [](const Stream& s) { return s.chunks.size() < 3; });
  EXPECT_EQ(stream.status, 200);
  EXPECT_FALSE(stream.done);
  EXPECT_TRUE(server.MetricReaches("npu_serve_active_requests", 0));
  EXPECT_EQ(server.Metric("npu_serve_generations_total{finish_reason=\"cancelled\"}"), 1);
  // The one session serves the next request.
  httplib::Result next = server.Client().Post(
      "/v1/completions", R"({"prompt": "Once", "max_tokens": 3})", "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

TEST_F(EndlessServeTest, SigtermFinishesInFlightAndRefusesNewRequests) {
  ServerProcess server(
      Artifact(), "shutdown",
      {"--api-key", kKey, "--sessions", "1", "--ctx-policy", "ring", "--shutdown-timeout", "2"});
  std::atomic<bool> streaming{false};
  Stream stream;
  std::thread client([&] {
    stream = PostStream(
        server.Client(), "/v1/completions",
        {{"prompt", "Once upon a time"}, {"max_tokens", 1000000}, {"stream", true}},
        [&](const Stream&) {
          streaming = true;
          return true;
        });
  });
  while (!streaming) absl::SleepFor(absl::Milliseconds(5));
  kill(server.pid(), SIGTERM);
  absl::SleepFor(absl::Milliseconds(300));
  httplib::Result refused = server.Client().Post(
      "/v1/completions", R"({"prompt": "Once", "max_tokens": 3})", "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  httplib::Result health = server.Client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  client.join();
  EXPECT_EQ(stream.status, 200);
  EXPECT_TRUE(stream.done);  // cancelled at the timeout, ended properly
  EXPECT_EQ(server.Stop(), 0);
  EXPECT_THAT(server.log(), HasSubstr("finishing the requests in flight"));
}

TEST(NpuServeBurstTest, ThousandRequestsGetAnswersAndNothingLeaks) {
  ServerProcess server(
      Artifact(), "burst",
      {"--api-key", kKey, "--sessions", "2", "--queue", "2", "--http-threads", "24", "--quiet"});
  const json body = {{"prompt", "Burst"}, {"max_tokens", 8}};
  for (int i = 0; i < 10; ++i) {
    server.Client().Post("/v1/completions", body.dump(), "application/json");
  }
  const int64_t baseline_kib = server.RssKib();
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 25; ++c) {
    clients.emplace_back([&] {
      httplib::Client client = server.Client();
      for (int i = 0; i < 40; ++i) {
        httplib::Result res = client.Post("/v1/completions", body.dump(), "application/json");
        if (res && res->status == 200) {
          ++ok;
        } else if (res && (res->status == 429 || res->status == 503)) {
          EXPECT_TRUE(json::parse(res->body).contains("error"));
          ++busy;
        } else {
          ADD_FAILURE() << (res ? absl::StrCat("status ", res->status, ": ", res->body)
                                : absl::StrCat("no answer: ", httplib::to_string(res.error())));
          ++other;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok + busy + other, 1000);
  EXPECT_EQ(other.load(), 0) << "dropped connections or unexpected statuses";
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(busy.load(), 0);
  EXPECT_TRUE(server.MetricReaches("npu_serve_active_requests", 0));
  EXPECT_TRUE(server.MetricReaches("npu_serve_queue_depth", 0));
  EXPECT_EQ(server.Metric("npu_serve_requests_total{route=\"/v1/completions\",status=\"429\"}"),
            busy.load());
  EXPECT_LT(server.RssKib(), baseline_kib + kRssAllowanceKib);
}

TEST(NpuServeFaultTest, DeviceFaultGives500AndTheServerKeepsServing) {
  ServerProcess server(Artifact(), "fault", {"--api-key", kKey, "--sessions", "1"},
                       {"LNPU_SOFTNPU_FAIL=fault:compute:1"});
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 4})";
  httplib::Result failed = server.Client().Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500) << failed->body;
  EXPECT_EQ(json::parse(failed->body)["error"]["type"], "server_error");
  httplib::Result next = server.Client().Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
  httplib::Result health = server.Client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

}  // namespace
}  // namespace lnpu
