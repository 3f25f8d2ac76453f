#include "compiler_artifacts/synthetic/synthetic_presets.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_io.h"
#include "base/status_macros.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::synthetic {
namespace {

using gguf::ToAbsl;

RandomLlamaSpec Shape(std::string architecture, uint32_t vocab_size, uint32_t dim,
                      uint32_t n_layers, uint32_t n_heads, uint32_t n_kv_heads, uint32_t ffn_dim,
                      float rope_theta, float norm_eps, uint32_t context_length, bool tied) {
  RandomLlamaSpec spec;
  spec.architecture = std::move(architecture);
  spec.vocab_size = vocab_size;
  spec.dim = dim;
  spec.n_layers = n_layers;
  spec.n_heads = n_heads;
  spec.n_kv_heads = n_kv_heads;
  spec.ffn_dim = ffn_dim;
  spec.rope_theta = rope_theta;
  spec.norm_eps = norm_eps;
  spec.context_length = context_length;
  spec.tied_embeddings = tied;
  return spec;
}

std::vector<SyntheticPreset> MakePresets() {
  std::vector<SyntheticPreset> presets;
  // Qwen2.5-0.5B (config.json of Qwen/Qwen2.5-0.5B): QKV biases, tied
  // embeddings, NEOX RoPE with base 1e6; its real qwen2 vocabulary.
  presets.push_back({"qwen2.5-0.5b",
                     "qwen2, dim 896, 24 layers, 14 heads (2 kv), ffn 4864, vocab 151936 "
                     "(real qwen2 BPE), tied",
                     "ggml-vocab-qwen2.gguf",
                     Shape("qwen2", 0, 896, 24, 14, 2, 4864, 1000000.0f, 1e-6f, 32768, true)});
  // Qwen3-0.6B (config.json of Qwen/Qwen3-0.6B): per-head Q/K norms, heads
  // of 128 on a width of 1024 (q_dim 2048), tied embeddings, RoPE base 1e6;
  // the qwen2 BPE vocabulary (Qwen3 keeps it).
  RandomLlamaSpec qwen3 =
      Shape("qwen3", 0, 1024, 28, 16, 8, 3072, 1000000.0f, 1e-6f, 40960, true);
  qwen3.head_dim = 128;
  presets.push_back({"qwen3-0.6b",
                     "qwen3, dim 1024, 28 layers, 16 heads of 128 (8 kv), ffn 3072, vocab 151936 "
                     "(real qwen2 BPE), tied, Q/K norms",
                     "ggml-vocab-qwen2.gguf", qwen3});
  // Phi-3.5-mini (microsoft/Phi-3.5-mini-instruct): fused projections,
  // LongRoPE trained on 4096 with the attention factor
  // sqrt(1 + ln(32) / ln(4096)); its 32064-token SentencePiece vocabulary
  // is not bundled, so a synthetic one of that size stands in.
  RandomLlamaSpec phi35 =
      Shape("phi3", 32064, 3072, 32, 32, 32, 8192, 10000.0f, 1e-5f, 131072, false);
  phi35.rope_attn_factor = 1.1902381f;
  phi35.rope_original_context = 4096;
  presets.push_back({"phi-3.5-mini",
                     "phi3, dim 3072, 32 layers, 32 heads (32 kv), ffn 8192, vocab 32064 "
                     "(synthetic SentencePiece), untied, fused QKV and gate/up, LongRoPE",
                     "", phi35});
  // SmolLM2-135M (HuggingFaceTB/SmolLM2-135M): llama, tied, RoPE base 1e5;
  // its byte-level BPE vocabulary is not bundled: a synthetic one of the
  // real size 49152.
  presets.push_back({"smollm2-135m",
                     "llama, dim 576, 30 layers, 9 heads (3 kv), ffn 1536, vocab 49152 "
                     "(synthetic SentencePiece), tied",
                     "", Shape("llama", 49152, 576, 30, 9, 3, 1536, 100000.0f, 1e-5f, 8192, true)});
  // SmolLM3-3B (HuggingFaceTB/SmolLM3-3B): llama layout with every fourth
  // layer without RoPE, tied, RoPE base 5e6; its 128256-token byte-level
  // BPE vocabulary is not bundled: a synthetic one of that size.
  presets.push_back({"smollm3-3b",
                     "smollm3, dim 2048, 36 layers, 16 heads (4 kv), ffn 11008, vocab 128256 "
                     "(synthetic SentencePiece), tied, no RoPE in every fourth layer",
                     "", Shape("smollm3", 128256, 2048, 36, 16, 4, 11008, 5000000.0f, 1e-6f,
                               65536, true)});
  // TinyLlama-1.1B (TinyLlama/TinyLlama-1.1B-Chat-v1.0): the Llama 2
  // SentencePiece vocabulary.
  presets.push_back({"tinyllama-1.1b",
                     "llama, dim 2048, 22 layers, 32 heads (4 kv), ffn 5632, vocab 32000 "
                     "(real llama SentencePiece), untied",
                     "ggml-vocab-llama-spm.gguf",
                     Shape("llama", 0, 2048, 22, 32, 4, 5632, 10000.0f, 1e-5f, 2048, false)});
  // Llama-3.2-1B (meta-llama/Llama-3.2-1B): Llama 3 RoPE scaling factor 32,
  // tied embeddings. Its llama-bpe vocabulary is not available offline, so
  // the vocabulary is the synthetic SentencePiece-style one at the real
  // size 128256: every tensor has the real shape, tokenization differs.
  RandomLlamaSpec llama32 =
      Shape("llama", 128256, 2048, 16, 32, 8, 8192, 500000.0f, 1e-5f, 131072, true);
  llama32.llama3_rope_factor = 32.0f;
  presets.push_back({"llama-3.2-1b",
                     "llama, dim 2048, 16 layers, 32 heads (8 kv), ffn 8192, vocab 128256 "
                     "(synthetic SentencePiece: llama-bpe is not bundled), tied, llama3 RoPE "
                     "scaling",
                     "", llama32});
  // Gemma-2-2B (google/gemma-2-2b): heads of 256 on a width of 2304
  // (q_dim 2048), GeGLU, post-norms, attention and logit soft caps 50 / 30,
  // a window of 4096 on every other layer, tied; its 256000-token
  // SentencePiece vocabulary is not bundled: a synthetic one of that size.
  RandomLlamaSpec gemma2 =
      Shape("gemma2", 256000, 2304, 26, 8, 4, 9216, 10000.0f, 1e-6f, 8192, true);
  gemma2.head_dim = 256;
  gemma2.sliding_window = 4096;
  gemma2.attn_logit_softcap = 50.0f;
  gemma2.final_logit_softcap = 30.0f;
  presets.push_back({"gemma-2-2b",
                     "gemma2, dim 2304, 26 layers, 8 heads of 256 (4 kv), ffn 9216, vocab 256000 "
                     "(synthetic SentencePiece), tied, soft caps, window 4096 on every other layer",
                     "", gemma2});
  // Gemma-3-1B (google/gemma-3-1b-it): heads of 256 on a width of 1152,
  // Q/K norms, five local layers (window 512, RoPE base 1e4) to one global
  // (base 1e6), tied; its 262144-token SentencePiece vocabulary is not
  // bundled: a synthetic one of that size.
  RandomLlamaSpec gemma3 =
      Shape("gemma3", 262144, 1152, 26, 4, 1, 6912, 1000000.0f, 1e-6f, 32768, true);
  gemma3.head_dim = 256;
  gemma3.sliding_window = 512;
  presets.push_back({"gemma-3-1b",
                     "gemma3, dim 1152, 26 layers, 4 heads of 256 (1 kv), ffn 6912, vocab 262144 "
                     "(synthetic SentencePiece), tied, Q/K norms, window 512 on 5 of 6 layers",
                     "", gemma3});
  // Gemma-3-270M (google/gemma-3-270m; its GGUF: embedding_length 640,
  // block_count 18, head_count 4, head_count_kv 1, key_length 256,
  // feed_forward_length 2048, sliding_window 512, rope.freq_base 1e6):
  // the layer pattern and local RoPE base of gemma-3-1b, tied; the
  // 262144-token vocabulary is synthetic, as for gemma-3-1b.
  RandomLlamaSpec gemma3_270m =
      Shape("gemma3", 262144, 640, 18, 4, 1, 2048, 1000000.0f, 1e-6f, 32768, true);
  gemma3_270m.head_dim = 256;
  gemma3_270m.sliding_window = 512;
  presets.push_back({"gemma-3-270m",
                     "gemma3, dim 640, 18 layers, 4 heads of 256 (1 kv), ffn 2048, vocab 262144 "
                     "(synthetic SentencePiece), tied, Q/K norms, window 512 on 5 of 6 layers",
                     "", gemma3_270m});
  return presets;
}

}  // namespace

const std::vector<SyntheticPreset>& SyntheticPresets() {
  static const std::vector<SyntheticPreset>* const presets =
      new std::vector<SyntheticPreset>(MakePresets());
  return *presets;
}

std::string SyntheticPresetNames() {
  return absl::StrJoin(SyntheticPresets(), ", ",
                       [](std::string* out, const SyntheticPreset& preset) {
                         absl::StrAppend(out, ToAbsl(preset.name));
                       });
}

absl::StatusOr<RandomLlamaSpec> SyntheticPresetSpec(std::string_view name,
                                                    const std::string& models_dir,
                                                    gguf::GgmlType weight_type, uint64_t seed) {
  for (const SyntheticPreset& preset : SyntheticPresets()) {
    if (preset.name != name) continue;
    RandomLlamaSpec spec = preset.spec;
    if (!preset.vocabulary_file.empty()) {
      spec.vocabulary_gguf = absl::StrCat(models_dir, "/vocab/", ToAbsl(preset.vocabulary_file));
      // Checked here, where the models directory is known, so that the
      // error can say how to point at it.
      const absl::StatusOr<int> fd = OpenRegularFile(spec.vocabulary_gguf, "vocabulary");
      LNPU_RETURN_IF_ERROR_WITH_PREFIX(
          fd.status(), "preset '", ToAbsl(name), "' needs its vocabulary from ", models_dir,
          "/vocab (set --models-dir or LNPU_MODELS_DIR to the repository's models/ folder): ");
      ::close(*fd);
    }
    spec.weight_type = weight_type;
    spec.seed = seed;
    return spec;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown synthetic preset '", ToAbsl(name),
                                                 "'; known presets: ",
                                                 SyntheticPresetNames()));
}

}  // namespace lnpu::synthetic
