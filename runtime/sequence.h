// One token sequence's state on the device (the runtime half of a
// framework::Session): its KV cache, scratch and IO buffers, and the
// command streams of every graph, recorded once with all addresses
// resolved. A step only writes the inputs into the mapped IO buffer and
// submits; nothing is allocated or encoded per token.
//
// Lifetime: shares ownership of the device, the program and the weights
// with its Model, so either may be destroyed first.
// Thread-safety: not thread-safe; use a sequence from one thread at a time.
// Different sequences (of one or several models) may run on different
// threads concurrently.
#ifndef RUNTIME_SEQUENCE_H_
#define RUNTIME_SEQUENCE_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kernel_iface/driver/device.h"
#include "runtime/cache_snapshot.h"
#include "runtime/kv_cache_state.h"
#include "runtime/program.h"
#include "runtime/recorded_graph.h"
#include "runtime/step_timeline.h"
#include "runtime/window_ring.h"

namespace lnpu::runtime {

// Runs of one compiled graph.
struct GraphStats {
  std::string name;
  uint32_t rows = 0;  // tokens per run
  uint64_t runs = 0;
};

// Cumulative profile of a session (not cleared by Reset()).
struct SequenceStats {
  uint64_t forward_calls = 0;
  uint64_t steps = 0;        // graph runs
  uint64_t tokens = 0;       // tokens run through the model
  uint64_t padded_rows = 0;  // padding rows of partially filled prefill runs
  uint64_t evicted_tokens = 0;  // tokens overwritten by the ring policy
  // Tokens run as a row of a batched decode graph (DecodeBatch); counted
  // in forward_calls and tokens too, not in steps or graphs. The batched
  // step's whole device time counts in each of its lanes' times.
  uint64_t batched_steps = 0;
  absl::Duration host_time;    // in Forward() outside submit and wait
  absl::Duration submit_time;  // in Device::Submit
  absl::Duration wait_time;    // in Device::Wait
  std::vector<GraphStats> graphs;  // one per graph, in artifact order
};

class Sequence {
 public:
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  // Runs `tokens` through the model at the next cache slots: a single
  // token with the decode graph, more in runs of the compiled prefill
  // graphs (see prefill_plan.h). Returns the logits (vocab_size floats) of
  // the last token, valid until the next call of Forward(), Reset() or
  // RestoreState().
  //
  // Under the ring policy each run first masks out the slots it is about
  // to overwrite (so the evicted tokens are never attended, not even by
  // the run that overwrites them), and the tokens of one run attend to the
  // kept slots plus each other.
  //
  // Errors: InvalidArgument for an empty span or a token id outside
  // [0, vocab_size), ResourceExhausted when the tokens do not fit in the
  // free cache slots (no ring policy); in both cases nothing was submitted
  // or changed. Device errors as returned by the driver (DeadlineExceeded
  // after 60 s per step); the tokens of prefill runs completed before the
  // error stay in the cache, slots evicted for the failed run stay masked.
  absl::StatusOr<absl::Span<const float>> Forward(absl::Span<const int32_t> tokens);

  // Runs `tokens` (1 to info().verify_rows) through the verify graph with
  // the fewest rows that hold them (padding rows run too and are dropped)
  // at the next cache slots, in one run, and returns the logits of every
  // token:
  // row i (vocab_size floats at i * vocab_size) predicts the token after
  // tokens[i]. Valid until the next run, Reset() or RestoreState(). All
  // tokens are committed; Truncate() drops the ones that should not have
  // been (speculative decoding). Errors as Forward(); FailedPrecondition
  // when the model has no verify graph, InvalidArgument for more tokens
  // than its rows.
  absl::StatusOr<absl::Span<const float>> ForwardAllRows(absl::Span<const int32_t> tokens);

  // Keeps the first `tokens` positions of the cache and drops the rest as
  // if they had never run (KvCacheState::Truncate: their mask bytes go back
  // to 0, their K/V rows are never attended and later overwritten). Same
  // errors, and FailedPrecondition when the sliding-window layers' ring no
  // longer holds the window before `tokens` (WindowRing::CheckContinuesAt:
  // at most window_ring_slots - window + 1 positions can be dropped);
  // nothing changes on error.
  absl::Status Truncate(uint32_t tokens);

  const KvCacheState& cache() const { return cache_; }

  // What happens when the cache is full (kv_cache_state.h). InvalidArgument
  // when the ring (capacity - policy.sinks()) is smaller than the largest
  // compiled prefill chunk, since one run must not overwrite its own slots,
  // or than the sliding window of a model with a window ring (whose local
  // layers would otherwise see tokens the ring policy evicted);
  // FailedPrecondition as KvCacheState::SetPolicy. Reset() keeps it.
  absl::Status SetCacheFullPolicy(const CacheFullPolicy& policy);

  // Empties the cache (mask cleared, positions from 0); buffers,
  // recordings and the policy stay.
  void Reset();

  // The first `max_tokens` positions of the cache (all of it by default)
  // copied to host memory. FailedPrecondition for a prefix shorter than the
  // cache once the ring has wrapped (the prefix's slots were overwritten),
  // or when the window ring no longer holds the prefix's last window. The
  // rows of the window ring's layers are saved for the last window - 1
  // positions only (the others are never attended again), at the slots a
  // cache without window ring would hold them in.
  absl::StatusOr<CacheSnapshot> SaveState(
      uint32_t max_tokens = std::numeric_limits<uint32_t>::max()) const;

  // Replaces this session's cache with `state`. FailedPrecondition, naming
  // both values, when the state was saved from another model or cache
  // geometry (ModelIdentity: metadata, weights fingerprint, capacity, KV
  // dtype, layers, row size) or under a ring the compiled chunks do not
  // fit; InvalidArgument for an inconsistent state. Nothing changes on
  // error.
  absl::Status RestoreState(const CacheSnapshot& state);

  // Makes this session's cache the first `tokens` positions of `source`'s
  // (e.g. a shared system prompt), copying the K/V rows device buffer to
  // device buffer without recomputing them. The policy stays this
  // session's. Same errors as SaveState() and RestoreState(); `source`
  // may not be this session.
  absl::Status CopyPrefixFrom(const Sequence& source, uint32_t tokens);

  const SequenceStats& stats() const { return stats_; }

  // Calls `observer` after every graph run that completed, on the thread
  // of Forward(), with the run's timeline (valid during the call); an
  // empty function removes it. While an observer is set and the device has
  // DRM_LNPU_CAP_PROFILING, every job is submitted with
  // DRM_LNPU_SUBMIT_PROFILE and the timeline carries the device's command
  // times; otherwise only the host's. Without an observer nothing is timed.
  // The batched steps a DecodeBatch runs for this sequence are observed by
  // the batch's own observer (DecodeBatch::SetStepObserver), not this one.
  // Errors: allocating the profile buffers (nothing changes then).
  using StepObserver = std::function<void(const StepTimeline&)>;
  absl::Status SetStepObserver(StepObserver observer);
  const ModelInfo& info() const { return program_->info(); }

  // Device memory of this session's own buffers (excluding the weights).
  uint64_t device_memory_bytes() const { return device_memory_bytes_; }

 private:
  friend class Model;
  friend class DecodeBatch;  // records against the buffers, runs steps of the cache

  // A graph's recorded streams and its IO operands in the mapped IO memory.
  struct RecordedGraph {
    std::vector<RecordedStream> streams;
    uint8_t* tokens = nullptr;     // I32[rows]
    uint8_t* positions = nullptr;  // I32[rows]
    uint8_t* slots = nullptr;      // I32[rows]
    uint8_t* window_slots = nullptr;  // I32[rows] with a window ring
    uint8_t* last_row = nullptr;   // I32[1]
    const float* logits = nullptr; // F32[vocab_size]
  };

  // Allocates, zeroes and records a session of `program`.
  static absl::StatusOr<std::unique_ptr<Sequence>> Create(
      std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
      std::shared_ptr<const Buffer> weights, bool chain_with_fences);

  Sequence(std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
          std::shared_ptr<const Buffer> weights, std::vector<Buffer> buffers, Buffer commands,
          std::vector<RecordedGraph> graphs, absl::Span<uint8_t> mask,
          absl::Span<uint8_t> slot_positions, bool chain_with_fences);

  // InvalidArgument for no tokens or an id outside the vocabulary,
  // CheckRoomFor's errors.
  absl::Status CheckTokens(absl::Span<const int32_t> tokens) const;
  // KvCacheState::CheckRoomFor, and with a window ring its
  // CheckContinuesAt(next position) (a failed step may have lost the
  // window).
  absl::Status CheckRoomFor(uint64_t n) const;
  // Writes the slots of a run of `count` of `rows` rows at `placement` into
  // the graph inputs `slots` and `window_slots` (may be null without a
  // window ring).
  void StoreSlots(const SlotPlacement& placement, uint32_t count, uint32_t rows, uint8_t* slots,
                  uint8_t* window_slots) const;
  // After the device ran (`ran`) or failed a run of `placement`'s tokens:
  // commits them to the cache and the window ring, or marks the ring's
  // overwritten slots lost.
  void FinishRun(const SlotPlacement& placement, absl::Span<const int32_t> tokens, bool ran);
  // Adds a completed forward call of `tokens` that started at `start`,
  // when the device time was `device_time_before`, to the stats.
  void CountForwardCall(uint32_t tokens, absl::Time start, absl::Duration device_time_before);

  // Runs graph `graph` on `tokens` (at most its rows) at the next
  // positions: evicts the slots it overwrites, submits, waits and commits.
  absl::Status RunGraph(size_t graph, absl::Span<const int32_t> tokens);

  // The mapped KV cache: [kv_blocks][capacity][kv_row_bytes].
  absl::Span<uint8_t> kv_memory() const;
  // Checks that `state` fits this session's model and compiled chunks.
  absl::Status CheckCompatible(const ModelIdentity& model, const CacheFullPolicy& policy) const;
  // Copies the rows of slots [0, slots) of each block without window ring
  // from src(block) into this session's cache.
  void WriteKvRows(absl::FunctionRef<const uint8_t*(size_t block)> src, uint32_t slots);
  // Calls copy(offset, ring_row) for each position p in [first, end) of
  // each window-ring block b: `offset` is the byte offset of p's row in a
  // snapshot's kv_rows of `rows_slots` slots per block (p at slot
  // SlotOf(p, capacity, policy) of block b), `ring_row` its row in the
  // ring. Precondition: those slots are < rows_slots.
  void ForEachWindowRow(uint32_t rows_slots, const CacheFullPolicy& policy, int32_t first,
                        int32_t end,
                        absl::FunctionRef<void(uint64_t offset, uint8_t* ring_row)> copy) const;
  // Block `block`'s rows in the mapped cache.
  uint8_t* kv_block(size_t block) const;

  const std::shared_ptr<Device> device_;
  const std::shared_ptr<const Program> program_;
  const std::shared_ptr<const Buffer> weights_;
  const std::vector<Buffer> buffers_;  // parallel to program_->buffers(); [0] unused
  const Buffer commands_;              // the recorded command image
  const std::vector<RecordedGraph> graphs_;
  const bool chain_with_fences_;
  const uint64_t device_memory_bytes_;
  KvCacheState cache_;  // its mask (and slot positions) are the mapped device ones
  std::optional<WindowRing> window_ring_;  // with a window ring: on mapped device memory
  SequenceStats stats_;
  std::vector<uint64_t> step_fences_;  // of the step in RunGraph
  StepRecorder recorder_;  // of the steps RunGraph runs
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_SEQUENCE_H_
