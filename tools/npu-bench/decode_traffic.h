// Bytes one decode step must stream from memory, from a compiled
// artifact: the roofline that bounds decode speed on a bandwidth-limited
// machine (tokens/s <= read bandwidth / bytes per token).
#ifndef TOOLS_NPU_BENCH_DECODE_TRAFFIC_H_
#define TOOLS_NPU_BENCH_DECODE_TRAFFIC_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace lnpu::bench {

struct DecodeTraffic {
  // Every weight of the data section, except the token embedding table when
  // a separate output.weight exists (then the embedding is only gathered:
  // one row per token). With tied embeddings the table is the output matrix
  // and is streamed in full.
  uint64_t weight_bytes = 0;
  // The gathered-only embedding table left out of weight_bytes (0 if tied).
  uint64_t gathered_embedding_bytes = 0;
  // K and V of one cache slot over the layers that keep the full capacity
  // (all layers unless the model has window rings): attention reads this
  // much per visible slot.
  uint64_t kv_bytes_per_slot = 0;
  // K and V of one slot over the sliding-window layers compiled with a ring
  // of `ring_slots` slots (KvCache.window_ring_slots): they read at most
  // that many slots, however many are visible. 0 without rings.
  uint64_t ring_kv_bytes_per_slot = 0;
  uint64_t ring_slots = 0;

  // KV bytes read by one decode step that attends to `visible_slots` (a
  // mean over steps is fine while it stays on one side of ring_slots).
  double KvBytes(double visible_slots) const {
    return static_cast<double>(kv_bytes_per_slot) * visible_slots +
           static_cast<double>(ring_kv_bytes_per_slot) *
               std::min(visible_slots, static_cast<double>(ring_slots));
  }
  // Bytes streamed by one decode step that attends to `visible_slots`.
  double BytesPerToken(double visible_slots) const {
    return static_cast<double>(weight_bytes) + KvBytes(visible_slots);
  }
};

// Reads the artifact's metadata (Artifact::Open: fully verified). Errors:
// the artifact reader's; InvalidArgument for a KV-cache element type this
// tool does not know.
absl::StatusOr<DecodeTraffic> ReadDecodeTraffic(const std::string& artifact_path);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_DECODE_TRAFFIC_H_
