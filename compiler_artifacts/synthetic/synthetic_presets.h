#ifndef LNPU_COMPILER_ARTIFACTS_SYNTHETIC_SYNTHETIC_PRESETS_H_
#define LNPU_COMPILER_ARTIFACTS_SYNTHETIC_SYNTHETIC_PRESETS_H_

// Synthetic models: random weights in the exact shapes of real models, with
// a real vocabulary where one is available, so benchmarks and tests run on
// real shapes without downloading weights (docs/models.md).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_artifacts/gguf/ggml_type.h"
#include "compiler_artifacts/synthetic/random_llama.h"

namespace lnpu::synthetic {

struct SyntheticPreset {
  std::string_view name;         // e.g. "qwen2.5-0.5b"
  std::string_view description;  // shape and vocabulary in one line
  // The vocabulary GGUF under <models_dir>/vocab/, empty for the synthetic
  // SentencePiece-style vocabulary of MakeLlamaVocabulary.
  std::string_view vocabulary_file;
  RandomLlamaSpec spec;  // vocabulary_gguf, weight_type and seed unset
};

// The presets of docs/models.md (qwen2.5-0.5b ... gemma-3-270m). Immutable,
// thread-safe.
const std::vector<SyntheticPreset>& SyntheticPresets();

// The presets' names in the order of SyntheticPresets(), comma-separated
// ("qwen2.5-0.5b, qwen3-0.6b, ..."), for usage texts and errors.
std::string SyntheticPresetNames();

// The RandomLlamaSpec of preset `name` with `weight_type` and `seed`, its
// vocabulary located under `models_dir` (the repository's models/).
// InvalidArgument naming the known presets for an unknown name.
absl::StatusOr<RandomLlamaSpec> SyntheticPresetSpec(std::string_view name,
                                                    const std::string& models_dir,
                                                    gguf::GgmlType weight_type, uint64_t seed);

}  // namespace lnpu::synthetic

#endif  // LNPU_COMPILER_ARTIFACTS_SYNTHETIC_SYNTHETIC_PRESETS_H_
