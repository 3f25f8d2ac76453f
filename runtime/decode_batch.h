// Decode steps of several sequences of one model run as one device step.
//
// On a bandwidth-bound device a decode step costs one pass over the
// weights whatever the rows; a batched decode graph of B lanes
// (npu-compile --decode-batch, ModelInfo::decode_batches) runs the next
// token of B sequences in that one pass. A DecodeBatch ties B existing
// sequences (its lanes) to the batched graphs: it records them once
// against the lanes' KV caches and masks (each row attends to and writes
// only its own lane's cache) and runs a step of any subset of the lanes.
// Each lane stays a whole Sequence: prefill, save, restore, Reset, policy
// and solo Forward() work on it as before, between batched steps.
//
// A step with one active lane runs that lane's own decode graph. A step
// with more runs the smallest recorded graph that covers the highest
// active lane; the lanes below it that have no token are padding rows
// (slot -1: their cache, mask and position stay as they were). Keep the
// active lanes low (e.g. give out the lowest free lane first) to run
// smaller graphs.
//
// The rows do not interact: a lane's logits do not depend on the other
// lanes' tokens. On the software NPU they equal the lane's solo decode
// step bit for bit for batches of up to 4 lanes, and up to as many as the
// quantized path runs as GEMV passes (8 on amx, avxvnni and avx2, 16 on
// avx512vnni: MATMUL runs each row's GEMV, GemvPassesMaxRows in
// kernel_iface/softnpu/compute/quant_matmul.h); larger batches take the
// multi-row GEMM path, whose rounding differs in the last bits, except on
// panel weights (LNPU_DTYPE_*_P16 / *_P16S, what Model::Load makes of copied
// Q8_0 / Q4_0 weights where the device prefers them), whose GEMV and GEMM
// agree bit for bit.
//
// Lifetime: the lanes must outlive the batch. Thread-safety: not
// thread-safe; use the batch and its lanes from one thread at a time.
#ifndef RUNTIME_DECODE_BATCH_H_
#define RUNTIME_DECODE_BATCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kernel_iface/driver/device.h"
#include "runtime/program.h"
#include "runtime/recorded_graph.h"
#include "runtime/sequence.h"

namespace lnpu::runtime {

// Cumulative profile of a batch's steps (the lanes' own stats count their
// tokens and DecodeBatch steps too).
struct DecodeBatchStats {
  uint64_t steps = 0;        // Step() calls that ran
  uint64_t batched_steps = 0;  // of them, runs of a batched graph
  uint64_t tokens = 0;       // lane tokens run
  uint64_t batched_tokens = 0;  // of them, rows of batched graphs
  uint64_t padded_rows = 0;  // idle lanes' rows of batched graphs
  absl::Duration submit_time;
  absl::Duration wait_time;
};

class DecodeBatch {
 public:
  // Marks a lane without a token in Step().
  static constexpr int32_t kIdle = -1;

  // A batch of `lanes` (distinct sequences of the model whose `program` is
  // given), recording its batched graphs. InvalidArgument when the lane
  // count is not one of the compiled ModelInfo::decode_batches (naming
  // them; FailedPrecondition when there are none: recompile with
  // --decode-batch), a lane is null, repeated or of another model; device
  // errors of the command buffer. Called by Model::CreateDecodeBatch.
  static absl::StatusOr<std::unique_ptr<DecodeBatch>> Create(
      std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
      std::shared_ptr<const Buffer> weights, bool chain_with_fences,
      absl::Span<Sequence* const> lanes);

  DecodeBatch(const DecodeBatch&) = delete;
  DecodeBatch& operator=(const DecodeBatch&) = delete;

  size_t lanes() const { return lanes_.size(); }
  Sequence& lane(size_t i) const { return *lanes_[i]; }

  // Runs token tokens[i] through lane i at its next cache slot, for every
  // lane whose entry is not kIdle (tokens.size() == lanes()), as one device
  // step. Each lane's cache then holds the token as after lane(i).Forward()
  // of it; logits(i) has its logits.
  //
  // Errors, with nothing run or changed: InvalidArgument for a token count
  // other than lanes(), no active lane, or a token id outside the
  // vocabulary (naming the lane); ResourceExhausted when an active lane's
  // cache is full (no ring policy; naming the lane). Device errors as
  // Sequence::Forward(), naming the graph and job; the active lanes'
  // evicted ring slots stay masked and their new tokens are not committed.
  absl::Status Step(absl::Span<const int32_t> tokens);

  // Logits (vocab_size floats) of lane i's token of the last Step() that
  // gave it one; valid until the next Step(), or until that lane runs
  // Forward(), Reset() or RestoreState(). Empty before its first step.
  absl::Span<const float> logits(size_t lane) const { return logits_[lane]; }

  // Calls `observer` after every batched graph run that completed (steps
  // with two or more active lanes), on the thread of Step(), with the
  // run's timeline: `tokens` counts the active lanes, `graph` is the
  // batched graph that ran. A step with one active lane runs that lane's
  // own decode graph and is observed by the lane's observer
  // (Sequence::SetStepObserver). Device timing as there; an empty
  // function removes it. Errors: allocating the profile buffers.
  using StepObserver = StepRecorder::Observer;
  absl::Status SetStepObserver(StepObserver observer);

  const DecodeBatchStats& stats() const { return stats_; }
  // Device memory of the batch's own command buffer.
  uint64_t device_memory_bytes() const { return commands_.size(); }

 private:
  struct RecordedBatchGraph {
    const GraphSpec* spec = nullptr;
    std::vector<RecordedStream> streams;
    uint8_t* tokens = nullptr;     // I32[rows]
    uint8_t* positions = nullptr;  // I32[rows]
    uint8_t* slots = nullptr;      // I32[rows]
    uint8_t* window_slots = nullptr;  // I32[rows] with a window ring
    const float* logits = nullptr; // F32[rows][vocab_size]
  };

  DecodeBatch(std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
              std::shared_ptr<const Buffer> weights, bool chain_with_fences,
              std::vector<Sequence*> lanes, Buffer commands,
              std::vector<RecordedBatchGraph> graphs);

  // Runs the batched graph covering the `active` lanes of `tokens`, the
  // highest of them `highest_active`.
  absl::Status RunBatched(absl::Span<const int32_t> tokens, size_t active, size_t highest_active);

  const std::shared_ptr<Device> device_;
  const std::shared_ptr<const Program> program_;
  const std::shared_ptr<const Buffer> weights_;
  const bool chain_with_fences_;
  const std::vector<Sequence*> lanes_;
  const Buffer commands_;
  const std::vector<RecordedBatchGraph> graphs_;  // by ascending rows
  std::vector<absl::Span<const float>> logits_;   // per lane
  std::vector<SlotPlacement> placements_;          // per lane, of the step in RunBatched
  std::vector<uint64_t> step_fences_;
  StepRecorder recorder_;  // of the batched steps
  DecodeBatchStats stats_;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_DECODE_BATCH_H_
