#include "compiler_artifacts/compiler/weight_plan.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/file_io.h"
#include "base/half.h"
#include "base/quant_blocks.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/ggml_type.h"
#include "compiler_artifacts/gguf/quantize.h"

namespace lnpu::compiler {
namespace {

static_assert(std::endian::native == std::endian::little,
              "GGUF and artifact data are little-endian; this host is not");

enum class Role { kMatrix, kVector };

struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> shape;  // outermost first
  Role role;
  bool required = true;
};

std::vector<ExpectedTensor> LlamaTensors(const LlamaHParams& h,
                                         bool has_output) {
  const bool bias_required = h.architecture == "qwen2";
  std::vector<ExpectedTensor> t;
  t.push_back({"token_embd.weight", {h.vocab_size, h.dim}, Role::kMatrix});
  t.push_back({kRopeFreqsName, {h.rope_dim / 2}, Role::kVector, false});
  if (h.fused_projections) {
    // phi3: fused Q/K/V and gate/up projections, LongRoPE factors.
    t.push_back({kRopeFactorsShortName, {h.rope_dim / 2}, Role::kVector, false});
    t.push_back({kRopeFactorsLongName, {h.rope_dim / 2}, Role::kVector, false});
    for (uint32_t l = 0; l < h.n_layers; ++l) {
      t.push_back({LayerTensorName(l, "attn_norm"), {h.dim}, Role::kVector});
      t.push_back({LayerTensorName(l, "attn_qkv"), {h.q_dim() + 2ull * h.kv_dim(), h.dim},
                   Role::kMatrix});
      t.push_back({LayerTensorName(l, "attn_output"), {h.dim, h.q_dim()}, Role::kMatrix});
      t.push_back({LayerTensorName(l, "ffn_norm"), {h.dim}, Role::kVector});
      t.push_back({LayerTensorName(l, "ffn_up"), {2ull * h.ffn_dim, h.dim}, Role::kMatrix});
      t.push_back({LayerTensorName(l, "ffn_down"), {h.dim, h.ffn_dim}, Role::kMatrix});
    }
  }
  for (uint32_t l = 0; l < h.n_layers && !h.fused_projections; ++l) {
    t.push_back({LayerTensorName(l, "attn_norm"), {h.dim}, Role::kVector});
    t.push_back({LayerTensorName(l, "attn_q"), {h.q_dim(), h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "attn_q", "bias"), {h.q_dim()},
                 Role::kVector, bias_required});
    t.push_back({LayerTensorName(l, "attn_k"), {h.kv_dim(), h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "attn_k", "bias"), {h.kv_dim()},
                 Role::kVector, bias_required});
    t.push_back({LayerTensorName(l, "attn_v"), {h.kv_dim(), h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "attn_v", "bias"), {h.kv_dim()},
                 Role::kVector, bias_required});
    if (h.qk_norm) {
      t.push_back({LayerTensorName(l, "attn_q_norm"), {h.head_dim}, Role::kVector});
      t.push_back({LayerTensorName(l, "attn_k_norm"), {h.head_dim}, Role::kVector});
    }
    t.push_back({LayerTensorName(l, "attn_output"), {h.dim, h.q_dim()}, Role::kMatrix});
    if (h.gemma.enabled) {
      t.push_back({LayerTensorName(l, "post_attention_norm"), {h.dim}, Role::kVector});
      t.push_back({LayerTensorName(l, "post_ffw_norm"), {h.dim}, Role::kVector});
    }
    t.push_back({LayerTensorName(l, "ffn_norm"), {h.dim}, Role::kVector});
    t.push_back({LayerTensorName(l, "ffn_gate"), {h.ffn_dim, h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "ffn_up"), {h.ffn_dim, h.dim}, Role::kMatrix});
    t.push_back({LayerTensorName(l, "ffn_down"), {h.dim, h.ffn_dim}, Role::kMatrix});
  }
  t.push_back({"output_norm.weight", {h.dim}, Role::kVector});
  if (has_output) {
    t.push_back({"output.weight", {h.vocab_size, h.dim}, Role::kMatrix});
  }
  return t;
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// Bits per element of `type`'s storage (4.5 for Q4_0, 6.5625 for Q6_K).
double BitsPerElement(gguf::GgmlType type) {
  return 8.0 * gguf::GgmlBlockBytes(type) / gguf::GgmlBlockElements(type);
}

// The device block type (Q4_0 or Q8_0) whose size per element is closest
// to a block-quantized `source`'s: Q4_0 up to 6.5 bits per element (Q2_K ..
// Q5_1, Q5_K, IQ4_*), Q8_0 above (Q6_K, Q8_0).
uint32_t NearestBlockDtype(gguf::GgmlType source) {
  const double bits = BitsPerElement(source);
  return bits - BitsPerElement(gguf::GgmlType::kQ4_0) <=
                 BitsPerElement(gguf::GgmlType::kQ8_0) - bits
             ? LNPU_DTYPE_Q4_0
             : LNPU_DTYPE_Q8_0;
}

// The artifact dtype of a matrix stored as `source` in the GGUF, before the
// row-length fallback. `q6_k_matmul_only`: the matrix is only ever a MATMUL
// weight of decode-sized rows (the untied output projection, after the
// last-row gather) and its rows are whole Q6_K blocks, so `auto` and `keep`
// keep a Q6_K source as LNPU_DTYPE_Q6_K (the device's Q6_K loops are GEMVs;
// a runtime converts it to Q8_0 at load on a device that does not prefer
// Q6_K).
uint32_t MatrixDtype(gguf::GgmlType source, CompileOptions::WeightType weights,
                     bool q6_k_matmul_only) {
  const bool float_source = source == gguf::GgmlType::kF32 ||
                            source == gguf::GgmlType::kF16 ||
                            source == gguf::GgmlType::kBF16;
  switch (weights) {
    case CompileOptions::WeightType::kF32: return LNPU_DTYPE_F32;
    case CompileOptions::WeightType::kF16: return LNPU_DTYPE_F16;
    case CompileOptions::WeightType::kQ8: return LNPU_DTYPE_Q8_0;
    case CompileOptions::WeightType::kQ4: return LNPU_DTYPE_Q4_0;
    case CompileOptions::WeightType::kAuto:
      if (source == gguf::GgmlType::kQ6_K && q6_k_matmul_only) return LNPU_DTYPE_Q6_K;
      return float_source ? LNPU_DTYPE_Q8_0 : NearestBlockDtype(source);
    case CompileOptions::WeightType::kKeep: break;
  }
  switch (source) {
    case gguf::GgmlType::kF16: return LNPU_DTYPE_F16;
    case gguf::GgmlType::kQ4_0: return LNPU_DTYPE_Q4_0;
    case gguf::GgmlType::kQ6_K: return q6_k_matmul_only ? LNPU_DTYPE_Q6_K : LNPU_DTYPE_Q8_0;
    case gguf::GgmlType::kF32:
    case gguf::GgmlType::kBF16: return LNPU_DTYPE_F32;  // BF16 exactly widened
    default: return LNPU_DTYPE_Q8_0;  // Q8_0 as stored, others re-quantized
  }
}

// The GGUF type with the byte layout of `dtype`.
gguf::GgmlType GgmlTypeOf(uint32_t dtype) {
  switch (dtype) {
    case LNPU_DTYPE_F16: return gguf::GgmlType::kF16;
    case LNPU_DTYPE_Q8_0: return gguf::GgmlType::kQ8_0;
    case LNPU_DTYPE_Q4_0: return gguf::GgmlType::kQ4_0;
    case LNPU_DTYPE_Q6_K: return gguf::GgmlType::kQ6_K;
    default: return gguf::GgmlType::kF32;
  }
}

// Converts one row of f32 values into `dtype` at `dst`.
absl::Status EncodeRow(absl::Span<const float> row, uint32_t dtype,
                       absl::Span<uint8_t> dst) {
  switch (dtype) {
    case LNPU_DTYPE_Q8_0: return gguf::QuantizeRowQ8_0(row, dst);
    case LNPU_DTYPE_Q4_0: return gguf::QuantizeRowQ4_0(row, dst);
    case LNPU_DTYPE_F16:
      for (size_t i = 0; i < row.size(); ++i) {
        const uint16_t half = FloatToFloat16(row[i]);
        std::memcpy(dst.data() + 2 * i, &half, 2);
      }
      return absl::OkStatus();
    default:
      std::memcpy(dst.data(), row.data(), row.size() * sizeof(float));
      return absl::OkStatus();
  }
}

// The index of the first element of `bytes` (a tensor of `type` copied
// bit-exactly: F32, F16, or Q8_0 / Q4_0 / Q6_K whose f16 block scales are
// checked) whose value or scale is not finite, or -1 when all are.
int64_t FirstNonFinite(gguf::GgmlType type, absl::Span<const uint8_t> bytes) {
  auto half_is_finite = [&](size_t at) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + at, 2);
    return (h & 0x7c00u) != 0x7c00u;
  };
  switch (type) {
    case gguf::GgmlType::kF32:
      for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        float f;
        std::memcpy(&f, bytes.data() + i, 4);
        if (!std::isfinite(f)) return static_cast<int64_t>(i / 4);
      }
      return -1;
    case gguf::GgmlType::kF16:
      for (size_t i = 0; i + 2 <= bytes.size(); i += 2) {
        if (!half_is_finite(i)) return static_cast<int64_t>(i / 2);
      }
      return -1;
    case gguf::GgmlType::kQ8_0:
    case gguf::GgmlType::kQ4_0: {
      const size_t block_bytes =
          type == gguf::GgmlType::kQ8_0 ? kQ8_0BlockBytes : kQ4_0BlockBytes;
      for (size_t b = 0; (b + 1) * block_bytes <= bytes.size(); ++b) {
        if (!half_is_finite(b * block_bytes)) return static_cast<int64_t>(b * kQuantBlock);
      }
      return -1;
    }
    case gguf::GgmlType::kQ6_K:
      for (size_t b = 0; (b + 1) * kQ6_KBlockBytes <= bytes.size(); ++b) {
        if (!half_is_finite(b * kQ6_KBlockBytes + kQ6_KDOffset)) {
          return static_cast<int64_t>(b * kQ6_KBlock);
        }
      }
      return -1;
    default:
      return -1;
  }
}

absl::Status NonFiniteError(const gguf::GgufFile& file, const std::string& tensor,
                            uint64_t index) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: tensor '%s' holds a non-finite value (NaN or infinity) at element %u; the model "
      "file is corrupt or was exported wrongly: convert it again from the original weights",
      file.path(), tensor, index));
}

}  // namespace

std::string LayerTensorName(uint32_t layer, absl::string_view role,
                            absl::string_view kind) {
  return absl::StrFormat("blk.%u.%s.%s", layer, role, kind);
}

uint64_t PlannedWeight::rows() const {
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

absl::StatusOr<WeightPlan> WeightPlan::Create(const gguf::GgufFile& file,
                                              const LlamaHParams& hparams,
                                              CompileOptions::WeightType weights,
                                              uint32_t source_layers) {
  WeightPlan plan;
  const bool has_output = file.FindTensor("output.weight") != nullptr;
  plan.output_name_ = has_output ? "output.weight" : "token_embd.weight";
  uint64_t offset = 0;
  for (ExpectedTensor& expected : LlamaTensors(hparams, has_output)) {
    PlannedWeight w;
    w.name = expected.name;
    w.source = file.FindTensor(expected.name);
    if (w.source == nullptr && expected.name == kRopeFreqsName &&
        !hparams.rope_freq_factors.empty()) {
      w.generated = hparams.rope_freq_factors;
    } else if (w.source == nullptr) {
      if (!expected.required) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          file.path(), ": tensor '", expected.name, "' is missing; a ",
          hparams.architecture, " model needs it"));
    }
    gguf::GgmlType type = gguf::GgmlType::kF32;
    if (w.source != nullptr) {
      type = w.source->type;
      if (!gguf::CanDequantize(type)) {
        return absl::InvalidArgumentError(absl::StrCat(
            file.path(), ": tensor '", expected.name, "' has type ",
            std::string(gguf::GgmlTypeName(type)),
            "; supported tensor types are ",
            std::string(gguf::DequantizableTypeNames()),
            ". Re-quantize the model from its F16 or BF16 GGUF with "
            "llama.cpp's llama-quantize to one of these (e.g. Q4_K_M or "
            "Q8_0), or convert the original model to an F16 GGUF"));
      }
      const std::vector<uint64_t> shape(w.source->dims.rbegin(),
                                        w.source->dims.rend());
      if (shape != expected.shape) {
        return absl::InvalidArgumentError(absl::StrCat(
            file.path(), ": tensor '", expected.name, "' has shape ",
            ShapeString(shape), ", the hyper-parameters require ",
            ShapeString(expected.shape)));
      }
    }
    w.shape = std::move(expected.shape);
    const bool q6_k_matmul_only =
        w.name == "output.weight" && w.row_len() % kQ6_KBlock == 0;
    w.dtype = expected.role == Role::kVector ? LNPU_DTYPE_F32
                                             : MatrixDtype(type, weights, q6_k_matmul_only);
    if (artifact::IsBlockQuantized(w.dtype) &&
        w.row_len() % LNPU_QUANT_BLOCK != 0) {
      w.dtype = LNPU_DTYPE_F16;
      plan.f16_fallbacks_.push_back(w.name);
    }
    w.size = artifact::WeightBytes(w.dtype, w.row_len(), w.rows());
    w.offset = offset;
    offset = (offset + w.size + kWeightAlignment - 1) / kWeightAlignment *
             kWeightAlignment;
    plan.index_.emplace(w.name, plan.weights_.size());
    plan.weights_.push_back(std::move(w));
  }
  // A tensor of a layer left out: "blk.<layer>." with layer in
  // [hparams.n_layers, source_layers).
  auto dropped = [&](const std::string& name) {
    uint32_t layer = 0;
    int consumed = 0;
    return std::sscanf(name.c_str(), "blk.%u.%n", &layer, &consumed) == 1 && consumed > 0 &&
           layer >= hparams.n_layers && layer < source_layers;
  };
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (!plan.index_.contains(tensor.name) && !dropped(tensor.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          file.path(), ": tensor '", tensor.name,
          "' is not part of the supported ", hparams.architecture,
          " layout; refusing to ignore it"));
    }
  }
  plan.data_size_ = offset;
  return plan;
}

const PlannedWeight& WeightPlan::Get(absl::string_view name) const {
  return weights_[index_.at(name)];  // throws for a name never planned
}

const PlannedWeight* WeightPlan::Find(absl::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &weights_[it->second];
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Weight>>>
WeightPlan::Serialize(flatbuffers::FlatBufferBuilder& builder) const {
  std::vector<flatbuffers::Offset<fb::Weight>> out;
  out.reserve(weights_.size());
  for (const PlannedWeight& w : weights_) {
    out.push_back(fb::CreateWeightDirect(builder, w.name.c_str(), w.dtype,
                                         &w.shape, w.offset, w.size));
  }
  return builder.CreateVector(out);
}

absl::Status WeightPlan::Write(
    const gguf::GgufFile& file, artifact::ArtifactWriter& writer,
    const std::function<void(uint64_t, uint64_t)>& progress) const {
  // Rows are converted in batches of about this many output bytes.
  constexpr uint64_t kBatchBytes = uint64_t{4} << 20;
  std::vector<float> row;
  std::vector<uint8_t> batch;
  for (const PlannedWeight& w : weights_) {
    if (w.source == nullptr) {
      LNPU_RETURN_IF_ERROR(writer.WriteData(
          w.offset, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(w.generated.data()),
                                        w.generated.size() * sizeof(float))));
      continue;
    }
    const absl::Span<const uint8_t> src = file.TensorData(*w.source);
    const uint64_t rows = w.rows();
    if (src.size() != w.source->bytes || src.size() % rows != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: tensor '%s' has %u data bytes for %u rows of %s",
          file.path(), w.name, src.size(), rows,
          std::string(gguf::GgmlTypeName(w.source->type))));
    }
    if (w.source->type == GgmlTypeOf(w.dtype)) {
      // Bit-exact copy, in batches of whole elements or blocks so the
      // mapped pages can be released; each batch is checked for
      // non-finite values first.
      LNPU_ASSIGN_OR_RETURN(const auto block, gguf::GgmlTypeBlock(w.source->type));
      const auto [unit_elements, unit_bytes] = block;
      const uint64_t batch_bytes = kBatchBytes / unit_bytes * unit_bytes;
      for (uint64_t done = 0; done < src.size(); done += batch_bytes) {
        const absl::Span<const uint8_t> piece = src.subspan(done, batch_bytes);
        if (const int64_t bad = FirstNonFinite(w.source->type, piece); bad >= 0) {
          return NonFiniteError(file, w.name,
                                done / unit_bytes * unit_elements + static_cast<uint64_t>(bad));
        }
        LNPU_RETURN_IF_ERROR(writer.WriteData(w.offset + done, piece));
        ReleaseMappedPages(piece);
        if (progress) progress(w.offset + done + piece.size(), data_size_);
      }
      continue;
    }
    const uint64_t src_row_bytes = src.size() / rows;
    const uint64_t dst_row_bytes = w.size / rows;
    const uint64_t batch_rows = std::max<uint64_t>(1, kBatchBytes / dst_row_bytes);
    row.resize(w.row_len());
    for (uint64_t first = 0; first < rows; first += batch_rows) {
      const uint64_t count = std::min(batch_rows, rows - first);
      batch.resize(count * dst_row_bytes);
      for (uint64_t r = 0; r < count; ++r) {
        const uint64_t index = first + r;
        const absl::Span<const uint8_t> src_row =
            src.subspan(index * src_row_bytes, src_row_bytes);
        absl::Status s = gguf::DequantizeRow(w.source->type, src_row,
                                             absl::MakeSpan(row));
        if (s.ok()) {
          for (size_t i = 0; i < row.size(); ++i) {
            if (!std::isfinite(row[i])) return NonFiniteError(file, w.name, index * row.size() + i);
          }
          s = EncodeRow(row, w.dtype,
                        absl::MakeSpan(batch).subspan(r * dst_row_bytes,
                                                      dst_row_bytes));
        }
        if (!s.ok()) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: tensor '%s' row %u cannot be converted from %s: %s",
              file.path(), w.name, index,
              std::string(gguf::GgmlTypeName(w.source->type)),
              std::string(s.message())));
        }
      }
      LNPU_RETURN_IF_ERROR(writer.WriteData(w.offset + first * dst_row_bytes, batch));
      ReleaseMappedPages(src.subspan(first * src_row_bytes, count * src_row_bytes));
      if (progress) progress(w.offset + (first + count) * dst_row_bytes, data_size_);
    }
  }
  if (progress) progress(data_size_, data_size_);
  return absl::OkStatus();
}

}  // namespace lnpu::compiler
