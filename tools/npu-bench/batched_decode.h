// Batched decode (runtime::DecodeBatch): what a decode step of L sequences
// at once costs, in wall time and in the process's CPU time, against one
// sequence alone. For each lane count L, L fresh sequences each prefill a
// short prompt of random tokens, then step together (every lane active,
// greedy next tokens) for warm-up repetitions that are not counted and
// `reps` timed ones of `steps` steps. L = 1 is one sequence's own decode
// graph (what a DecodeBatch step with one active lane runs).
//
// The CPU time is CLOCK_PROCESS_CPUTIME_ID around the steps: on the
// software NPU it counts every compute thread (and their short spin before
// sleeping), so unlike the wall time it hardly changes when other
// processes load the machine. On a kernel device it counts only the host
// side.
//
// Thread-safety: RunBatchedDecode uses its sequences from the calling
// thread; do not run other work on the same device meanwhile.
#ifndef TOOLS_NPU_BENCH_BATCHED_DECODE_H_
#define TOOLS_NPU_BENCH_BATCHED_DECODE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/model.h"
#include "runtime/model_info.h"
#include "runtime/sequence.h"

namespace lnpu::bench {

struct BatchedDecodeOptions {
  // Lane counts, each 1 or one of ModelInfo::decode_batches.
  std::vector<uint32_t> lanes;
  uint32_t prompt_tokens = 4;  // prefilled per lane before the steps, >= 1
  uint32_t steps = 16;         // batched steps per timed repetition, >= 1
  int reps = 5;                // timed repetitions, >= 1
  int warmups = 1;             // untimed repetitions first, >= 0
  uint64_t seed = 1;           // of the random token ids
  // With an observer, every step of the timed repetitions is observed: the
  // lane's own decode graph for 1 lane, the batched graph otherwise
  // (runtime::DecodeBatch::SetStepObserver); the steps' visible cache
  // slots per lane are prompt_tokens + warmups * steps before the first.
  runtime::Sequence::StepObserver observer;
};

struct BatchedDecodeResult {
  uint32_t lanes = 0;
  uint32_t steps = 0;  // per repetition
  // Medians over the timed repetitions, per step of all lanes.
  double median_ms_per_step = 0;      // wall time
  double median_cpu_ms_per_step = 0;  // process CPU time

  double tokens_per_second() const { return lanes * 1e3 / median_ms_per_step; }
  double cpu_ms_per_token() const { return median_cpu_ms_per_step / lanes; }
  double tokens_per_cpu_second() const { return 1e3 / cpu_ms_per_token(); }
};

// OK when `options` can run on a model of `info`: every lane count is 1 or
// one of info.decode_batches, and a lane's prompt and steps fit the KV
// cache (checked only with lane counts). FailedPrecondition when a count
// above 1 is asked of a model without batched graphs, InvalidArgument
// naming the count and the compiled ones otherwise (both say how to compile
// more: npu-compile --decode-batch); InvalidArgument naming what to lower
// when the steps do not fit.
absl::Status CheckBatchedDecode(const runtime::ModelInfo& info,
                                const BatchedDecodeOptions& options);

// One result per entry of options.lanes, in that order. The errors of
// CheckBatchedDecode; runtime errors otherwise.
absl::StatusOr<std::vector<BatchedDecodeResult>> RunBatchedDecode(
    runtime::Model& model, const BatchedDecodeOptions& options);

// Tokens per CPU-second of `result` over those of the 1-lane entry of
// `results`; 0 when `results` has no 1-lane entry.
double CpuEfficiencyVsOneLane(const std::vector<BatchedDecodeResult>& results,
                              const BatchedDecodeResult& result);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_BATCHED_DECODE_H_
