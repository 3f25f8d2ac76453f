// The data section of a llama-family artifact: which tensors it holds, in
// which element type, at which offset; and the streaming conversion that
// writes them.
#ifndef COMPILER_ARTIFACTS_COMPILER_WEIGHT_PLAN_H_
#define COMPILER_ARTIFACTS_COMPILER_WEIGHT_PLAN_H_

#include <cstdint>
#include <functional>
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

// Name of a per-layer tensor: "blk.<layer>.<role>.<kind>", kind "weight"
// or "bias".
std::string LayerTensorName(uint32_t layer, absl::string_view role,
                            absl::string_view kind = "weight");

// Name of the RoPE frequency factors (a GGUF tensor, or computed from the
// Llama 3 scaling keys).
inline constexpr char kRopeFreqsName[] = "rope_freqs.weight";
// phi3's LongRoPE frequency divisors: "short" for contexts up to the
// trained original_context_length, "long" beyond it.
inline constexpr char kRopeFactorsShortName[] = "rope_factors_short.weight";
inline constexpr char kRopeFactorsLongName[] = "rope_factors_long.weight";

struct PlannedWeight {
  std::string name;                          // GGUF tensor name
  const gguf::TensorInfo* source = nullptr;  // owned by the GgufFile; null
                                             // for `generated` values
  std::vector<float> generated;              // F32 contents without source
  uint32_t dtype = LNPU_DTYPE_F32;           // LNPU_DTYPE_* in the artifact
  std::vector<uint64_t> shape;               // outermost first
  uint64_t offset = 0;                       // in the data section
  uint64_t size = 0;                         // bytes

  uint64_t row_len() const { return shape.back(); }
  uint64_t rows() const;
  // Location in the artifact's buffers (the data section is buffers[0]).
  fb::Operand operand() const { return fb::Operand(0, offset); }
  // Rows [first, first + count) of a matrix as a matrix of their own (rows
  // are contiguous in every dtype): the Q, K and V parts of a fused
  // attn_qkv, the gate and up halves of a fused ffn_up.
  fb::Operand rows_operand(uint64_t first) const {
    return fb::Operand(0, offset + first * (size / rows()));
  }
};

// Immutable after Create; valid while the GgufFile lives.
class WeightPlan {
 public:
  // Plans every tensor of the model: token_embd, per layer attn_norm,
  // attn_q/k/v (+ their biases: required for qwen2, optional for llama),
  // attn_output (Gemma: post_attention_norm, post_ffw_norm), ffn_norm,
  // ffn_gate/up/down, output_norm, output.weight
  // when present (else the embedding is tied) and rope_freqs.weight (the
  // GGUF tensor, else hparams.rope_freq_factors when set). Checks each
  // tensor's presence, GGUF type (gguf::CanDequantize) and shape against
  // `hparams`, and rejects tensors the lowering would ignore.
  //
  // Matmul weights and the embedding get the type chosen by `weights` per
  // tensor (see CompileOptions::WeightType); a quantized target whose rows
  // are not a multiple of 32 elements falls back to F16 (listed by
  // f16_fallbacks()).
  // Norm weights, biases and frequency factors are F32.
  //
  // `source_layers` is the file's layer count when hparams.n_layers keeps
  // only its first layers (CompileOptions::keep_layers): the tensors of
  // layers [hparams.n_layers, source_layers) are left out. 0 = all layers.
  static absl::StatusOr<WeightPlan> Create(const gguf::GgufFile& file, const LlamaHParams& hparams,
                                           CompileOptions::WeightType weights,
                                           uint32_t source_layers = 0);

  // The planned weight named `name` (a GGUF tensor name); it must exist.
  const PlannedWeight& Get(absl::string_view name) const;
  // The planned weight named `name`, or nullptr for an optional tensor the
  // model does not have.
  const PlannedWeight* Find(absl::string_view name) const;
  // The matrix producing logits: output.weight, or token_embd.weight when
  // the model ties them.
  const PlannedWeight& output() const { return Get(output_name_); }
  bool tied_embeddings() const { return output_name_ == "token_embd.weight"; }

  const std::vector<PlannedWeight>& weights() const { return weights_; }
  uint64_t data_size() const { return data_size_; }
  // Matmul weights that a quantized target stores as F16 instead (rows not
  // a multiple of 32 elements).
  const std::vector<std::string>& f16_fallbacks() const {
    return f16_fallbacks_;
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Weight>>>
  Serialize(flatbuffers::FlatBufferBuilder& builder) const;

  // Converts and writes the weights one tensor at a time, a bounded number
  // of rows at once (memory: a few MiB of conversion buffers, never a whole
  // tensor), releasing each source tensor's mapped pages once written.
  // A source tensor already in its target type is copied bit-exactly;
  // others are dequantized to f32 and converted. `progress`, when set, is
  // called after each chunk with (bytes written, data_size()).
  // InvalidArgument naming the tensor for non-finite values a quantized
  // type cannot hold; the writer's errors otherwise.
  absl::Status Write(
      const gguf::GgufFile& file, artifact::ArtifactWriter& writer,
      const std::function<void(uint64_t, uint64_t)>& progress) const;

 private:
  WeightPlan() = default;

  std::vector<PlannedWeight> weights_;  // in data-section order
  absl::flat_hash_map<std::string, size_t> index_;
  std::string output_name_;
  std::vector<std::string> f16_fallbacks_;
  uint64_t data_size_ = 0;
};

}  // namespace lnpu::compiler

#endif  // COMPILER_ARTIFACTS_COMPILER_WEIGHT_PLAN_H_
