// Synthetic models (compiler_artifacts/synthetic/synthetic_presets.h: random
// weights in the shapes of real ones) compiled into a temporary artifact
// for benchmarking: speed depends on shapes and weight type, not on the
// weight values.
#ifndef TOOLS_NPU_BENCH_SYNTHETIC_MODEL_H_
#define TOOLS_NPU_BENCH_SYNTHETIC_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/common/temp_directory.h"

namespace lnpu::bench {

// A directory created under $TMPDIR (else /tmp) holding a compiled
// artifact; removed with its content on destruction. Not thread-safe.
class TemporaryArtifact {
 public:
  const std::string& path() const { return artifact_path_; }

 private:
  friend absl::StatusOr<std::unique_ptr<TemporaryArtifact>> CompileSyntheticModel(
      const std::string& preset, const std::string& weights, const std::string& models_dir,
      const std::vector<uint32_t>& decode_batches);
  explicit TemporaryArtifact(std::unique_ptr<tools::TempDirectory> directory);

  const std::unique_ptr<tools::TempDirectory> directory_;
  const std::string gguf_path_;
  const std::string artifact_path_;
};

// Writes the synthetic model `preset` of synthetic::SyntheticPresets() (seed 1,
// its vocabulary read from `models_dir`/vocab) and compiles it with weights
// `weights` ("q8", "q4" or "f16"), batched decode graphs of `decode_batches`
// lanes (CompileOptions::decode_batches; 1 and repeats are ignored) and the
// compiler's defaults for everything else (cache, chunks, KV type).
// InvalidArgument for an unknown preset or weight type (the message lists
// the valid ones); I/O and compiler errors otherwise.
absl::StatusOr<std::unique_ptr<TemporaryArtifact>> CompileSyntheticModel(
    const std::string& preset, const std::string& weights, const std::string& models_dir,
    const std::vector<uint32_t>& decode_batches);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_SYNTHETIC_MODEL_H_
