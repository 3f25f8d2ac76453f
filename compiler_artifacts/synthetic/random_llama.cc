#include "compiler_artifacts/synthetic/random_llama.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <numbers>
#include <string_view>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/half.h"
#include "base/status_macros.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "compiler_artifacts/gguf/gguf_value.h"
#include "compiler_artifacts/gguf/gguf_writer.h"
#include "compiler_artifacts/gguf/quantize.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::synthetic {
namespace {

using gguf::GgmlType;
using gguf::GgmlTypeBlock;
using gguf::GgmlTypeName;
using gguf::GgufFile;
using gguf::GgufValue;
using gguf::GgufValueType;
using gguf::GgufWriter;
using gguf::QuantizeRowQ4_0;
using gguf::QuantizeRowQ8_0;
using gguf::ToAbsl;

constexpr uint64_t kMaxModelBytes = uint64_t{64} << 30;

// SplitMix64: small, fast, and identical on every platform (unlike the
// standard distributions), so a seed always gives the same model.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double Uniform() { return static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double Normal() {
    const double radius = std::sqrt(-2.0 * std::log(Uniform()));
    return radius * std::cos(2.0 * std::numbers::pi * Uniform());
  }

 private:
  uint64_t state_;
};

// Per-tensor seed: the tensor's content depends only on the model seed and
// its name, not on the order tensors are generated in.
uint64_t TensorSeed(uint64_t seed, std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  Random mix(seed ^ hash);
  return mix.Next();
}

// Weight types the generator writes: every type the compiler imports.
bool IsSupportedWeightType(GgmlType type) { return gguf::CanDequantize(type); }

// The type a matrix with rows of `row_len` elements is written in: `type`,
// or F16 when the rows are not whole blocks of it.
GgmlType RowType(GgmlType type, uint64_t row_len) {
  return row_len % GgmlBlockElements(type) == 0 ? type : GgmlType::kF16;
}

uint64_t RowBytes(GgmlType type, uint64_t row_len) {
  return row_len / GgmlBlockElements(type) * GgmlBlockBytes(type);  // type is supported
}

void StoreHalf(uint8_t* dst, float value) {
  const uint16_t bits = FloatToFloat16(value);
  std::memcpy(dst, &bits, 2);
}

void FillRandom(Random& random, absl::Span<uint8_t> bytes) {
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t bits = random.Next();
    std::memcpy(bytes.data() + i, &bits, std::min<size_t>(8, bytes.size() - i));
  }
}

// Mean and root mean square of `values`.
std::pair<double, double> MeanAndRms(absl::Span<const float> values) {
  double sum = 0, sum_sq = 0;
  for (float v : values) {
    sum += v;
    sum_sq += double{v} * v;
  }
  return {sum / values.size(), std::sqrt(sum_sq / values.size())};
}

// A block of `type` (a block-quantized type without a quantizer here) with
// uniform random quants and scales whose f16 fields (d, and dmin or m) are
// chosen so that the block's values have mean about 0 and std `std`. The
// values are linear in those fields: with only the field k set to 1 the
// block decodes to basis_k, so d * basis_0 + c * basis_1 has mean 0 for
// c = -d * mean(basis_0) / mean(basis_1).
absl::Status RandomCalibratedBlock(Random& random, GgmlType type, double std,
                                   absl::Span<uint8_t> block, std::vector<float>& scratch) {
  FillRandom(random, block);
  const absl::Span<const uint32_t> fields = BlockHalfFieldOffsets(type);
  scratch.resize(2 * GgmlBlockElements(type));
  const absl::Span<float> basis[2] = {
      absl::MakeSpan(scratch).subspan(0, GgmlBlockElements(type)),
      absl::MakeSpan(scratch).subspan(GgmlBlockElements(type))};
  for (size_t k = 0; k < fields.size(); ++k) {
    for (size_t f = 0; f < fields.size(); ++f) StoreHalf(&block[fields[f]], f == k ? 1.0f : 0.0f);
    LNPU_RETURN_IF_ERROR(DequantizeRow(type, block, basis[k]));
  }
  double offset_ratio = 0;  // c / d
  if (fields.size() == 2) {
    const double mean1 = MeanAndRms(basis[1]).first;
    if (mean1 != 0) offset_ratio = -MeanAndRms(basis[0]).first / mean1;
  }
  double sum_sq = 0;
  for (size_t i = 0; i < basis[0].size(); ++i) {
    const double v = basis[0][i] + (fields.size() == 2 ? offset_ratio * basis[1][i] : 0.0);
    sum_sq += v * v;
  }
  const double rms = std::sqrt(sum_sq / basis[0].size());
  const double d = rms > 0 ? std / rms : 0.0;
  StoreHalf(&block[fields[0]], static_cast<float>(d));
  if (fields.size() == 2) StoreHalf(&block[fields[1]], static_cast<float>(d * offset_ratio));
  return absl::OkStatus();
}

// One row of `row_len` random values of mean `mean` and std `std` in
// `type`, drawn from `random` (so consecutive rows continue one stream).
absl::Status RandomRow(Random& random, GgmlType type, double mean, double std,
                       std::vector<float>& values, std::vector<uint8_t>& row) {
  row.resize(RowBytes(type, values.size()));
  if (type == GgmlType::kQ4_K || type == GgmlType::kQ6_K) {
    // Uniform random quants; every sub-block scale (and min) is 8 (Q4_K) or
    // 16 (Q6_K) and d is chosen for the wanted std: uniform 4-bit quants
    // have std 4.61 (mean 7.5, cancelled by dmin), 6-bit ones 18.47.
    const bool q4 = type == GgmlType::kQ4_K;
    const uint32_t block_bytes = GgmlBlockBytes(type);
    for (size_t at = 0; at < row.size(); at += block_bytes) {
      uint8_t* block = row.data() + at;
      FillRandom(random, absl::MakeSpan(block, block_bytes));
      if (q4) {
        const float d = static_cast<float>(std / (8 * 4.61));
        StoreHalf(block, d);
        StoreHalf(block + 2, 7.5f * d);
        std::memset(block + 4, 8, 8);        // scales and mins of sub-blocks 0-3
        std::memset(block + 12, 0x88, 4);    // sub-blocks 4-7
      } else {
        std::memset(block + 192, 16, 16);    // int8 scales
        StoreHalf(block + 208, static_cast<float>(std / (16 * 18.47)));
      }
    }
    return absl::OkStatus();
  }
  const bool has_quantizer = type == GgmlType::kQ8_0 || type == GgmlType::kQ4_0;
  if (GgmlBlockElements(type) > 1 && !has_quantizer) {
    const uint32_t block_bytes = GgmlBlockBytes(type);
    std::vector<float> scratch;
    for (size_t at = 0; at < row.size(); at += block_bytes) {
      LNPU_RETURN_IF_ERROR(RandomCalibratedBlock(
          random, type, std, absl::MakeSpan(row).subspan(at, block_bytes), scratch));
    }
    return absl::OkStatus();
  }
  for (float& value : values) value = static_cast<float>(mean + std * random.Normal());
  switch (type) {
    case GgmlType::kQ8_0:
      return QuantizeRowQ8_0(values, absl::MakeSpan(row));
    case GgmlType::kQ4_0:
      return QuantizeRowQ4_0(values, absl::MakeSpan(row));
    case GgmlType::kF32:
      std::memcpy(row.data(), values.data(), row.size());
      return absl::OkStatus();
    default:
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t bits = type == GgmlType::kF16 ? FloatToFloat16(values[i])
                                                     : FloatToBFloat16(values[i]);
        std::memcpy(&row[2 * i], &bits, 2);
      }
      return absl::OkStatus();
  }
}

uint32_t HeadDim(const RandomLlamaSpec& spec) {
  return spec.head_dim != 0 ? spec.head_dim : spec.dim / spec.n_heads;
}

absl::Status InvalidSpec(std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("RandomLlamaSpec: ", ToAbsl(message)));
}

absl::Status ValidateSpec(const RandomLlamaSpec& spec, uint32_t vocab_size) {
  if (spec.architecture != "llama" && spec.architecture != "qwen2" &&
      spec.architecture != "qwen3" && spec.architecture != "phi3" &&
      spec.architecture != "smollm3" && spec.architecture != "gemma2" &&
      spec.architecture != "gemma3") {
    return InvalidSpec(absl::StrCat("architecture \"", spec.architecture,
                                    "\" is not supported: use \"llama\", \"qwen2\", \"qwen3\", "
                                    "\"phi3\", \"smollm3\", \"gemma2\" or \"gemma3\""));
  }
  if (spec.vocabulary_gguf.empty() &&
      (vocab_size < kMinLlamaVocab || vocab_size > kMaxRandomLlamaVocab)) {
    return InvalidSpec(absl::StrCat("vocab_size ", vocab_size, " must be in [", kMinLlamaVocab,
                                    ", ", kMaxRandomLlamaVocab,
                                    "] (3 control + 256 byte + 26 letter tokens at least)"));
  }
  if (spec.dim == 0 || spec.n_layers == 0 || spec.n_heads == 0 || spec.n_kv_heads == 0 ||
      spec.ffn_dim == 0 || spec.context_length == 0) {
    return InvalidSpec("dim, n_layers, n_heads, n_kv_heads, ffn_dim and context_length must be "
                       "positive");
  }
  if (spec.head_dim == 0 && spec.dim % spec.n_heads != 0) {
    return InvalidSpec(absl::StrCat("dim ", spec.dim, " is not a multiple of n_heads ",
                                    spec.n_heads, "; set head_dim"));
  }
  if (spec.n_heads % spec.n_kv_heads != 0) {
    return InvalidSpec(absl::StrCat("n_heads ", spec.n_heads, " is not a multiple of n_kv_heads ",
                                    spec.n_kv_heads));
  }
  const uint32_t head_dim = HeadDim(spec);
  const uint32_t rope_dim = spec.rope_dim == 0 ? head_dim : spec.rope_dim;
  if (rope_dim % 2 != 0 || rope_dim > head_dim) {
    return InvalidSpec(absl::StrCat("rope dimension ", rope_dim,
                                    " must be even and at most head_dim ", head_dim));
  }
  if (!(std::isfinite(spec.rope_theta) && spec.rope_theta > 0)) {
    return InvalidSpec(absl::StrCat("rope_theta ", spec.rope_theta, " must be positive and finite"));
  }
  if (!(std::isfinite(spec.norm_eps) && spec.norm_eps > 0)) {
    return InvalidSpec(absl::StrCat("norm_eps ", spec.norm_eps, " must be positive and finite"));
  }
  if (!(std::isfinite(spec.rope_attn_factor) && spec.rope_attn_factor >= 0)) {
    return InvalidSpec(absl::StrCat("rope_attn_factor ", spec.rope_attn_factor,
                                    " must be 0 (none) or positive"));
  }
  if (!(std::isfinite(spec.llama3_rope_factor) && spec.llama3_rope_factor >= 0)) {
    return InvalidSpec(absl::StrCat("llama3_rope_factor ", spec.llama3_rope_factor,
                                    " must be 0 (none) or positive"));
  }
  if (!IsSupportedWeightType(spec.weight_type)) {
    return InvalidSpec(absl::StrCat("weight_type ", ToAbsl(GgmlTypeName(spec.weight_type)),
                                    " is not supported: use one of ",
                                    ToAbsl(gguf::DequantizableTypeNames())));
  }
  // All factors are < 2^32 and there are few of them, so double is exact
  // enough to compare against the limit without overflow.
  const double kv_dim = static_cast<double>(head_dim) * spec.n_kv_heads;
  const double per_layer = 2.0 * spec.dim * head_dim * spec.n_heads + 2.0 * spec.dim * kv_dim +
                           3.0 * spec.dim * spec.ffn_dim;
  const double matmul_elements = per_layer * spec.n_layers +
                                 static_cast<double>(spec.dim) * vocab_size *
                                     (spec.tied_embeddings ? 1 : 2);
  const double bytes = matmul_elements * 4;
  if (bytes > static_cast<double>(kMaxModelBytes)) {
    return InvalidSpec(absl::StrFormat("the model would need up to %.0f bytes of weights; the "
                                       "limit is %d bytes: shrink dim, n_layers, ffn_dim or "
                                       "vocab_size",
                                       bytes, kMaxModelBytes));
  }
  return absl::OkStatus();
}

uint32_t FileType(GgmlType weight_type) {
  // llama.cpp's llama_ftype.
  switch (weight_type) {
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ5_0: return 8;
    case GgmlType::kQ5_1: return 9;
    case GgmlType::kQ2_K: return 10;
    case GgmlType::kQ3_K: return 12;  // MOSTLY_Q3_K_M
    case GgmlType::kQ4_K: return 15;  // MOSTLY_Q4_K_M
    case GgmlType::kQ5_K: return 17;  // MOSTLY_Q5_K_M
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kIQ4_NL: return 25;
    case GgmlType::kIQ4_XS: return 30;
    case GgmlType::kBF16: return 32;
    default: return 0;
  }
}

// Copies every tokenizer.* key of the vocabulary GGUF at `path`, with the
// last filler tokens (type unused, or spelled "[PAD<id>]" as llama.cpp's
// conversions write them) respelled as the user-defined `added_tokens`.
absl::Status CopyVocabulary(const std::string& path, const std::vector<std::string>& added_tokens,
                            std::vector<std::pair<std::string, GgufValue>>& metadata,
                            uint32_t& vocab_size) {
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  std::vector<int32_t> types;
  std::vector<size_t> respelled;  // token ids, in the order of added_tokens
  if (!added_tokens.empty()) {
    absl::StatusOr<std::vector<int32_t>> read = file->GetInt32Array("tokenizer.ggml.token_type");
    absl::StatusOr<std::vector<std::string>> texts =
        file->GetStringArray("tokenizer.ggml.tokens");
    if (read.ok() && texts.ok() && read->size() == texts->size()) types = *std::move(read);
    for (size_t id = types.size(); id > 0 && respelled.size() < added_tokens.size(); --id) {
      if (types[id - 1] == static_cast<int32_t>(TokenType::kUnused) ||
          (*texts)[id - 1] == absl::StrCat("[PAD", id - 1, "]")) {
        respelled.push_back(id - 1);
      }
    }
    if (respelled.size() < added_tokens.size()) {
      return InvalidSpec(absl::StrCat(path, " has ", respelled.size(),
                                      " filler tokens to respell, but added_tokens has ",
                                      added_tokens.size()));
    }
    std::reverse(respelled.begin(), respelled.end());
    for (size_t id : respelled) types[id] = static_cast<int32_t>(TokenType::kUserDefined);
  }
  for (std::string_view key_view : file->keys()) {
    if (key_view.substr(0, 10) != "tokenizer.") continue;
    const std::string key(key_view);
    const GgufValueType type = *file->KeyType(key_view);
    absl::StatusOr<GgufValue> value = absl::InternalError("unset");
    switch (type) {
      case GgufValueType::kString: {
        absl::StatusOr<std::string> v = file->GetString(key_view);
        value = v.ok() ? absl::StatusOr<GgufValue>(GgufValue::String(*v)) : v.status();
        break;
      }
      case GgufValueType::kBool: {
        absl::StatusOr<bool> v = file->GetBool(key_view);
        value = v.ok() ? absl::StatusOr<GgufValue>(GgufValue::Bool(*v)) : v.status();
        break;
      }
      case GgufValueType::kFloat32:
      case GgufValueType::kFloat64: {
        absl::StatusOr<float> v = file->GetFloat(key_view);
        value = v.ok() ? absl::StatusOr<GgufValue>(GgufValue::Float32(*v)) : v.status();
        break;
      }
      case GgufValueType::kArray: {
        absl::StatusOr<std::vector<std::string>> strings = file->GetStringArray(key_view);
        if (strings.ok() && key == "tokenizer.ggml.tokens") {
          for (size_t i = 0; i < respelled.size(); ++i) (*strings)[respelled[i]] = added_tokens[i];
        }
        if (key == "tokenizer.ggml.token_type" && !respelled.empty()) {
          value = GgufValue::Int32Array(types);
          break;
        }
        if (strings.ok()) {
          value = GgufValue::StringArray(*strings);
          break;
        }
        absl::StatusOr<std::vector<int32_t>> ints = file->GetInt32Array(key_view);
        if (ints.ok()) {
          value = GgufValue::Int32Array(*ints);
          break;
        }
        absl::StatusOr<std::vector<float>> floats = file->GetFloatArray(key_view);
        value = floats.ok() ? absl::StatusOr<GgufValue>(GgufValue::Float32Array(*floats))
                            : floats.status();
        break;
      }
      default: {  // integers
        absl::StatusOr<int64_t> v = file->GetInt(key_view);
        value = v.ok() ? absl::StatusOr<GgufValue>(GgufValue::Int64(*v)) : v.status();
        if (v.ok() && *v >= 0 && *v <= UINT32_MAX) {
          value = GgufValue::Uint32(static_cast<uint32_t>(*v));
        }
        break;
      }
    }
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": vocabulary key ", key,
                                                     " cannot be copied: ",
                                                     value.status().message()));
    }
    metadata.emplace_back(key, *std::move(value));
  }
  absl::StatusOr<std::vector<std::string>> tokens = file->GetStringArray("tokenizer.ggml.tokens");
  if (!tokens.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " has no tokenizer.ggml.tokens: it is not a vocabulary GGUF (",
        tokens.status().message(), ")"));
  }
  if (vocab_size != 0 && vocab_size != tokens->size()) {
    return InvalidSpec(absl::StrCat("vocab_size ", vocab_size, " differs from the ",
                                    tokens->size(), " tokens of ", path,
                                    "; set it to 0 or to that count"));
  }
  vocab_size = static_cast<uint32_t>(tokens->size());
  return absl::OkStatus();
}

// A tensor to generate: its layout (GGUF order, dims[0] contiguous) and
// value distribution.
struct TensorRecipe {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> dims;
  double mean;
  double std;
};

}  // namespace

absl::Status WriteRandomLlamaGguf(const RandomLlamaSpec& spec, const std::string& path) {
  std::vector<std::pair<std::string, GgufValue>> metadata;
  const std::string& arch = spec.architecture;
  metadata.emplace_back("general.architecture", GgufValue::String(arch));
  uint32_t vocab_size = spec.vocab_size;
  std::vector<std::pair<std::string, GgufValue>> vocabulary_keys;
  if (!spec.vocabulary_gguf.empty()) {
    LNPU_RETURN_IF_ERROR(
        CopyVocabulary(spec.vocabulary_gguf, spec.added_tokens, vocabulary_keys, vocab_size));
  }
  LNPU_RETURN_IF_ERROR(ValidateSpec(spec, vocab_size));

  const uint32_t head_dim = HeadDim(spec);
  const uint64_t dim = spec.dim;
  const uint64_t q_dim = uint64_t{head_dim} * spec.n_heads;
  const uint64_t kv_dim = uint64_t{head_dim} * spec.n_kv_heads;
  const uint64_t ffn = spec.ffn_dim;
  const uint64_t vocab = vocab_size;
  const std::string p = arch + ".";
  auto set_u32 = [&](std::string key, uint32_t value) {
    metadata.emplace_back(std::move(key), GgufValue::Uint32(value));
  };
  auto set_f32 = [&](std::string key, float value) {
    metadata.emplace_back(std::move(key), GgufValue::Float32(value));
  };
  metadata.emplace_back(
      "general.name",
      GgufValue::String(absl::StrCat("random-", arch, "-d", spec.dim, "-l", spec.n_layers, "-v",
                                     vocab_size, "-", ToAbsl(GgmlTypeName(spec.weight_type)),
                                     "-seed", spec.seed)));
  set_u32("general.file_type", FileType(spec.weight_type));
  set_u32(p + "vocab_size", vocab_size);
  set_u32(p + "context_length", spec.context_length);
  set_u32(p + "embedding_length", spec.dim);
  set_u32(p + "block_count", spec.n_layers);
  set_u32(p + "feed_forward_length", spec.ffn_dim);
  set_u32(p + "attention.head_count", spec.n_heads);
  set_u32(p + "attention.head_count_kv", spec.n_kv_heads);
  if (spec.head_dim != 0 || arch == "qwen3") {
    set_u32(p + "attention.key_length", head_dim);
    set_u32(p + "attention.value_length", head_dim);
  }
  set_u32(p + "rope.dimension_count", spec.rope_dim == 0 ? head_dim : spec.rope_dim);
  set_f32(p + "rope.freq_base", spec.rope_theta);
  if (spec.llama3_rope_factor > 0) {
    metadata.emplace_back(p + "rope.scaling.type", GgufValue::String("llama3"));
    set_f32(p + "rope.scaling.factor", spec.llama3_rope_factor);
    set_f32(p + "rope.scaling.low_freq_factor", 1.0f);
    set_f32(p + "rope.scaling.high_freq_factor", 4.0f);
    set_u32(p + "rope.scaling.original_context_length", 8192);
  }
  if (spec.rope_attn_factor > 0) set_f32(p + "rope.scaling.attn_factor", spec.rope_attn_factor);
  if (spec.rope_original_context > 0) {
    set_u32(p + "rope.scaling.original_context_length", spec.rope_original_context);
  }
  set_f32(p + "attention.layer_norm_rms_epsilon", spec.norm_eps);
  if (spec.sliding_window > 0) set_u32(p + "attention.sliding_window", spec.sliding_window);
  if (spec.attn_logit_softcap > 0) set_f32(p + "attn_logit_softcapping", spec.attn_logit_softcap);
  if (spec.final_logit_softcap > 0) {
    set_f32(p + "final_logit_softcapping", spec.final_logit_softcap);
  }
  if (spec.vocabulary_gguf.empty()) {
    LNPU_ASSIGN_OR_RETURN(LlamaVocabulary vocabulary, MakeLlamaVocabulary(vocab_size));
    metadata.emplace_back("tokenizer.ggml.model", GgufValue::String("llama"));
    metadata.emplace_back("tokenizer.ggml.tokens", GgufValue::StringArray(vocabulary.tokens));
    metadata.emplace_back("tokenizer.ggml.scores", GgufValue::Float32Array(vocabulary.scores));
    metadata.emplace_back("tokenizer.ggml.token_type",
                          GgufValue::Int32Array(vocabulary.token_types));
    set_u32("tokenizer.ggml.bos_token_id", 1);
    set_u32("tokenizer.ggml.eos_token_id", 2);
    set_u32("tokenizer.ggml.unknown_token_id", 0);
    metadata.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::Bool(true));
    metadata.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::Bool(false));
  } else {
    for (auto& entry : vocabulary_keys) metadata.push_back(std::move(entry));
  }

  // The tensors in llama.cpp's order. A matmul with n outputs and k inputs
  // has dims [k, n] (ggml's ne0 = k).
  std::vector<TensorRecipe> recipes;
  auto matrix = [&](std::string name, uint64_t inputs, uint64_t outputs, double std) {
    const GgmlType type = RowType(spec.weight_type, inputs);
    recipes.push_back({std::move(name), type, {inputs, outputs}, 0.0, std});
  };
  auto vector = [&](std::string name, uint64_t size, double mean, double std) {
    recipes.push_back({std::move(name), GgmlType::kF32, {size}, mean, std});
  };
  constexpr double kNormStd = 0.05;
  constexpr double kBiasStd = 0.1;
  matrix("token_embd.weight", dim, vocab, 1.0);
  const bool bias = spec.qkv_bias || arch == "qwen2";
  const double attn_std = 1.0 / std::sqrt(static_cast<double>(dim));
  const bool phi3 = arch == "phi3";
  if (phi3) {
    // LongRoPE frequency divisors, positive.
    const uint32_t rope_dim = spec.rope_dim == 0 ? head_dim : spec.rope_dim;
    vector("rope_factors_long.weight", rope_dim / 2, 4.0, 0.5);
    vector("rope_factors_short.weight", rope_dim / 2, 1.5, 0.2);
  }
  for (uint32_t layer = 0; layer < spec.n_layers && phi3; ++layer) {
    const std::string b = absl::StrCat("blk.", layer, ".");
    vector(b + "attn_norm.weight", dim, 1.0, kNormStd);
    matrix(b + "attn_qkv.weight", dim, q_dim + 2 * kv_dim, attn_std);
    matrix(b + "attn_output.weight", q_dim, dim, 1.0 / std::sqrt(static_cast<double>(q_dim)));
    vector(b + "ffn_norm.weight", dim, 1.0, kNormStd);
    matrix(b + "ffn_up.weight", dim, 2 * ffn, attn_std);
    matrix(b + "ffn_down.weight", ffn, dim, 1.0 / std::sqrt(static_cast<double>(ffn)));
  }
  for (uint32_t layer = 0; layer < spec.n_layers && !phi3; ++layer) {
    const std::string b = absl::StrCat("blk.", layer, ".");
    vector(b + "attn_norm.weight", dim, 1.0, kNormStd);
    matrix(b + "attn_q.weight", dim, q_dim, attn_std);
    if (bias) vector(b + "attn_q.bias", q_dim, 0.0, kBiasStd);
    matrix(b + "attn_k.weight", dim, kv_dim, attn_std);
    if (bias) vector(b + "attn_k.bias", kv_dim, 0.0, kBiasStd);
    matrix(b + "attn_v.weight", dim, kv_dim, attn_std);
    if (bias) vector(b + "attn_v.bias", kv_dim, 0.0, kBiasStd);
    if (arch == "qwen3" || arch == "gemma3") {
      vector(b + "attn_q_norm.weight", head_dim, 1.0, kNormStd);
      vector(b + "attn_k_norm.weight", head_dim, 1.0, kNormStd);
    }
    matrix(b + "attn_output.weight", q_dim, dim, 1.0 / std::sqrt(static_cast<double>(q_dim)));
    if (arch == "gemma2" || arch == "gemma3") {
      vector(b + "post_attention_norm.weight", dim, 1.0, kNormStd);
      vector(b + "post_ffw_norm.weight", dim, 1.0, kNormStd);
    }
    vector(b + "ffn_norm.weight", dim, 1.0, kNormStd);
    matrix(b + "ffn_gate.weight", dim, ffn, attn_std);
    matrix(b + "ffn_up.weight", dim, ffn, attn_std);
    matrix(b + "ffn_down.weight", ffn, dim, 1.0 / std::sqrt(static_cast<double>(ffn)));
  }
  vector("output_norm.weight", dim, 1.0, kNormStd);
  if (!spec.tied_embeddings) matrix("output.weight", dim, vocab, attn_std);

  GgufWriter writer;
  for (auto& [key, value] : metadata) writer.Set(std::move(key), std::move(value));
  // Each tensor is generated row by row while the file is written, into one
  // row buffer shared by all tensors (they are written one after another).
  std::vector<float> values;
  std::vector<uint8_t> row;
  for (const TensorRecipe& recipe : recipes) {
    auto generate = [&spec, &recipe, &values, &row](GgufWriter::DataSink sink) {
      Random random(TensorSeed(spec.seed, recipe.name));
      values.resize(recipe.dims[0]);
      const uint64_t rows = recipe.dims.size() > 1 ? recipe.dims[1] : 1;
      for (uint64_t r = 0; r < rows; ++r) {
        LNPU_RETURN_IF_ERROR(RandomRow(random, recipe.type, recipe.mean, recipe.std, values, row));
        LNPU_RETURN_IF_ERROR(sink(row));
      }
      return absl::OkStatus();
    };
    LNPU_RETURN_IF_ERROR(writer.AddStreamedTensor(recipe.name, recipe.type, recipe.dims, generate));
  }
  return writer.Write(path);
}

}  // namespace lnpu::synthetic
