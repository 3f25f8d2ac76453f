// What the compiler reads from a GGUF model of the llama family besides the
// weights: the hyper-parameters (<arch>.* for the architectures "llama" and
// "qwen2") and the tokenizer (tokenizer.ggml.*).
#ifndef COMPILER_ARTIFACTS_COMPILER_LLAMA_SOURCE_H_
#define COMPILER_ARTIFACTS_COMPILER_LLAMA_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/vocabulary.h"
#include "compiler_artifacts/format/model_generated.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "flatbuffers/flatbuffers.h"

namespace lnpu::compiler {

// The artifact schema's generated types (model.fbs).
namespace fb = ::lnpu::artifact::fb;

// The architectures the compiler lowers.
inline constexpr const char* kSupportedArchitectures =
    "\"llama\", \"qwen2\", \"qwen3\", \"phi3\", \"smollm3\", \"gemma2\", \"gemma3\"";

// The Gemma 2 / Gemma 3 differences from the llama block (llama.cpp's
// gemma2 and gemma3 graphs). The GGUF converter already stores the norm
// weights as (1 + w), so the norms are plain RMS norms.
struct GemmaFeatures {
  // The embedding rows are scaled by sqrt(dim); blk.N.post_attention_norm
  // and blk.N.post_ffw_norm normalize the attention and feed-forward
  // outputs before they are added to the residual stream; the feed-forward
  // is GELU-gated (tanh approximation).
  bool enabled = false;
  // Factor on Q before the scores: 1 / sqrt(head_dim), or
  // 1 / sqrt(dim / n_heads) for the 27B models (46 layers for gemma2, 62
  // for gemma3), as llama.cpp derives query_pre_attn_scalar.
  float query_scale = 0.0f;
  // <arch>.attn_logit_softcapping and final_logit_softcapping (gemma2:
  // 50 and 30 when absent); 0 = no cap (gemma3).
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // Sliding-window attention: layer l attends only to the last
  // `sliding_window` positions when swa_pattern > 0 and
  // l % swa_pattern < swa_pattern - 1 (gemma2: 2, every even layer;
  // gemma3: 6, five local layers to one global). 0 = none
  // (<arch>.attention.sliding_window absent).
  uint32_t sliding_window = 0;
  uint32_t swa_pattern = 0;
  // gemma3: RoPE base of the local (sliding-window) layers, which also
  // rotate without frequency scaling; the global layers use rope_theta
  // and rope_freq_scale.
  float rope_theta_local = 0.0f;

  bool IsLocalLayer(uint32_t layer) const {
    return sliding_window > 0 && swa_pattern > 0 && layer % swa_pattern < swa_pattern - 1;
  }
};

struct LlamaHParams {
  std::string architecture;  // general.architecture, one of kSupportedArchitectures
  std::string name;          // general.name, may be empty
  uint32_t vocab_size = 0;
  uint32_t dim = 0;
  uint32_t n_layers = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t ffn_dim = 0;
  uint32_t rope_dim = 0;
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f;
  uint32_t rope_mode = 0;  // LNPU_ROPE_MODE_NORM (llama) or _NEOX (qwen2, qwen3)
  // qwen3, gemma3: Q and K are RMS-normalized per head
  // (blk.N.attn_{q,k}_norm, head_dim weights) before RoPE.
  bool qk_norm = false;
  // phi3: one attn_qkv matrix (Q, K then V rows) and one ffn_up matrix
  // (gate then up rows) instead of separate projections.
  bool fused_projections = false;
  // smollm3 ("NoPE" layers): layer l skips RoPE when (l + 1) is a multiple
  // of this step (4, as llama.cpp fixes it; the file has no key). 0 = every
  // layer rotates.
  uint32_t no_rope_layer_step = 0;
  // phi3 LongRoPE: <arch>.rope.scaling.attn_factor (1 when absent) scales
  // the rotated dimensions of Q and K; the trained context length that
  // selects the short or long frequency factors.
  float rope_attn_factor = 1.0f;
  uint32_t rope_original_context = 0;
  // Llama 3 frequency scaling (rope.scaling.type "llama3"): rope_dim / 2
  // divisors of the RoPE frequencies, computed as llama.cpp's converter
  // does. Empty without it; a rope_freqs.weight tensor takes precedence.
  std::vector<float> rope_freq_factors;
  float norm_eps = 0.0f;
  uint32_t context_length = 0;
  GemmaFeatures gemma;

  uint32_t q_dim() const { return n_heads * head_dim; }
  uint32_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads and checks general.architecture (kSupportedArchitectures; anything
// else is InvalidArgument naming it) and the <arch>.* keys (defaults:
// head_count_kv = head_count, rope.dimension_count = head_dim,
// rope.freq_base = 10000; rope.scaling.type "linear" -> freq_scale =
// 1 / factor, "llama3" -> rope_freq_factors from factor (8),
// low_freq_factor (1), high_freq_factor (4) and original_context_length
// (8192)). qwen2 uses NEOX RoPE. gemma2 and gemma3 fill `gemma`. `vocab_size` is the tokenizer's token
// count (<arch>.vocab_size, when present, must agree). InvalidArgument
// naming the key for missing, out-of-range or unsupported values.
absl::StatusOr<LlamaHParams> ReadLlamaHParams(const gguf::GgufFile& file,
                                              uint32_t vocab_size);

// Reads tokenizer.ggml.* (model "llama" or "gpt2"). Defaults follow
// llama.cpp: add_bos true and add_space_prefix true for "llama", false for
// "gpt2"; add_eos false. InvalidArgument naming the key on inconsistencies
// (array lengths, special ids out of range).
absl::StatusOr<Vocabulary> ReadVocabulary(const gguf::GgufFile& file);
// tokenizer.chat_template ("" when absent).
absl::StatusOr<std::string> ReadChatTemplate(const gguf::GgufFile& file);

flatbuffers::Offset<fb::HParams> SerializeHParams(
    const LlamaHParams& hparams, flatbuffers::FlatBufferBuilder& builder);

}  // namespace lnpu::compiler

#endif  // COMPILER_ARTIFACTS_COMPILER_LLAMA_SOURCE_H_
