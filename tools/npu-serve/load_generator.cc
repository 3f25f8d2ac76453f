// npu-serve-load: a load generator for npu-serve. For each client count of
// --clients, that many threads each send --requests streaming completions
// one after another (greedy, --max_tokens tokens, distinct prompts so the
// prefix cache does not help), and per client count one line is printed:
//   clients=4 requests=32 tokens=2048 wall_s=1.93 aggregate_tok_s=1061.2 decode_tok_s=1290.4 ttft_p50_ms=3.1 ttft_p99_ms=9.8 errors=0
// aggregate_tok_s: generated tokens per second of wall time (prompt
// processing, time to first token and clients finishing at different times
// included); decode_tok_s: the aggregate decode speed, the sum over the
// clients of each one's decode rate (its tokens after the first of each
// request over the time from first to last text chunk); ttft: time to the
// first text chunk.
// Loopback only by default; bounded by --requests and --timeout.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, host, "127.0.0.1", "npu-serve's address");
ABSL_FLAG(int, port, 8080, "npu-serve's port");
ABSL_FLAG(std::string, api_key, "", "API key, if the server wants one");
ABSL_FLAG(std::string, clients, "1,2,4,8", "comma-separated concurrent client counts");
ABSL_FLAG(int, requests, 8, "streaming requests per client");
ABSL_FLAG(int, max_tokens, 64, "tokens per request");
ABSL_FLAG(double, temperature, 0,
          "sampling temperature of the requests: 0 greedy, 1 OpenAI's default (seeded per "
          "request)");
ABSL_FLAG(std::string, prompt, "Once upon a time", "prompt prefix (a request number follows)");
ABSL_FLAG(int, timeout, 300, "seconds per request before it counts as an error");

namespace {

struct RequestFigures {
  bool ok = false;
  double ttft_ms = 0;
  double decode_s = 0;  // from the first text chunk to the last
  int tokens = 0;
};

// One streaming /v1/completions request; `number` names it in the prompt
// and seeds its sampling.
RequestFigures StreamOne(int number) {
  const std::string prompt = absl::StrCat(number, ". ", absl::GetFlag(FLAGS_prompt));
  httplib::Client client(absl::GetFlag(FLAGS_host), absl::GetFlag(FLAGS_port));
  client.set_read_timeout(absl::GetFlag(FLAGS_timeout), 0);
  client.set_tcp_nodelay(true);
  httplib::Headers headers;
  if (!absl::GetFlag(FLAGS_api_key).empty()) {
    headers.emplace("Authorization", "Bearer " + absl::GetFlag(FLAGS_api_key));
  }
  const nlohmann::json body = {{"prompt", prompt},
                               {"max_tokens", absl::GetFlag(FLAGS_max_tokens)},
                               {"temperature", absl::GetFlag(FLAGS_temperature)},
                               {"seed", number},
                               {"stream", true},
                               {"stream_options", {{"include_usage", true}}}};
  RequestFigures figures;
  std::string buffer;
  bool done = false;
  const absl::Time start = absl::Now();
  absl::Time first_text, last_text;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = headers;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    buffer.append(data, size);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (!event.starts_with("data: ")) continue;
      const std::string data_text = event.substr(6);
      if (data_text == "[DONE]") {
        done = true;
        continue;
      }
      const nlohmann::json chunk = nlohmann::json::parse(data_text, nullptr, false);
      if (chunk.is_discarded() || chunk.contains("error")) return false;
      if (chunk.contains("usage") && chunk["usage"].is_object()) {
        figures.tokens = chunk["usage"].value("completion_tokens", 0);
      } else if (chunk.contains("choices") && !chunk["choices"].empty() &&
                 !chunk["choices"][0].value("text", "").empty()) {
        last_text = absl::Now();
        if (figures.ttft_ms == 0) {
          first_text = last_text;
          figures.ttft_ms = absl::ToDoubleMilliseconds(first_text - start);
        }
      }
    }
    return true;
  };
  const httplib::Result result = client.send(req);
  figures.ok = result && result->status == 200 && done;
  figures.decode_s = absl::ToDoubleSeconds(last_text - first_text);
  return figures;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  return values[index];
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "npu-serve-load [--host H --port P] [--clients 1,2,4,8] [--requests N]: aggregate "
      "streaming tok/s and time to first token of npu-serve");
  absl::ParseCommandLine(argc, argv);
  std::atomic<int> next_prompt{0};
  for (const absl::string_view count_text : absl::StrSplit(absl::GetFlag(FLAGS_clients), ',')) {
    int clients = 0;
    if (!absl::SimpleAtoi(count_text, &clients) || clients < 1) {
      std::cerr << "npu-serve-load: --clients has '" << count_text
                << "': give positive counts, comma-separated\n";
      return 2;
    }
    std::mutex mu;
    std::vector<double> ttfts;
    int tokens = 0, errors = 0;
    double decode_tok_s = 0;  // the sum of the clients' decode rates
    const absl::Time start = absl::Now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&] {
        int decode_tokens = 0;
        double decode_s = 0;
        for (int r = 0; r < absl::GetFlag(FLAGS_requests); ++r) {
          const RequestFigures f = StreamOne(next_prompt.fetch_add(1));
          std::lock_guard<std::mutex> lock(mu);
          if (!f.ok) {
            ++errors;
            continue;
          }
          ttfts.push_back(f.ttft_ms);
          tokens += f.tokens;
          if (f.tokens > 1) {
            decode_tokens += f.tokens - 1;
            decode_s += f.decode_s;
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        if (decode_s > 0) decode_tok_s += decode_tokens / decode_s;
      });
    }
    for (std::thread& t : threads) t.join();
    const double wall = absl::ToDoubleSeconds(absl::Now() - start);
    std::cout << absl::StrFormat(
        "clients=%d requests=%d tokens=%d wall_s=%.2f aggregate_tok_s=%.1f decode_tok_s=%.1f "
        "ttft_p50_ms=%.1f ttft_p99_ms=%.1f errors=%d\n",
        clients, clients * absl::GetFlag(FLAGS_requests), tokens, wall, tokens / wall,
        decode_tok_s, Percentile(ttfts, 0.5), Percentile(ttfts, 0.99), errors);
    if (errors > 0) return 1;
  }
  return 0;
}
