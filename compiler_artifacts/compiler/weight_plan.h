// The data section of a llama artifact: which GGUF tensors it holds, in
// which element type, at which offset; and the streaming conversion that
// writes them.
#ifndef COMPILER_ARTIFACTS_COMPILER_WEIGHT_PLAN_H_
#define COMPILER_ARTIFACTS_COMPILER_WEIGHT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/compiler/llama_source.h"
#include "compiler_artifacts/format/artifact_writer.h"
#include "compiler_artifacts/format/model_generated.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "flatbuffers/flatbuffers.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::compiler {

// Offsets of weights in the data section are multiples of this.
inline constexpr uint64_t kWeightAlignment = 64;

// Name of a per-layer llama tensor: "blk.<layer>.<role>.weight".
std::string LayerTensorName(uint32_t layer, absl::string_view role);

struct PlannedWeight {
  const gguf::TensorInfo* source = nullptr;  // owned by the GgufFile
  uint32_t dtype = LNPU_DTYPE_F32;           // LNPU_DTYPE_* in the artifact
  std::vector<uint64_t> shape;               // outermost first
  uint64_t offset = 0;                       // in the data section
  uint64_t size = 0;                         // bytes

  // Location in the artifact's buffers (the data section is buffers[0]).
  fb::Operand operand() const { return fb::Operand(0, offset); }
};

// Immutable after Create; valid while the GgufFile lives.
class WeightPlan {
 public:
  // Plans every tensor of a llama model: token_embd, per layer attn_norm,
  // attn_q/k/v/output, ffn_norm, ffn_gate/up/down, output_norm, and
  // output.weight when present (else the embedding is tied). Checks each
  // tensor's presence, GGUF type (F32 or F16) and shape against `hparams`,
  // and rejects tensors the lowering would ignore. Matmul weights and the
  // embedding get the type chosen by `weights`; norm weights are F32.
  static absl::StatusOr<WeightPlan> Create(const gguf::GgufFile& file,
                                           const LlamaHParams& hparams,
                                           CompileOptions::WeightType weights);

  // The planned weight named `name` (a GGUF tensor name); it must exist.
  const PlannedWeight& Get(absl::string_view name) const;
  // The matrix producing logits: output.weight, or token_embd.weight when
  // the model ties them.
  const PlannedWeight& output() const { return Get(output_name_); }
  bool tied_embeddings() const { return output_name_ == "token_embd.weight"; }

  const std::vector<PlannedWeight>& weights() const { return weights_; }
  uint64_t data_size() const { return data_size_; }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Weight>>>
  Serialize(flatbuffers::FlatBufferBuilder& builder) const;

  // Converts and writes the weights one tensor at a time (bounded memory:
  // a fixed-size conversion buffer, never a whole model).
  absl::Status Write(const gguf::GgufFile& file,
                     artifact::ArtifactWriter& writer) const;

 private:
  WeightPlan() = default;

  std::vector<PlannedWeight> weights_;  // in data-section order
  absl::flat_hash_map<std::string, size_t> index_;
  std::string output_name_;
  uint64_t data_size_ = 0;
};

}  // namespace lnpu::compiler

#endif  // COMPILER_ARTIFACTS_COMPILER_WEIGHT_PLAN_H_
