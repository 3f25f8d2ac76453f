#include "tools/npu-bench/synthetic_model.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/gguf/random_llama.h"

namespace lnpu::bench {
namespace {

struct Preset {
  const char* name;
  gguf::RandomLlamaSpec spec;
};

// The shapes of the published models (their config.json).
std::vector<Preset> Presets() {
  auto spec = [](uint32_t vocab, uint32_t dim, uint32_t layers, uint32_t heads,
                 uint32_t kv_heads, uint32_t ffn, float rope_theta, bool tied) {
    gguf::RandomLlamaSpec s;
    s.vocab_size = vocab;
    s.dim = dim;
    s.n_layers = layers;
    s.n_heads = heads;
    s.n_kv_heads = kv_heads;
    s.ffn_dim = ffn;
    s.rope_theta = rope_theta;
    s.tied_embeddings = tied;
    s.weight_type = gguf::GgmlType::kF16;
    return s;
  };
  return {
      {"qwen2.5-0.5b", spec(151936, 896, 24, 14, 2, 4864, 1e6f, true)},
      {"tinyllama-1.1b", spec(32000, 2048, 22, 32, 4, 5632, 1e4f, false)},
      {"llama-3.2-1b", spec(128256, 2048, 16, 32, 8, 8192, 5e5f, true)},
  };
}

}  // namespace

TemporaryArtifact::TemporaryArtifact(std::string directory)
    : directory_(std::move(directory)),
      gguf_path_(directory_ + "/model.gguf"),
      artifact_path_(directory_ + "/model.lnpu") {}

TemporaryArtifact::~TemporaryArtifact() {
  unlink(gguf_path_.c_str());
  unlink(artifact_path_.c_str());
  rmdir(directory_.c_str());
}

absl::StatusOr<std::unique_ptr<TemporaryArtifact>> CompileSyntheticModel(
    const std::string& preset, const std::string& weights) {
  using WeightType = compiler::CompileOptions::WeightType;
  compiler::CompileOptions options;
  if (weights == "q8") {
    options.weights = WeightType::kQ8;
  } else if (weights == "q4") {
    options.weights = WeightType::kQ4;
  } else if (weights == "f16") {
    options.weights = WeightType::kF16;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic weights '", weights, "': give q8, q4 or f16"));
  }
  const std::vector<Preset> presets = Presets();
  const Preset* found = nullptr;
  std::string names;
  for (const Preset& p : presets) {
    if (preset == p.name) found = &p;
    absl::StrAppend(&names, names.empty() ? "" : ", ", p.name);
  }
  if (found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown synthetic preset '", preset, "': give one of ", names));
  }

  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmpdir && *tmpdir ? tmpdir : "/tmp", "/npu-bench.XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot create a temporary directory ", pattern,
                                               ": ", std::strerror(errno),
                                               "; set TMPDIR to a writable directory"));
  }
  auto artifact = std::unique_ptr<TemporaryArtifact>(new TemporaryArtifact(pattern));
  if (absl::Status s = gguf::WriteRandomLlamaGguf(found->spec, artifact->gguf_path_); !s.ok()) {
    return s;
  }
  if (absl::Status s = compiler::CompileGguf(artifact->gguf_path_, artifact->path(), options);
      !s.ok()) {
    return s;
  }
  unlink(artifact->gguf_path_.c_str());  // the source is no longer needed
  return artifact;
}

}  // namespace lnpu::bench
