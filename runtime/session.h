// One conversation's state on the device: its KV cache, scratch and IO
// buffers, and the command streams of every graph, recorded once with all
// addresses resolved. A step only writes the inputs into the mapped IO
// buffer and submits; nothing is allocated or encoded per token.
//
// Thread-safety: not thread-safe; use a session from one thread at a time.
// Different sessions (of one or several models) may run on different
// threads concurrently.
#ifndef RUNTIME_SESSION_H_
#define RUNTIME_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kernel_iface/driver/device.h"
#include "runtime/kv_cache_state.h"
#include "runtime/program.h"

namespace lnpu::runtime {

// Runs of one compiled graph.
struct GraphStats {
  std::string name;
  uint32_t rows = 0;  // tokens per run
  uint64_t runs = 0;
};

// Cumulative profile of a session (not cleared by Reset()).
struct SessionStats {
  uint64_t forward_calls = 0;
  uint64_t steps = 0;        // graph runs
  uint64_t tokens = 0;       // tokens run through the model
  uint64_t padded_rows = 0;  // padding rows of partially filled prefill runs
  absl::Duration host_time;    // in Forward() outside submit and wait
  absl::Duration submit_time;  // in Device::Submit
  absl::Duration wait_time;    // in Device::Wait
  std::vector<GraphStats> graphs;  // one per graph, in artifact order
};

class Session {
 public:
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs `tokens` through the model at the next free cache slots: a single
  // token with the decode graph, more in runs of the compiled prefill
  // graphs (see prefill_plan.h). Returns the logits (vocab_size floats) of
  // the last token, valid until the next call of Forward() or Reset().
  //
  // Errors: InvalidArgument for an empty span or a token id outside
  // [0, vocab_size), ResourceExhausted when the tokens do not fit in the
  // free cache slots; in both cases nothing was submitted or changed.
  // Device errors as returned by the driver (DeadlineExceeded after 60 s
  // per step); the tokens of prefill runs completed before the error stay
  // in the cache.
  absl::StatusOr<absl::Span<const float>> Forward(absl::Span<const int32_t> tokens);

  const KvCacheState& cache() const { return cache_; }

  // Empties the cache (mask cleared); buffers and recordings stay.
  void Reset() { cache_.Clear(); }

  const SessionStats& stats() const { return stats_; }

  // Device memory of this session's own buffers (excluding the weights).
  uint64_t device_memory_bytes() const { return device_memory_bytes_; }

 private:
  friend class Model;

  // A recorded stream, ready to submit.
  struct RecordedStream {
    uint32_t engine = 0;
    uint32_t offset = 0;
    uint32_t size = 0;
    std::vector<uint32_t> bo_handles;
  };
  // A graph's recorded streams and its IO operands in the mapped IO memory.
  struct RecordedGraph {
    std::vector<RecordedStream> streams;
    uint8_t* tokens = nullptr;     // I32[rows]
    uint8_t* positions = nullptr;  // I32[rows]
    uint8_t* slots = nullptr;      // I32[rows]
    uint8_t* last_row = nullptr;   // I32[1]
    const float* logits = nullptr; // F32[vocab_size]
  };

  // Allocates, zeroes and records a session of `program`.
  static absl::StatusOr<std::unique_ptr<Session>> Create(
      Device& device, std::shared_ptr<const Program> program,
      std::shared_ptr<const Buffer> weights, bool chain_with_fences);

  Session(Device& device, std::shared_ptr<const Program> program,
          std::shared_ptr<const Buffer> weights, std::vector<Buffer> buffers, Buffer commands,
          std::vector<RecordedGraph> graphs, absl::Span<uint8_t> mask, bool chain_with_fences);

  // Runs graph `graph` on `tokens` (at most its rows) placed at `placement`
  // and commits the slots once the graph completed.
  absl::Status RunGraph(size_t graph, absl::Span<const int32_t> tokens,
                        const SlotPlacement& placement);

  Device& device_;
  const std::shared_ptr<const Program> program_;
  const std::shared_ptr<const Buffer> weights_;
  const std::vector<Buffer> buffers_;  // parallel to program_->buffers(); [0] unused
  const Buffer commands_;              // the recorded command image
  const std::vector<RecordedGraph> graphs_;
  const bool chain_with_fences_;
  const uint64_t device_memory_bytes_;
  KvCacheState cache_;  // its mask is the mapped device mask
  SessionStats stats_;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_SESSION_H_
