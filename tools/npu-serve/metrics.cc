#include "tools/npu-serve/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lnpu::serve {

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t bucket =
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::Render(std::string_view name, std::string& out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    cumulative += counts_[i];
    absl::StrAppendFormat(&out, "%s_bucket{le=\"%g\"} %d\n", name, upper_bounds_[i], cumulative);
  }
  absl::StrAppendFormat(&out, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %.9g\n%s_count %d\n", name,
                        count_, name, sum_, name, count_);
}

Metrics::Metrics()
    : time_to_first_token_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      decode_step_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}) {}

void Metrics::CountRequest(std::string_view route, int http_status) {
  absl::MutexLock lock(&mu_);
  ++requests_[{std::string(route), http_status}];
}

void Metrics::CountGeneration(int prompt_tokens, int cached_tokens, int completion_tokens,
                              std::string_view finish_reason) {
  absl::MutexLock lock(&mu_);
  prompt_tokens_ += prompt_tokens;
  cached_tokens_ += cached_tokens;
  completion_tokens_ += completion_tokens;
  ++finish_reasons_[std::string(finish_reason)];
}

void Metrics::ObserveTimeToFirstToken(double seconds) {
  absl::MutexLock lock(&mu_);
  time_to_first_token_.Observe(seconds);
}

void Metrics::ObserveDecodeStep(double seconds) {
  absl::MutexLock lock(&mu_);
  decode_step_.Observe(seconds);
}

uint64_t Metrics::requests(std::string_view route, int http_status) const {
  absl::MutexLock lock(&mu_);
  const auto it = requests_.find({std::string(route), http_status});
  return it == requests_.end() ? 0 : it->second;
}

std::string Metrics::Render(const MetricsGauges& g) const {
  absl::MutexLock lock(&mu_);
  std::string out;
  out += "# HELP npu_serve_requests_total HTTP requests by route and status.\n"
         "# TYPE npu_serve_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    absl::StrAppendFormat(&out, "npu_serve_requests_total{route=\"%s\",status=\"%d\"} %d\n",
                          key.first, key.second, n);
  }
  out += "# HELP npu_serve_generations_total Finished generations by finish reason.\n"
         "# TYPE npu_serve_generations_total counter\n";
  for (const auto& [reason, n] : finish_reasons_) {
    absl::StrAppendFormat(&out, "npu_serve_generations_total{finish_reason=\"%s\"} %d\n",
                          reason, n);
  }
  const auto counter = [&out](std::string_view name, std::string_view help, uint64_t value) {
    absl::StrAppendFormat(&out, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name,
                          name, value);
  };
  const auto gauge = [&out](std::string_view name, std::string_view help, uint64_t value) {
    absl::StrAppendFormat(&out, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name,
                          name, value);
  };
  counter("npu_serve_prompt_tokens_total", "Prompt tokens of finished generations.",
          prompt_tokens_);
  counter("npu_serve_cached_prompt_tokens_total", "Prompt tokens taken from the prefix cache.",
          cached_tokens_);
  counter("npu_serve_completion_tokens_total", "Generated tokens.", completion_tokens_);
  counter("npu_serve_prefix_cache_hits_total", "Prefix cache lookups that found a prefix.",
          g.prefix_cache_hits);
  counter("npu_serve_prefix_cache_misses_total", "Prefix cache lookups that found none.",
          g.prefix_cache_misses);
  counter("npu_serve_batched_decode_steps_total",
          "Device steps that ran the decode steps of several sessions at once.",
          g.batched_decode_steps);
  counter("npu_serve_batched_decode_tokens_total", "Tokens run by batched decode steps.",
          g.batched_decode_tokens);
  gauge("npu_serve_queue_depth", "Requests waiting for a session.", g.queue_depth);
  gauge("npu_serve_active_requests", "Requests holding a session.", g.active_requests);
  gauge("npu_serve_sessions", "Sessions (concurrent requests) the server runs.", g.sessions);
  gauge("npu_serve_device_memory_bytes", "Device memory of the weights and sessions.",
        g.device_memory_bytes);
  gauge("npu_serve_prefix_cache_entries", "Prefixes in the prefix cache.",
        g.prefix_cache_entries);
  gauge("npu_serve_prefix_cache_bytes", "Host memory of the prefix cache.",
        g.prefix_cache_bytes);
  out += "# HELP npu_serve_time_to_first_token_seconds Request arrival to first token.\n"
         "# TYPE npu_serve_time_to_first_token_seconds histogram\n";
  time_to_first_token_.Render("npu_serve_time_to_first_token_seconds", out);
  out += "# HELP npu_serve_decode_step_seconds Time between two tokens of one request.\n"
         "# TYPE npu_serve_decode_step_seconds histogram\n";
  decode_step_.Render("npu_serve_decode_step_seconds", out);
  return out;
}

}  // namespace lnpu::serve
