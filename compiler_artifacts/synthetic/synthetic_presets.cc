#include "compiler_artifacts/synthetic/synthetic_presets.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
  return presets;
}

}  // namespace

const std::vector<SyntheticPreset>& SyntheticPresets() {
  static const std::vector<SyntheticPreset>* const presets =
      new std::vector<SyntheticPreset>(MakePresets());
  return *presets;
}

absl::StatusOr<RandomLlamaSpec> SyntheticPresetSpec(std::string_view name,
                                                    const std::string& models_dir,
                                                    gguf::GgmlType weight_type, uint64_t seed) {
  std::vector<std::string> names;
  for (const SyntheticPreset& preset : SyntheticPresets()) {
    names.emplace_back(preset.name);
    if (preset.name != name) continue;
    RandomLlamaSpec spec = preset.spec;
    if (!preset.vocabulary_file.empty()) {
      spec.vocabulary_gguf = absl::StrCat(models_dir, "/vocab/", ToAbsl(preset.vocabulary_file));
    }
    spec.weight_type = weight_type;
    spec.seed = seed;
    return spec;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown synthetic preset '", ToAbsl(name),
                                                 "'; known presets: ",
                                                 absl::StrJoin(names, ", ")));
}

}  // namespace lnpu::synthetic
