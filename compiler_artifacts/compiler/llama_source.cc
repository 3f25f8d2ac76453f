#include "compiler_artifacts/compiler/llama_source.h"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::compiler {
namespace {

// `result`, or `fallback` when the key is absent.
template <typename T>
absl::StatusOr<T> OrDefault(absl::StatusOr<T> result, T fallback) {
  if (absl::IsNotFound(result.status())) return fallback;
  return result;
}

absl::Status KeyError(const gguf::GgufFile& file, absl::string_view key,
                      absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(file.path(), ": GGUF key ", key, " ", problem));
}

// A dimension-like integer in [1, kMaxModelDimension].
absl::StatusOr<uint32_t> Dimension(const gguf::GgufFile& file,
                                   const std::string& key,
                                   absl::StatusOr<uint64_t> value) {
  if (absl::IsNotFound(value.status())) {
    return KeyError(file, key, "is missing; it is required");
  }
  LNPU_RETURN_IF_ERROR(value.status());
  if (*value == 0 || *value > artifact::kMaxModelDimension) {
    return KeyError(file, key,
                    absl::StrFormat("is %u, must be in [1, %u]", *value,
                                    artifact::kMaxModelDimension));
  }
  return static_cast<uint32_t>(*value);
}

// A float key that must be finite and > 0, `fallback` when absent.
absl::StatusOr<float> PositiveFloat(const gguf::GgufFile& file,
                                    const std::string& key, float fallback) {
  LNPU_ASSIGN_OR_RETURN(float value, OrDefault(file.GetFloat(key), fallback));
  if (!std::isfinite(value) || value <= 0) {
    return KeyError(file, key, absl::StrFormat("is %g, must be > 0", value));
  }
  return value;
}

// Llama 3 RoPE frequency factors, as llama.cpp's convert_hf_to_gguf.py
// computes the rope_freqs tensor: frequencies whose wavelength is below
// original_context_length / high_freq_factor are kept (factor 1), those
// above original_context_length / low_freq_factor are divided by `factor`,
// and the band between is interpolated smoothly.
absl::StatusOr<std::vector<float>> Llama3FreqFactors(
    const gguf::GgufFile& file, const std::string& prefix, float theta,
    uint32_t rope_dim) {
  LNPU_ASSIGN_OR_RETURN(float factor, PositiveFloat(file, prefix + "rope.scaling.factor", 8.0f));
  LNPU_ASSIGN_OR_RETURN(float low,
                        PositiveFloat(file, prefix + "rope.scaling.low_freq_factor", 1.0f));
  LNPU_ASSIGN_OR_RETURN(float high,
                        PositiveFloat(file, prefix + "rope.scaling.high_freq_factor", 4.0f));
  if (!(high > low)) {
    return KeyError(file, prefix + "rope.scaling.high_freq_factor",
                    absl::StrFormat("is %g, must exceed low_freq_factor %g", high, low));
  }
  LNPU_ASSIGN_OR_RETURN(
      uint32_t original,
      Dimension(file, prefix + "rope.scaling.original_context_length",
                OrDefault<uint64_t>(file.GetUint(prefix + "rope.scaling.original_context_length"),
                                    8192)));
  const double low_freq_wavelen = original / static_cast<double>(low);
  const double high_freq_wavelen = original / static_cast<double>(high);
  std::vector<float> factors;
  for (uint32_t i = 0; i < rope_dim / 2; ++i) {
    const double freq =
        1.0 / std::pow(static_cast<double>(theta), 2.0 * i / rope_dim);
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < high_freq_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_freq_wavelen) {
      factors.push_back(factor);
    } else {
      const double smooth = (original / wavelen - low) / (static_cast<double>(high) - low);
      factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return factors;
}

// A special-token id: `fallback` when absent; none (-1) when stored as a
// negative number or as 0xFFFFFFFF (how some converters write "none").
absl::StatusOr<int32_t> TokenId(const gguf::GgufFile& file,
                                const char* key, int32_t fallback,
                                size_t vocab_size) {
  absl::StatusOr<int64_t> id = file.GetInt(key);
  if (absl::IsNotFound(id.status())) return fallback;
  LNPU_RETURN_IF_ERROR(id.status());
  if (*id < 0 || *id == 0xFFFFFFFFll) return -1;
  if (static_cast<uint64_t>(*id) >= vocab_size) {
    return KeyError(file, key,
                    absl::StrFormat("is %d, outside the vocabulary of %u tokens",
                                    *id, vocab_size));
  }
  return static_cast<int32_t>(*id);
}

// A float key that must be finite and >= 0, `fallback` when absent.
absl::StatusOr<float> NonNegativeFloat(const gguf::GgufFile& file, const std::string& key,
                                       float fallback) {
  LNPU_ASSIGN_OR_RETURN(const float value, OrDefault(file.GetFloat(key), fallback));
  if (!std::isfinite(value) || value < 0) {
    return KeyError(file, key, absl::StrFormat("is %g, must be >= 0", value));
  }
  return value;
}

// The gemma2 / gemma3 keys and constants, as llama.cpp reads them.
absl::StatusOr<GemmaFeatures> ReadGemmaFeatures(const gguf::GgufFile& file,
                                                const LlamaHParams& h) {
  const bool gemma2 = h.architecture == "gemma2";
  const std::string p = h.architecture + ".";
  GemmaFeatures g;
  g.enabled = true;
  const bool is_27b = h.n_layers == (gemma2 ? 46u : 62u);
  g.query_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? h.dim / h.n_heads : h.head_dim));
  if (gemma2) {
    LNPU_ASSIGN_OR_RETURN(g.attn_softcap,
                          NonNegativeFloat(file, p + "attn_logit_softcapping", 50.0f));
    LNPU_ASSIGN_OR_RETURN(g.final_softcap,
                          NonNegativeFloat(file, p + "final_logit_softcapping", 30.0f));
  } else {
    LNPU_ASSIGN_OR_RETURN(g.final_softcap,
                          NonNegativeFloat(file, p + "final_logit_softcapping", 0.0f));
    g.rope_theta_local = 10000.0f;
  }
  const std::string window_key = p + "attention.sliding_window";
  LNPU_ASSIGN_OR_RETURN(const uint64_t window,
                        OrDefault<uint64_t>(file.GetUint(window_key), 0));
  if (window > artifact::kMaxModelDimension) {
    return KeyError(file, window_key,
                    absl::StrFormat("is %u, must be <= %u", window, artifact::kMaxModelDimension));
  }
  g.sliding_window = static_cast<uint32_t>(window);
  g.swa_pattern = g.sliding_window == 0 ? 0 : gemma2 ? 2 : 6;
  return g;
}

}  // namespace

absl::StatusOr<LlamaHParams> ReadLlamaHParams(const gguf::GgufFile& file,
                                              uint32_t vocab_size) {
  absl::StatusOr<std::string> arch = file.GetString("general.architecture");
  if (!arch.ok()) {
    return KeyError(file, "general.architecture",
                    absl::StrCat("is unreadable: ", arch.status().message()));
  }
  if (*arch != "llama" && *arch != "qwen2" && *arch != "qwen3" && *arch != "phi3" &&
      *arch != "smollm3" && *arch != "gemma2" && *arch != "gemma3") {
    return absl::InvalidArgumentError(absl::StrCat(
        file.path(), ": architecture \"", *arch,
        "\" is not supported; this compiler supports ",
        kSupportedArchitectures));
  }
  const std::string p = *arch + ".";
  LNPU_ASSIGN_OR_RETURN(uint64_t experts, OrDefault<uint64_t>(file.GetUint(p + "expert_count"), 0));
  if (experts > 0) {
    return KeyError(file, p + "expert_count",
                    "is set: mixture-of-experts models are not supported");
  }

  LlamaHParams h;
  h.architecture = *arch;
  h.rope_mode = *arch == "llama" || *arch == "smollm3" ? LNPU_ROPE_MODE_NORM
                                                       : LNPU_ROPE_MODE_NEOX;
  h.no_rope_layer_step = *arch == "smollm3" ? 4 : 0;
  h.qk_norm = *arch == "qwen3" || *arch == "gemma3";
  h.fused_projections = *arch == "phi3";
  LNPU_ASSIGN_OR_RETURN(h.name, OrDefault<std::string>(file.GetString("general.name"), ""));
  h.vocab_size = vocab_size;
  LNPU_ASSIGN_OR_RETURN(uint64_t declared_vocab,
                        OrDefault<uint64_t>(file.GetUint(p + "vocab_size"), vocab_size));
  if (declared_vocab != vocab_size) {
    return KeyError(
        file, p + "vocab_size",
        absl::StrFormat("is %u but the tokenizer has %u tokens", declared_vocab, vocab_size));
  }

  struct DimensionKey {
    const char* key;
    uint32_t* field;
  };
  for (const DimensionKey& d : {
           DimensionKey{"embedding_length", &h.dim},
           DimensionKey{"block_count", &h.n_layers},
           DimensionKey{"feed_forward_length", &h.ffn_dim},
           DimensionKey{"attention.head_count", &h.n_heads},
           DimensionKey{"context_length", &h.context_length},
       }) {
    LNPU_ASSIGN_OR_RETURN(uint32_t value, Dimension(file, p + d.key, file.GetUint(p + d.key)));
    *d.field = value;
  }
  LNPU_ASSIGN_OR_RETURN(
      uint32_t kv_heads,
      Dimension(file, p + "attention.head_count_kv",
                OrDefault<uint64_t>(file.GetUint(p + "attention.head_count_kv"), h.n_heads)));
  h.n_kv_heads = kv_heads;
  // The head size: attention.key_length when given (qwen3 decouples it
  // from the width), else embedding_length / head_count.
  LNPU_ASSIGN_OR_RETURN(uint64_t key_length,
                        OrDefault<uint64_t>(file.GetUint(p + "attention.key_length"), 0));
  LNPU_ASSIGN_OR_RETURN(
      uint64_t value_length,
      OrDefault<uint64_t>(file.GetUint(p + "attention.value_length"), key_length));
  if (value_length != key_length) {
    return KeyError(file, p + "attention.value_length",
                    absl::StrFormat("is %u but key_length is %u; heads with K and V of "
                                    "different sizes are not supported",
                                    value_length, key_length));
  }
  if (key_length == 0 && h.dim % h.n_heads != 0) {
    return KeyError(file, p + "attention.head_count",
                    absl::StrFormat("(%u) does not divide embedding_length %u",
                                    h.n_heads, h.dim));
  }
  if (h.n_heads % h.n_kv_heads != 0) {
    return KeyError(file, p + "attention.head_count_kv",
                    absl::StrFormat("(%u) does not divide head_count %u",
                                    h.n_kv_heads, h.n_heads));
  }
  if (key_length != 0) {
    LNPU_ASSIGN_OR_RETURN(uint32_t head, Dimension(file, p + "attention.key_length", key_length));
    h.head_dim = head;
  } else {
    h.head_dim = h.dim / h.n_heads;
  }
  LNPU_ASSIGN_OR_RETURN(
      const uint32_t rope_dim,
      Dimension(file, p + "rope.dimension_count",
                OrDefault<uint64_t>(file.GetUint(p + "rope.dimension_count"), h.head_dim)));
  if (rope_dim % 2 != 0 || rope_dim > h.head_dim) {
    return KeyError(
        file, p + "rope.dimension_count",
        absl::StrFormat("is %u, must be even and <= head_dim %u", rope_dim, h.head_dim));
  }
  h.rope_dim = rope_dim;

  LNPU_ASSIGN_OR_RETURN(float theta, PositiveFloat(file, p + "rope.freq_base", 10000.0f));
  h.rope_theta = theta;

  LNPU_ASSIGN_OR_RETURN(std::string scaling,
                        OrDefault<std::string>(file.GetString(p + "rope.scaling.type"), "none"));
  LNPU_ASSIGN_OR_RETURN(float factor, OrDefault(file.GetFloat(p + "rope.scaling.factor"), 0.0f));
  if (scaling == "none" && factor == 0.0f) {
    // Older converters wrote the linear factor under its own key.
    LNPU_ASSIGN_OR_RETURN(factor, OrDefault(file.GetFloat(p + "rope.scale_linear"), 0.0f));
    if (factor != 0.0f) scaling = "linear";
  }
  if (scaling == "linear") {
    if (!std::isfinite(factor) || factor <= 0) {
      return KeyError(file, p + "rope.scaling.factor",
                      absl::StrFormat("is %g, linear RoPE scaling needs a "
                                      "factor > 0",
                                      factor));
    }
    h.rope_freq_scale = 1.0f / factor;
  } else if (scaling == "llama3") {
    LNPU_ASSIGN_OR_RETURN(std::vector<float> factors,
                          Llama3FreqFactors(file, p, h.rope_theta, h.rope_dim));
    h.rope_freq_factors = std::move(factors);
  } else if (scaling != "none") {
    return KeyError(file, p + "rope.scaling.type",
                    absl::StrCat("is \"", scaling,
                                 "\"; supported: \"none\", \"linear\", "
                                 "\"llama3\""));
  }

  LNPU_ASSIGN_OR_RETURN(float attn_factor,
                        PositiveFloat(file, p + "rope.scaling.attn_factor", 1.0f));
  h.rope_attn_factor = attn_factor;
  LNPU_ASSIGN_OR_RETURN(
      uint64_t original_context,
      OrDefault<uint64_t>(file.GetUint(p + "rope.scaling.original_context_length"),
                          h.context_length));
  LNPU_ASSIGN_OR_RETURN(
      uint32_t original,
      Dimension(file, p + "rope.scaling.original_context_length", original_context));
  h.rope_original_context = original;
  if (h.rope_attn_factor != 1.0f && h.rope_dim != h.head_dim) {
    // The factor is folded into the attention scale, which is exact only
    // when RoPE rotates whole heads.
    return KeyError(file, p + "rope.scaling.attn_factor",
                    absl::StrFormat("is %g with partial RoPE (%u of %u dimensions rotated); "
                                    "an attention factor needs full RoPE in this compiler",
                                    h.rope_attn_factor, h.rope_dim, h.head_dim));
  }

  const std::string eps_key = p + "attention.layer_norm_rms_epsilon";
  absl::StatusOr<float> eps = file.GetFloat(eps_key);
  if (absl::IsNotFound(eps.status())) {
    return KeyError(file, eps_key, "is missing; it is required");
  }
  LNPU_RETURN_IF_ERROR(eps.status());
  if (!std::isfinite(*eps) || *eps <= 0) {
    return KeyError(file, eps_key, absl::StrFormat("is %g, must be > 0", *eps));
  }
  h.norm_eps = *eps;
  if (*arch == "gemma2" || *arch == "gemma3") {
    LNPU_ASSIGN_OR_RETURN(h.gemma, ReadGemmaFeatures(file, h));
  }
  return h;
}

absl::StatusOr<Vocabulary> ReadVocabulary(const gguf::GgufFile& file) {
  Vocabulary t;
  absl::StatusOr<std::string> model = file.GetString("tokenizer.ggml.model");
  if (absl::IsNotFound(model.status())) {
    return KeyError(file, "tokenizer.ggml.model",
                    "is missing; the artifact needs the tokenizer");
  }
  LNPU_RETURN_IF_ERROR(model.status());
  if (*model == "llama") {
    t.type = TokenizerType::kSentencePiece;
  } else if (*model == "gpt2" || *model == "gemma4") {
    // Gemma 4's BPE runs on characters; like llama.cpp, it is byte-level
    // BPE with the pre-tokenizer "gemma4" (set below).
    t.type = TokenizerType::kByteLevelBpe;
  } else {
    return KeyError(
        file, "tokenizer.ggml.model",
        absl::StrCat("is \"", *model,
                     "\"; supported: \"llama\", \"gpt2\", \"gemma4\""));
  }
  const bool spm = t.type == TokenizerType::kSentencePiece;

  LNPU_ASSIGN_OR_RETURN(t.tokens, file.GetStringArray("tokenizer.ggml.tokens"));
  if (t.tokens.empty() || t.tokens.size() > artifact::kMaxModelDimension) {
    return KeyError(file, "tokenizer.ggml.tokens",
                    absl::StrFormat("has %u tokens, must have 1 to %u", t.tokens.size(),
                                    artifact::kMaxModelDimension));
  }
  const size_t n = t.tokens.size();

  LNPU_ASSIGN_OR_RETURN(t.scores, OrDefault(file.GetFloatArray("tokenizer.ggml.scores"), {}));
  LNPU_ASSIGN_OR_RETURN(t.token_types,
                        OrDefault(file.GetInt32Array("tokenizer.ggml.token_type"), {}));
  for (const auto& [key, size] :
       {std::pair<const char*, size_t>{"tokenizer.ggml.scores", t.scores.size()},
        {"tokenizer.ggml.token_type", t.token_types.size()}}) {
    if (size != 0 && size != n) {
      return KeyError(file, key,
                      absl::StrFormat("has %u entries for %u tokens", size, n));
    }
  }
  LNPU_ASSIGN_OR_RETURN(t.merges, OrDefault(file.GetStringArray("tokenizer.ggml.merges"), {}));
  if (!spm && t.merges.empty()) {
    return KeyError(file, "tokenizer.ggml.merges",
                    "is missing or empty; the gpt2 tokenizer needs merges");
  }
  LNPU_ASSIGN_OR_RETURN(std::string pre,
                        OrDefault<std::string>(file.GetString("tokenizer.ggml.pre"), ""));
  t.pre = *model == "gemma4" ? "gemma4" : pre;

  // llama.cpp's defaults for SentencePiece vocabularies.
  const struct {
    const char* key;
    int32_t fallback;
    int32_t* field;
  } ids[] = {{"tokenizer.ggml.bos_token_id", spm ? 1 : -1, &t.bos_id},
             {"tokenizer.ggml.eos_token_id", spm ? 2 : -1, &t.eos_id},
             {"tokenizer.ggml.unknown_token_id", spm ? 0 : -1, &t.unk_id},
             {"tokenizer.ggml.padding_token_id", -1, &t.pad_id}};
  for (const auto& id : ids) {
    const int32_t fallback =
        id.fallback >= 0 && static_cast<size_t>(id.fallback) < n ? id.fallback
                                                                 : -1;
    LNPU_ASSIGN_OR_RETURN(int32_t value, TokenId(file, id.key, fallback, n));
    *id.field = value;
  }
  // llama.cpp adds BOS by default for SentencePiece and for the byte-level
  // BPE pre-tokenizers it knows to want one (Llama 3, Tekken).
  const bool bos_by_default =
      t.bos_id >= 0 &&
      (spm || t.pre == "llama-bpe" || t.pre == "llama3" ||
       t.pre == "llama-v3" || t.pre == "tekken");
  const struct {
    const char* key;
    bool fallback;
    bool* field;
  } flags[] = {{"tokenizer.ggml.add_bos_token", bos_by_default, &t.add_bos},
               {"tokenizer.ggml.add_eos_token", false, &t.add_eos},
               {"tokenizer.ggml.add_space_prefix", spm, &t.add_space_prefix}};
  for (const auto& flag : flags) {
    LNPU_ASSIGN_OR_RETURN(bool value, OrDefault(file.GetBool(flag.key), flag.fallback));
    *flag.field = value;
  }
  if (t.add_bos && t.bos_id < 0) {
    return KeyError(file, "tokenizer.ggml.add_bos_token",
                    "is true but there is no tokenizer.ggml.bos_token_id");
  }
  if (t.add_eos && t.eos_id < 0) {
    return KeyError(file, "tokenizer.ggml.add_eos_token",
                    "is true but there is no tokenizer.ggml.eos_token_id");
  }
  return t;
}

absl::StatusOr<std::string> ReadChatTemplate(const gguf::GgufFile& file) {
  return OrDefault<std::string>(file.GetString("tokenizer.chat_template"), "");
}

flatbuffers::Offset<fb::HParams> SerializeHParams(
    const LlamaHParams& h, flatbuffers::FlatBufferBuilder& builder) {
  return fb::CreateHParamsDirect(
      builder, h.architecture.c_str(), h.name.c_str(), h.vocab_size, h.dim,
      h.n_layers, h.n_heads, h.n_kv_heads, h.head_dim, h.ffn_dim, h.rope_dim,
      h.rope_theta, h.rope_freq_scale,
      h.rope_mode == LNPU_ROPE_MODE_NEOX ? fb::RopeMode::Neox
                                         : fb::RopeMode::Norm,
      h.norm_eps, h.context_length);
}

}  // namespace lnpu::compiler
