#include "compiler_artifacts/compiler/weight_plan.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "compiler_artifacts/gguf/half.h"

namespace lnpu::compiler {
namespace {

static_assert(std::endian::native == std::endian::little,
              "GGUF and artifact data are little-endian; this host is not");

enum class Role { kMatrix, kNorm };

struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> shape;  // outermost first
  Role role;
};

std::vector<ExpectedTensor> LlamaTensors(const LlamaHParams& h,
                                         bool has_output) {
  std::vector<ExpectedTensor> t;
  t.push_back({"token_embd.weight", {h.vocab_size, h.dim}, Role::kMatrix});
  for (uint32_t l = 0; l < h.n_layers; ++l) {
    t.push_back({LayerTensorName(l, "attn_norm"), {h.dim}, Role::kNorm});
    t.push_back({LayerTensorName(l, "attn_q"), {h.q_dim(), h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "attn_k"), {h.kv_dim(), h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "attn_v"), {h.kv_dim(), h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "attn_output"), {h.dim, h.q_dim()}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "ffn_norm"), {h.dim}, Role::kNorm});
    t.push_back({LayerTensorName(l, "ffn_gate"), {h.ffn_dim, h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "ffn_up"), {h.ffn_dim, h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "ffn_down"), {h.dim, h.ffn_dim}, Role::kMatrix});
  }
  t.push_back({"output_norm.weight", {h.dim}, Role::kNorm});
  if (has_output) {
    t.push_back({"output.weight", {h.vocab_size, h.dim}, Role::kMatrix});
  }
  return t;
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

uint32_t ArtifactDtype(gguf::GgmlType source, Role role,
                       CompileOptions::WeightType weights) {
  if (role == Role::kNorm) return LNPU_DTYPE_F32;
  switch (weights) {
    case CompileOptions::WeightType::kF32:
      return LNPU_DTYPE_F32;
    case CompileOptions::WeightType::kF16:
      return LNPU_DTYPE_F16;
    case CompileOptions::WeightType::kKeep:
      break;
  }
  return source == gguf::GgmlType::kF16 ? LNPU_DTYPE_F16 : LNPU_DTYPE_F32;
}

// Converts `count` elements of F32/F16 `src` into F32/F16 `dst`.
void ConvertElements(const uint8_t* src, gguf::GgmlType src_type,
                     uint8_t* dst, uint32_t dst_dtype, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    float value;
    if (src_type == gguf::GgmlType::kF16) {
      uint16_t half;
      std::memcpy(&half, src + 2 * i, 2);
      value = gguf::Float16ToFloat(half);
    } else {
      std::memcpy(&value, src + 4 * i, 4);
    }
    if (dst_dtype == LNPU_DTYPE_F16) {
      const uint16_t half = gguf::FloatToFloat16(value);
      std::memcpy(dst + 2 * i, &half, 2);
    } else {
      std::memcpy(dst + 4 * i, &value, 4);
    }
  }
}

}  // namespace

std::string LayerTensorName(uint32_t layer, absl::string_view role) {
  return absl::StrFormat("blk.%u.%s.weight", layer, role);
}

absl::StatusOr<WeightPlan> WeightPlan::Create(
    const gguf::GgufFile& file, const LlamaHParams& hparams,
    CompileOptions::WeightType weights) {
  WeightPlan plan;
  const bool has_output = file.FindTensor("output.weight") != nullptr;
  plan.output_name_ = has_output ? "output.weight" : "token_embd.weight";
  uint64_t offset = 0;
  for (ExpectedTensor& expected : LlamaTensors(hparams, has_output)) {
    const gguf::TensorInfo* tensor = file.FindTensor(expected.name);
    if (tensor == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.path(), ": tensor '", expected.name,
          "' is missing; a llama model needs it"));
    }
    if (tensor->type != gguf::GgmlType::kF32 &&
        tensor->type != gguf::GgmlType::kF16) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.path(), ": tensor '", expected.name, "' has type ",
          std::string(gguf::GgmlTypeName(tensor->type)),
          "; supported tensor types are F32 and F16 (convert the model "
          "with llama.cpp's convert_hf_to_gguf.py --outtype f16 or f32)"));
    }
    const std::vector<uint64_t> shape(tensor->dims.rbegin(),
                                      tensor->dims.rend());
    if (shape != expected.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.path(), ": tensor '", expected.name, "' has shape ",
          ShapeString(shape), ", the hyper-parameters require ",
          ShapeString(expected.shape)));
    }
    PlannedWeight w;
    w.source = tensor;
    w.dtype = ArtifactDtype(tensor->type, expected.role, weights);
    w.size = artifact::DtypeSize(w.dtype);
    for (uint64_t d : shape) w.size *= d;  // dims <= 2^20: no overflow
    w.shape = std::move(shape);
    w.offset = offset;
    offset = (offset + w.size + kWeightAlignment - 1) / kWeightAlignment *
             kWeightAlignment;
    plan.index_.emplace(expected.name, plan.weights_.size());
    plan.weights_.push_back(std::move(w));
  }
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (!plan.index_.contains(tensor.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.path(), ": tensor '", tensor.name,
          "' is not part of the supported llama layout (no biases, no "
          "rope_freqs / llama3 RoPE scaling); refusing to ignore it"));
    }
  }
  plan.data_size_ = offset;
  return plan;
}

const PlannedWeight& WeightPlan::Get(absl::string_view name) const {
  return weights_[index_.at(name)];  // throws for a name never planned
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Weight>>>
WeightPlan::Serialize(flatbuffers::FlatBufferBuilder& builder) const {
  std::vector<flatbuffers::Offset<fb::Weight>> out;
  out.reserve(weights_.size());
  for (const PlannedWeight& w : weights_) {
    out.push_back(fb::CreateWeightDirect(builder, w.source->name.c_str(),
                                         w.dtype, &w.shape, w.offset, w.size));
  }
  return builder.CreateVector(out);
}

absl::Status WeightPlan::Write(const gguf::GgufFile& file,
                               artifact::ArtifactWriter& writer) const {
  constexpr size_t kChunkElements = 1 << 16;
  std::vector<uint8_t> converted(kChunkElements * 4);
  for (const PlannedWeight& w : weights_) {
    const absl::Span<const uint8_t> src = file.TensorData(*w.source);
    const size_t src_element = w.source->type == gguf::GgmlType::kF16 ? 2 : 4;
    const uint64_t elements = w.size / artifact::DtypeSize(w.dtype);
    if (src.size() != elements * src_element) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: tensor '%s' has %u data bytes, %u elements of its type need "
          "%u",
          file.path(), w.source->name, src.size(), elements,
          elements * src_element));
    }
    const bool same_type =
        (w.source->type == gguf::GgmlType::kF16) == (w.dtype == LNPU_DTYPE_F16);
    if (same_type) {
      if (auto s = writer.WriteData(w.offset, src); !s.ok()) return s;
      continue;
    }
    const size_t dst_element = artifact::DtypeSize(w.dtype);
    for (uint64_t first = 0; first < elements; first += kChunkElements) {
      const size_t count =
          static_cast<size_t>(std::min<uint64_t>(kChunkElements, elements - first));
      ConvertElements(src.data() + first * src_element, w.source->type,
                      converted.data(), w.dtype, count);
      if (auto s = writer.WriteData(
              w.offset + first * dst_element,
              absl::MakeConstSpan(converted.data(), count * dst_element));
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace lnpu::compiler
