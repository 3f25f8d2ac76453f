#include "tools/npu-bench/model_benchmark.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "base/argmax.h"
#include "base/status_macros.h"
#include "runtime/sequence.h"
#include "tools/npu-bench/cpu_contention.h"

namespace lnpu::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The per-token breakdown of the stats accumulated between two snapshots.
StepBreakdown PerToken(const runtime::SequenceStats& before, const runtime::SequenceStats& after,
                       uint64_t tokens) {
  const double n = static_cast<double>(std::max<uint64_t>(tokens, 1));
  StepBreakdown b;
  b.host_us = absl::ToDoubleMicroseconds(after.host_time - before.host_time) / n;
  b.submit_us = absl::ToDoubleMicroseconds(after.submit_time - before.submit_time) / n;
  b.wait_us = absl::ToDoubleMicroseconds(after.wait_time - before.wait_time) / n;
  return b;
}

class Runner {
 public:
  Runner(runtime::Sequence& session, uint32_t vocab_size, uint64_t seed)
      : session_(session), random_(seed), token_(0, static_cast<int32_t>(vocab_size) - 1) {}

  std::vector<int32_t> RandomTokens(uint32_t n) {
    std::vector<int32_t> tokens(n);
    for (int32_t& t : tokens) t = token_(random_);
    return tokens;
  }

  // Forward() of `tokens`; returns the argmax of the logits, as greedy
  // sampling would.
  absl::StatusOr<int32_t> Forward(const std::vector<int32_t>& tokens) {
    LNPU_ASSIGN_OR_RETURN(const absl::Span<const float> logits, session_.Forward(tokens));
    return Argmax(logits);
  }

 private:
  runtime::Sequence& session_;
  std::mt19937_64 random_;
  std::uniform_int_distribution<int32_t> token_;
};

absl::Status CheckOptions(const ModelBenchmarkOptions& options, uint32_t capacity) {
  if (options.reps < 1 || options.warmups < 0 || options.decode_steps < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "reps %d, warm-ups %d, decode steps %d: give reps >= 1, warm-ups >= 0, steps >= 1",
        options.reps, options.warmups, options.decode_steps));
  }
  for (uint32_t n : options.prompt_lengths) {
    if (n < 1 || n > capacity) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--prompt-lengths: %d tokens do not fit the model's KV cache of %d slots; give "
          "1..%d or compile with a larger --max-prompt-len",
          n, capacity, capacity));
    }
  }
  if (options.ttft_prompt_tokens < 1 || options.ttft_prompt_tokens > capacity) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "time-to-first-token prompt of %d tokens does not fit the KV cache of %d slots",
        options.ttft_prompt_tokens, capacity));
  }
  const uint64_t decode_tokens =
      static_cast<uint64_t>(options.warmups + options.reps) * options.decode_steps;
  for (uint32_t percent : options.fill_percents) {
    const uint64_t start = uint64_t{capacity} * std::min(percent, 100u) / 100;
    if (percent > 99 || start + decode_tokens > capacity) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--fills: a %d%% fill of %d slots leaves %d free, but decode needs %d "
          "((warm-ups + reps) x decode steps = (%d + %d) x %d); lower the fill, --reps or "
          "--decode-steps, or compile with a larger --min-response-len",
          percent, capacity, capacity - std::min<uint64_t>(start, capacity), decode_tokens,
          options.warmups, options.reps, options.decode_steps));
    }
  }
  return absl::OkStatus();
}

}  // namespace

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

absl::StatusOr<ModelBenchmarkResult> RunModelBenchmark(runtime::Model& model,
                                                       const ModelBenchmarkOptions& options) {
  const uint32_t capacity = model.info().kv_capacity;
  LNPU_RETURN_IF_ERROR(CheckOptions(options, capacity));
  LNPU_ASSIGN_OR_RETURN(const std::unique_ptr<runtime::Sequence> created, model.CreateSequence());
  runtime::Sequence& session = *created;
  Runner runner(session, model.info().vocab_size, options.seed);
  const int runs = options.warmups + options.reps;
  ModelBenchmarkResult result;

  for (uint32_t n : options.prompt_lengths) {
    const std::vector<int32_t> prompt = runner.RandomTokens(n);
    std::vector<double> seconds;
    runtime::SequenceStats before;
    for (int run = 0; run < runs; ++run) {
      session.Reset();
      if (run == options.warmups) {
        before = session.stats();
        LNPU_RETURN_IF_ERROR(session.SetStepObserver(options.observer));
      }
      const Clock::time_point start = Clock::now();
      LNPU_RETURN_IF_ERROR(runner.Forward(prompt).status());
      if (run >= options.warmups) seconds.push_back(SecondsSince(start));
    }
    LNPU_RETURN_IF_ERROR(session.SetStepObserver(nullptr));
    const runtime::SequenceStats& after = session.stats();
    PrefillResult prefill;
    prefill.tokens = n;
    prefill.graph_runs = static_cast<uint32_t>((after.steps - before.steps) / options.reps);
    prefill.median_seconds = Median(seconds);
    prefill.tokens_per_second = n / prefill.median_seconds;
    prefill.per_token = PerToken(before, after, uint64_t{n} * options.reps);
    result.prefill.push_back(prefill);
  }

  {
    const std::vector<int32_t> prompt = runner.RandomTokens(options.ttft_prompt_tokens);
    std::vector<double> seconds;
    for (int run = 0; run < runs; ++run) {
      const Clock::time_point start = Clock::now();
      session.Reset();
      LNPU_RETURN_IF_ERROR(runner.Forward(prompt).status());
      if (run >= options.warmups) seconds.push_back(SecondsSince(start));
    }
    result.time_to_first_token.prompt_tokens = options.ttft_prompt_tokens;
    result.time_to_first_token.median_ms = Median(seconds) * 1e3;
  }

  for (uint32_t percent : options.fill_percents) {
    session.Reset();
    const uint32_t start_slots = static_cast<uint32_t>(uint64_t{capacity} * percent / 100);
    int32_t next = 0;
    if (start_slots > 0) {
      // Filled through the prefill graphs: far faster than token by token,
      // and decode cost depends only on how many slots are visible.
      LNPU_ASSIGN_OR_RETURN(next, runner.Forward(runner.RandomTokens(start_slots)));
    } else {
      next = runner.RandomTokens(1)[0];
    }
    std::vector<double> ms_per_token;
    runtime::SequenceStats before;
    uint32_t timed_first_slot = start_slots;
    DecodeResult decode;
    if (options.bandwidth_probe) {
      LNPU_ASSIGN_OR_RETURN(decode.probe_before_bytes_per_second, options.bandwidth_probe());
    }
    LNPU_ASSIGN_OR_RETURN(CpuContention contention,
                          CpuContention::Start(options.contention_processes));
    for (int run = 0; run < runs; ++run) {
      if (run == options.warmups) {
        before = session.stats();
        timed_first_slot = session.cache().used();
        LNPU_RETURN_IF_ERROR(session.SetStepObserver(options.observer));
      }
      const Clock::time_point start = Clock::now();
      for (uint32_t step = 0; step < options.decode_steps; ++step) {
        LNPU_ASSIGN_OR_RETURN(next, runner.Forward({next}));
      }
      if (run >= options.warmups) {
        ms_per_token.push_back(SecondsSince(start) * 1e3 / options.decode_steps);
      }
    }
    LNPU_RETURN_IF_ERROR(session.SetStepObserver(nullptr));
    decode.competitor_cores = contention.Stop();
    if (options.bandwidth_probe) {
      LNPU_ASSIGN_OR_RETURN(decode.probe_after_bytes_per_second, options.bandwidth_probe());
    }
    const uint64_t timed_tokens = uint64_t{options.decode_steps} * options.reps;
    decode.fill_percent = percent;
    decode.start_slots = timed_first_slot;
    // The step writing slot s attends to s earlier slots plus itself.
    decode.mean_visible_slots = timed_first_slot + (timed_tokens - 1) / 2.0 + 1;
    decode.steps = options.decode_steps;
    decode.median_ms_per_token = Median(ms_per_token);
    decode.tokens_per_second = 1e3 / decode.median_ms_per_token;
    decode.per_token = PerToken(before, session.stats(), timed_tokens);
    result.decode.push_back(decode);
  }
  return result;
}

}  // namespace lnpu::bench
