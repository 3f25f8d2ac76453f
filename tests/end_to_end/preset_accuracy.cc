// preset_accuracy: how far the static pipeline's logits are from the
// independent reference (tests/reference) at the shapes of the synthetic
// presets (docs/models.md "Accuracy per preset"). A measurement program,
// not a test: the models are too large for every CI run.
//
// usage: preset_accuracy [--layers L] [--vocab V] [--tokens N] [PRESET...]
//
// Each preset (default: all) becomes a random f32 model of its shape with
// its layers cut to L (default 2) and its vocabulary to V tokens (default
// 4096: the embedding and output rows, so that the reference stays fast;
// every other tensor keeps the preset's shape). It is compiled with f32
// and with q8 weights (F16 KV cache, prefill chunks of 16), N (default 64)
// seeded random tokens are fed one at a time to the compiled model and to
// the reference on the artifact's own weights (teacher forcing), and the
// program prints per preset and weight type the top-1 agreement and the
// largest |logit - reference logit|, also divided by the standard
// deviation of the reference's logits at that position.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/synthetic_presets.h"
#include "kernel_iface/driver/device.h"
#include "runtime/model.h"
#include "runtime/sequence.h"
#include "tests/end_to_end/equivalence_harness.h"
#include "tests/reference/reference_llama.h"
#include "tests/test_device.h"

namespace lnpu::end_to_end {
namespace {

struct Settings {
  uint32_t layers = 2;
  uint32_t vocab = 4096;
  int tokens = 64;
  std::vector<std::string> presets;
};

struct Accuracy {
  int agreeing = 0;
  int positions = 0;
  double max_error = 0;           // largest |logit - reference|
  double max_relative_error = 0;  // the same over the reference logits' std
};

absl::StatusOr<Accuracy> Measure(const std::string& gguf, const std::string& name,
                                 compiler::CompileOptions::WeightType weights, int tokens,
                                 uint32_t vocab) {
  compiler::CompileOptions options;
  options.max_prompt_len = 64;
  options.min_response_len = std::max(64, tokens);
  options.prefill_chunks = {16};
  options.weights = weights;
  options.kv_dtype = compiler::CompileOptions::KvType::kF16;
  LNPU_ASSIGN_OR_RETURN(const std::string artifact, CompileToTempDir(gguf, name, options));
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<reference::ReferenceLlama> reference,
                        LoadReferenceForArtifact(gguf, artifact));
  LNPU_ASSIGN_OR_RETURN(std::shared_ptr<Device> device, Device::Open(lnpu::testing::TestDevice()));
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Model> model,
                        runtime::Model::Load(device, artifact));
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Sequence> sequence, model->CreateSequence());
  Accuracy accuracy;
  for (int32_t token : SeededPrompt(tokens, static_cast<int>(vocab), /*seed=*/3)) {
    LNPU_ASSIGN_OR_RETURN(absl::Span<const float> logits,
                          sequence->Forward(absl::MakeConstSpan(&token, 1)));
    const std::vector<float> expected = reference->Forward(token);
    double mean = 0, square = 0, error = 0;
    for (float e : expected) mean += e;
    mean /= static_cast<double>(expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      square += (expected[i] - mean) * (expected[i] - mean);
      error = std::max(error, std::fabs(double{logits[i]} - expected[i]));
    }
    const double deviation = std::sqrt(square / static_cast<double>(expected.size()));
    accuracy.max_error = std::max(accuracy.max_error, error);
    accuracy.max_relative_error = std::max(accuracy.max_relative_error, error / deviation);
    accuracy.agreeing += std::max_element(logits.begin(), logits.end()) - logits.begin() ==
                         reference::ArgmaxLowestIndex(expected);
    ++accuracy.positions;
  }
  std::remove(artifact.c_str());
  return accuracy;
}

absl::Status Run(const Settings& settings) {
  const char* models_dir = std::getenv("LNPU_MODELS_DIR");
  std::printf(
      "| preset (%u layers, vocab %u) | weights | top-1 | max error | max error / std |\n"
      "| --- | --- | --- | --- | --- |\n",
      settings.layers, settings.vocab);
  for (const synthetic::SyntheticPreset& preset : synthetic::SyntheticPresets()) {
    const std::string name(preset.name);
    if (!settings.presets.empty() && std::find(settings.presets.begin(), settings.presets.end(),
                                               name) == settings.presets.end()) {
      continue;
    }
    LNPU_ASSIGN_OR_RETURN(
        synthetic::RandomLlamaSpec spec,
        synthetic::SyntheticPresetSpec(preset.name, models_dir ? models_dir : "models",
                                       gguf::GgmlType::kF32, /*seed=*/1));
    spec.n_layers = std::min(spec.n_layers, settings.layers);
    spec.vocabulary_gguf.clear();
    spec.vocab_size = settings.vocab;
    LNPU_ASSIGN_OR_RETURN(const std::string gguf, WriteRandomLlamaToTempDir(spec, name));
    for (const auto& [weights, label] :
         {std::pair{compiler::CompileOptions::WeightType::kF32, "f32"},
          std::pair{compiler::CompileOptions::WeightType::kQ8, "q8"}}) {
      LNPU_ASSIGN_OR_RETURN(
          const Accuracy accuracy,
          Measure(gguf, absl::StrCat(name, "_", label), weights, settings.tokens, settings.vocab));
      std::printf("| %s | %s | %d/%d | %.2g | %.2g |\n", name.c_str(), label, accuracy.agreeing,
                  accuracy.positions, accuracy.max_error, accuracy.max_relative_error);
      std::fflush(stdout);
    }
    std::remove(gguf.c_str());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace lnpu::end_to_end

int main(int argc, char** argv) {
  lnpu::end_to_end::Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    uint32_t* number = arg == "--layers"  ? &settings.layers
                       : arg == "--vocab" ? &settings.vocab
                                          : nullptr;
    uint32_t tokens = 0;
    if (arg == "--tokens") number = &tokens;
    if (number != nullptr) {
      if (i + 1 == argc || !absl::SimpleAtoi(argv[++i], number) || *number == 0) {
        std::fprintf(stderr, "preset_accuracy: %s needs a whole number > 0\n", arg.c_str());
        return 2;
      }
      if (arg == "--tokens") settings.tokens = static_cast<int>(tokens);
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr,
                   "usage: preset_accuracy [--layers L] [--vocab V] [--tokens N] [PRESET...]\n");
      return 2;
    } else {
      settings.presets.push_back(arg);
    }
  }
  const absl::Status status = lnpu::end_to_end::Run(settings);
  if (!status.ok()) {
    std::fprintf(stderr, "preset_accuracy: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
