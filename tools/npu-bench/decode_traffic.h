// Bytes one decode step must stream from memory, from a compiled
// artifact: the roofline that bounds decode speed on a bandwidth-limited
// machine (tokens/s <= read bandwidth / bytes per token).
#ifndef TOOLS_NPU_BENCH_DECODE_TRAFFIC_H_
#define TOOLS_NPU_BENCH_DECODE_TRAFFIC_H_

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
  // K and V of one cache slot over all layers: attention reads this much per
  // visible slot.
  uint64_t kv_bytes_per_slot = 0;

  // Bytes streamed by one decode step that attends to `visible_slots`.
  uint64_t BytesPerToken(uint64_t visible_slots) const {
    return weight_bytes + kv_bytes_per_slot * visible_slots;
  }
};

// Reads the artifact's metadata (Artifact::Open: fully verified). Errors:
// the artifact reader's; InvalidArgument for a KV-cache element type this
// tool does not know.
absl::StatusOr<DecodeTraffic> ReadDecodeTraffic(const std::string& artifact_path);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_DECODE_TRAFFIC_H_
