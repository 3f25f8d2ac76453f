#include "tools/npu-bench/synthetic_model.h"

#include <unistd.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "compiler_artifacts/synthetic/synthetic_presets.h"

namespace lnpu::bench {

TemporaryArtifact::TemporaryArtifact(std::unique_ptr<tools::TempDirectory> directory)
    : directory_(std::move(directory)),
      gguf_path_(directory_->path() + "/model.gguf"),
      artifact_path_(directory_->path() + "/model.lnpu") {}

absl::StatusOr<std::unique_ptr<TemporaryArtifact>> CompileSyntheticModel(
    const std::string& preset, const std::string& weights, const std::string& models_dir,
    const std::vector<uint32_t>& decode_batches) {
  using WeightType = compiler::CompileOptions::WeightType;
  compiler::CompileOptions options;
  options.decode_batches = decode_batches;
  // The GGUF is generated in the artifact's weight type, so compiling copies
  // the weights instead of converting them again.
  gguf::GgmlType source_type;
  if (weights == "q8") {
    options.weights = WeightType::kQ8;
    source_type = gguf::GgmlType::kQ8_0;
  } else if (weights == "q4") {
    options.weights = WeightType::kQ4;
    source_type = gguf::GgmlType::kQ4_0;
  } else if (weights == "f16") {
    options.weights = WeightType::kF16;
    source_type = gguf::GgmlType::kF16;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic weights '", weights, "': give q8, q4 or f16"));
  }
  LNPU_ASSIGN_OR_RETURN(
      const synthetic::RandomLlamaSpec spec,
      synthetic::SyntheticPresetSpec(preset, models_dir, source_type, /*seed=*/1));

  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<tools::TempDirectory> directory,
                        tools::TempDirectory::Create("npu-bench"));
  auto artifact =
      std::unique_ptr<TemporaryArtifact>(new TemporaryArtifact(std::move(directory)));
  LNPU_RETURN_IF_ERROR(synthetic::WriteRandomLlamaGguf(spec, artifact->gguf_path_));
  LNPU_RETURN_IF_ERROR(compiler::CompileGguf(artifact->gguf_path_, artifact->path(), options));
  unlink(artifact->gguf_path_.c_str());  // the source is no longer needed
  return artifact;
}

}  // namespace lnpu::bench
