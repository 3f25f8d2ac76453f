// The server's counters and histograms, rendered in the Prometheus text
// exposition format for GET /metrics.
//
// Thread-safety: every method may be called from any thread.
#ifndef TOOLS_NPU_SERVE_METRICS_H_
#define TOOLS_NPU_SERVE_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace lnpu::serve {

// Cumulative buckets over fixed upper bounds (seconds), as Prometheus
// histograms. Not thread-safe by itself (Metrics locks around it).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  // "name_bucket{le=...} n" lines, then name_sum and name_count.
  void Render(std::string_view name, std::string& out) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> upper_bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Values sampled when /metrics is read.
struct MetricsGauges {
  size_t queue_depth = 0;
  size_t active_requests = 0;
  size_t sessions = 0;
  uint64_t device_memory_bytes = 0;  // weights and sessions
  size_t prefix_cache_entries = 0;
  uint64_t prefix_cache_bytes = 0;
  uint64_t prefix_cache_hits = 0;
  uint64_t prefix_cache_misses = 0;
  // Batched decode steps (SessionBatch) and the tokens they ran.
  uint64_t batched_decode_steps = 0;
  uint64_t batched_decode_tokens = 0;
};

class Metrics {
 public:
  Metrics();

  // One finished HTTP request on `route` ("/v1/chat/completions", ...).
  void CountRequest(std::string_view route, int http_status);
  // One finished generation.
  void CountGeneration(int prompt_tokens, int cached_tokens, int completion_tokens,
                       std::string_view finish_reason);
  void ObserveTimeToFirstToken(double seconds);
  // The time between two tokens of one stream.
  void ObserveDecodeStep(double seconds);

  // The requests counted for `route` and `http_status` (tests).
  uint64_t requests(std::string_view route, int http_status) const;

  std::string Render(const MetricsGauges& gauges) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> finish_reasons_ ABSL_GUARDED_BY(mu_);
  uint64_t prompt_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cached_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completion_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  Histogram time_to_first_token_ ABSL_GUARDED_BY(mu_);
  Histogram decode_step_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_METRICS_H_
