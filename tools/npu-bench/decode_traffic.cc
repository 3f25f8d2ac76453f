#include "tools/npu-bench/decode_traffic.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_verifier.h"

namespace lnpu::bench {

absl::StatusOr<DecodeTraffic> ReadDecodeTraffic(const std::string& artifact_path) {
  LNPU_ASSIGN_OR_RETURN(const std::unique_ptr<artifact::Artifact> opened,
                        artifact::Artifact::Open(artifact_path));
  const artifact::fb::Model& model = opened->model();

  DecodeTraffic traffic;
  uint64_t embedding_bytes = 0;
  bool has_output_matrix = false;
  for (const artifact::fb::Weight* weight : *model.weights()) {
    const std::string name = weight->name()->str();
    if (name == "token_embd.weight") embedding_bytes = weight->size();
    if (name == "output.weight") has_output_matrix = true;
    traffic.weight_bytes += weight->size();
  }
  if (has_output_matrix) {
    traffic.weight_bytes -= embedding_bytes;
    traffic.gathered_embedding_bytes = embedding_bytes;
  }

  const artifact::fb::HParams& h = *model.hparams();
  const uint64_t row_bytes =
      artifact::KvRowBytes(model.kv_cache()->dtype(), h.n_kv_heads(), h.head_dim());
  if (row_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(artifact_path, ": KV cache element type ", model.kv_cache()->dtype(),
                     " is unknown to npu-bench; rebuild it with this artifact's compiler"));
  }
  const artifact::fb::KvCache& cache = *model.kv_cache();
  const auto* layer_slots = cache.layer_slots();
  for (uint32_t layer = 0; layer < h.n_layers(); ++layer) {
    const bool ring = cache.window_ring_slots() > 0 && layer_slots != nullptr &&
                      layer < layer_slots->size() &&
                      layer_slots->Get(layer) == cache.window_ring_slots();
    (ring ? traffic.ring_kv_bytes_per_slot : traffic.kv_bytes_per_slot) += 2 * row_bytes;
  }
  if (traffic.ring_kv_bytes_per_slot > 0) traffic.ring_slots = cache.window_ring_slots();
  return traffic;
}

}  // namespace lnpu::bench
