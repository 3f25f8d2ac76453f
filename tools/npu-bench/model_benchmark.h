// Timed phases of a loaded model: prefill of N tokens, time to first token,
// and decode at a given cache fill. Each phase runs warm-up repetitions
// that are not counted, then `reps` timed repetitions (std::chrono
// steady_clock) whose median is reported. Tokens are random valid ids
// (seeded, reproducible): speed does not depend on their values.
//
// Thread-safety: RunModelBenchmark uses one session of `model` from the
// calling thread; do not run other work on the same device meanwhile if the
// figures are to mean anything.
#ifndef TOOLS_NPU_BENCH_MODEL_BENCHMARK_H_
#define TOOLS_NPU_BENCH_MODEL_BENCHMARK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/model.h"
#include "runtime/sequence.h"

namespace lnpu::bench {

struct ModelBenchmarkOptions {
  // Prefill lengths in tokens, each 1..kv_capacity.
  std::vector<uint32_t> prompt_lengths = {16, 128, 512, 1024};
  // Prompt of the time-to-first-token measurement, 1..kv_capacity.
  uint32_t ttft_prompt_tokens = 32;
  // Cache fills of the decode measurements, percent of kv_capacity, 0..99.
  // Each must leave room for warmups + reps * decode_steps tokens.
  std::vector<uint32_t> fill_percents = {0, 50, 90};
  uint32_t decode_steps = 16;  // decode tokens per timed repetition, >= 1
  int reps = 5;                // timed repetitions, >= 1
  int warmups = 1;             // untimed repetitions first, >= 0
  uint64_t seed = 1;           // of the random token ids
  // Competing busy-loop processes during each decode measurement
  // (cpu_contention.h), 0..64.
  int contention_processes = 0;
  // With an observer, every graph run of the timed repetitions is observed
  // (runtime::Sequence::SetStepObserver); warm-ups are not.
  runtime::Sequence::StepObserver observer;
  // With a probe, the machine's read bandwidth (bytes/s) is measured right
  // before each decode fill's repetitions (after the cache is filled, before
  // the warm-ups) and right after its last one, outside the competing load:
  // on a machine whose bandwidth drifts (a shared VM host) a limit taken
  // minutes later says little about the seconds decode ran in. An error
  // from the probe ends the benchmark.
  std::function<absl::StatusOr<double>()> bandwidth_probe;
};

// Where one phase's time went, per token: the session's SessionStats summed
// over the timed repetitions and divided by their tokens (a mean, so one
// disturbed repetition shows here but not in the medians), microseconds.
struct StepBreakdown {
  double host_us = 0;    // runtime bookkeeping in Forward()
  double submit_us = 0;  // Device::Submit (ioctl, validation)
  double wait_us = 0;    // Device::Wait: execution on the device
};

struct PrefillResult {
  uint32_t tokens = 0;
  uint32_t graph_runs = 0;  // compiled prefill graphs run per prefill
  double median_seconds = 0;
  double tokens_per_second = 0;
  StepBreakdown per_token;
};

struct TimeToFirstTokenResult {
  uint32_t prompt_tokens = 0;
  double median_ms = 0;  // Reset + prefill of the prompt + argmax of the logits
};

struct DecodeResult {
  uint32_t fill_percent = 0;
  uint32_t start_slots = 0;    // filled slots before the first timed step
  double mean_visible_slots = 0;  // slots attended to, averaged over timed steps
  uint32_t steps = 0;          // tokens per repetition
  double median_ms_per_token = 0;
  double tokens_per_second = 0;
  StepBreakdown per_token;
  // CPU cores the competing processes used during the measurement (0
  // without --contention).
  double competitor_cores = 0;
  // The bandwidth_probe's figures around the repetitions, bytes/s; 0
  // without a probe.
  double probe_before_bytes_per_second = 0;
  double probe_after_bytes_per_second = 0;
};

struct ModelBenchmarkResult {
  std::vector<PrefillResult> prefill;
  TimeToFirstTokenResult time_to_first_token;
  std::vector<DecodeResult> decode;
};

// The median of `values` (the mean of the middle two for an even count);
// `values` must not be empty.
double Median(std::vector<double> values);

// InvalidArgument naming the option when a length or fill does not fit the
// model's cache (and what to change); runtime errors otherwise.
absl::StatusOr<ModelBenchmarkResult> RunModelBenchmark(runtime::Model& model,
                                                       const ModelBenchmarkOptions& options);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_MODEL_BENCHMARK_H_
