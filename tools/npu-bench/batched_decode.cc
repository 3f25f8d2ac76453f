#include "tools/npu-bench/batched_decode.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "base/argmax.h"
#include "base/status_macros.h"
#include "runtime/decode_batch.h"
#include "runtime/sequence.h"
#include "tools/npu-bench/model_benchmark.h"

namespace lnpu::bench {
namespace {

using Clock = std::chrono::steady_clock;

// CPU time of all of the process's threads, milliseconds.
double ProcessCpuMs() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

// L sequences of one model and, for L > 1, the batch of their decode
// steps; Step() runs one step of every lane (greedy next tokens).
class Lanes {
 public:
  static absl::StatusOr<Lanes> Create(runtime::Model& model, uint32_t count) {
    Lanes lanes;
    std::vector<runtime::Sequence*> pointers;
    for (uint32_t i = 0; i < count; ++i) {
      LNPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Sequence> sequence, model.CreateSequence());
      pointers.push_back(sequence.get());
      lanes.sequences_.push_back(std::move(sequence));
    }
    if (count > 1) {
      LNPU_ASSIGN_OR_RETURN(lanes.batch_, model.CreateDecodeBatch(pointers));
    }
    lanes.next_.resize(count);
    return lanes;
  }

  // Prefills prompts[i] on lane i; its greedy token is the lane's next.
  absl::Status Prefill(const std::vector<std::vector<int32_t>>& prompts) {
    for (size_t i = 0; i < sequences_.size(); ++i) {
      LNPU_ASSIGN_OR_RETURN(const absl::Span<const float> logits,
                            sequences_[i]->Forward(prompts[i]));
      next_[i] = Argmax(logits);
    }
    return absl::OkStatus();
  }

  // Observes the steps Step() runs (an empty observer: none).
  absl::Status SetStepObserver(const runtime::Sequence::StepObserver& observer) {
    return batch_ == nullptr ? sequences_[0]->SetStepObserver(observer)
                             : batch_->SetStepObserver(observer);
  }

  absl::Status Step() {
    if (batch_ == nullptr) {
      LNPU_ASSIGN_OR_RETURN(const absl::Span<const float> logits,
                            sequences_[0]->Forward(absl::MakeConstSpan(&next_[0], 1)));
      next_[0] = Argmax(logits);
      return absl::OkStatus();
    }
    LNPU_RETURN_IF_ERROR(batch_->Step(next_));
    for (size_t i = 0; i < next_.size(); ++i) next_[i] = Argmax(batch_->logits(i));
    return absl::OkStatus();
  }

 private:
  // Declared before batch_, which must be destroyed first.
  std::vector<std::unique_ptr<runtime::Sequence>> sequences_;
  std::unique_ptr<runtime::DecodeBatch> batch_;
  std::vector<int32_t> next_;
};

absl::Status CheckFit(const BatchedDecodeOptions& options, uint32_t capacity) {
  if (options.reps < 1 || options.warmups < 0 || options.steps < 1 || options.prompt_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "batched decode: reps %d, warm-ups %d, steps %d, prompt %d tokens: give reps >= 1, "
        "warm-ups >= 0, steps >= 1, a prompt of >= 1 token",
        options.reps, options.warmups, options.steps, options.prompt_tokens));
  }
  const uint64_t needed =
      options.prompt_tokens + uint64_t(options.warmups + options.reps) * options.steps;
  if (needed > capacity) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--batch-lanes: each lane needs %d KV slots (a %d-token prompt + (warm-ups + reps) x "
        "decode steps = (%d + %d) x %d), but the model's cache has %d; lower --reps or "
        "--decode-steps, or compile with a larger --min-response-len",
        needed, options.prompt_tokens, options.warmups, options.reps, options.steps, capacity));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBatchedDecode(const runtime::ModelInfo& info,
                                const BatchedDecodeOptions& options) {
  if (options.lanes.empty()) return absl::OkStatus();
  const std::vector<uint32_t>& compiled = info.decode_batches;
  for (uint32_t count : options.lanes) {
    if (count == 1 || std::find(compiled.begin(), compiled.end(), count) != compiled.end()) {
      continue;
    }
    if (compiled.empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "--batch-lanes %d: the model has no batched decode graphs (only 1 lane runs); "
          "recompile it with npu-compile --decode-batch, e.g. --decode-batch 1,2,4,8",
          count));
    }
    std::vector<uint32_t> with_count = compiled;
    with_count.insert(std::upper_bound(with_count.begin(), with_count.end(), count), count);
    return absl::InvalidArgumentError(absl::StrFormat(
        "--batch-lanes %d: the model has batched decode graphs of %s lanes only (and 1 lane "
        "runs alone); give those, or recompile with npu-compile --decode-batch 1,%s",
        count, absl::StrJoin(compiled, ", "), absl::StrJoin(with_count, ",")));
  }
  return CheckFit(options, info.kv_capacity);
}

absl::StatusOr<std::vector<BatchedDecodeResult>> RunBatchedDecode(
    runtime::Model& model, const BatchedDecodeOptions& options) {
  LNPU_RETURN_IF_ERROR(CheckBatchedDecode(model.info(), options));
  std::mt19937_64 random(options.seed);
  std::uniform_int_distribution<int32_t> token(0,
                                               static_cast<int32_t>(model.info().vocab_size) - 1);
  std::vector<BatchedDecodeResult> results;
  for (uint32_t count : options.lanes) {
    LNPU_ASSIGN_OR_RETURN(Lanes lanes, Lanes::Create(model, count));
    std::vector<std::vector<int32_t>> prompts(count, std::vector<int32_t>(options.prompt_tokens));
    for (std::vector<int32_t>& prompt : prompts) {
      for (int32_t& t : prompt) t = token(random);
    }
    LNPU_RETURN_IF_ERROR(lanes.Prefill(prompts));
    std::vector<double> wall_ms, cpu_ms;
    for (int run = 0; run < options.warmups + options.reps; ++run) {
      if (run == options.warmups && options.observer) {
        LNPU_RETURN_IF_ERROR(lanes.SetStepObserver(options.observer));
      }
      const Clock::time_point start = Clock::now();
      const double cpu_start = ProcessCpuMs();
      for (uint32_t step = 0; step < options.steps; ++step) {
        LNPU_RETURN_IF_ERROR(lanes.Step());
      }
      if (run < options.warmups) continue;
      cpu_ms.push_back((ProcessCpuMs() - cpu_start) / options.steps);
      wall_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count() /
                        options.steps);
    }
    BatchedDecodeResult result;
    result.lanes = count;
    result.steps = options.steps;
    result.median_ms_per_step = Median(wall_ms);
    result.median_cpu_ms_per_step = Median(cpu_ms);
    results.push_back(result);
  }
  return results;
}

double CpuEfficiencyVsOneLane(const std::vector<BatchedDecodeResult>& results,
                              const BatchedDecodeResult& result) {
  for (const BatchedDecodeResult& one : results) {
    if (one.lanes == 1) return result.tokens_per_cpu_second() / one.tokens_per_cpu_second();
  }
  return 0;
}

}  // namespace lnpu::bench
