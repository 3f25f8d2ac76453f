#include "tools/npu-eval/quantization_eval.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/interrupt.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "kernel_iface/driver/device.h"
#include "runtime/sequence.h"
#include "tools/common/tool_device.h"
#include "tools/common/temp_directory.h"

namespace lnpu::eval {
namespace {

using WeightType = compiler::CompileOptions::WeightType;
using KvType = compiler::CompileOptions::KvType;

absl::StatusOr<KvType> ParseKvDtype(const std::string& name) {
  if (name == "f16") return KvType::kF16;
  if (name == "q8") return KvType::kQ8;
  if (name == "f32") return KvType::kF32;
  return absl::InvalidArgumentError(absl::StrCat("KV dtype '", name, "': give ",
                                                 absl::StrJoin(kVariantKvDtypes, ", ")));
}

// A model compiled from `gguf_path` with `weights` and `kv`, loaded on
// `device`; the artifact file is removed once loaded (weights are copied or
// stay mapped).
struct LoadedModel {
  std::unique_ptr<runtime::Model> model;
  uint64_t artifact_bytes = 0;
};

absl::StatusOr<LoadedModel> CompileAndLoad(const std::shared_ptr<Device>& device,
                                           const std::string& gguf_path,
                                           const std::string& directory, uint32_t tokens,
                                           WeightType weights, KvType kv) {
  compiler::CompileOptions options;
  options.max_prompt_len = tokens;
  options.min_response_len = 1;
  options.prefill_chunks = {1};
  options.weights = weights;
  options.kv_dtype = kv;
  const std::string path = directory + "/model.lnpu";
  LNPU_RETURN_IF_ERROR(compiler::CompileGguf(gguf_path, path, options));
  LoadedModel loaded;
  std::error_code size_error;
  loaded.artifact_bytes = std::filesystem::file_size(path, size_error);
  absl::StatusOr<std::unique_ptr<runtime::Model>> model = runtime::Model::Load(device, path);
  std::filesystem::remove(path, size_error);
  LNPU_RETURN_IF_ERROR(model.status());
  loaded.model = *std::move(model);
  return loaded;
}

}  // namespace

absl::Status RunTeacherForced(
    runtime::Model& model, absl::Span<const int32_t> tokens,
    const std::function<absl::Status(size_t, absl::Span<const float>)>& visit) {
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Sequence> session, model.CreateSequence());
  for (size_t i = 0; i < tokens.size(); ++i) {
    // SIGINT / SIGTERM inside the program's InterruptScope: stop here, so
    // that the temporary directory is removed on the way out.
    if (InterruptRequested()) return absl::CancelledError("interrupted");
    absl::StatusOr<absl::Span<const float>> logits = session->Forward(tokens.subspan(i, 1));
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(logits.status(), "token ", i, ": ");
    LNPU_RETURN_IF_ERROR(visit(i, *logits));
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> EvaluateWeights(const std::string& gguf_path,
                                           absl::Span<const int32_t> tokens,
                                           const EvalOptions& options) {
  if (tokens.empty()) {
    return absl::InvalidArgumentError("no tokens to evaluate; give a text or a token count");
  }
  std::vector<WeightType> variants;
  for (size_t i = 0; i < options.weights.size(); ++i) {
    LNPU_ASSIGN_OR_RETURN(WeightType type, compiler::ParseWeightType(options.weights[i]));
    if (std::find(options.weights.begin(), options.weights.begin() + i, options.weights[i]) !=
        options.weights.begin() + i) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight type '", options.weights[i], "' is listed twice"));
    }
    variants.push_back(type);
  }
  LNPU_ASSIGN_OR_RETURN(KvType kv_dtype, ParseKvDtype(options.kv_dtype));
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<tools::TempDirectory> directory,
                        tools::TempDirectory::Create("npu-eval", options.temp_parent));
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<Device> opened, tools::OpenToolDevice(options.device));
  const std::shared_ptr<Device> device = std::move(opened);
  const auto n = static_cast<uint32_t>(tokens.size());

  EvalResult result;
  result.positions = tokens.size();
  std::vector<float> baseline;  // [position][vocab]
  {
    if (options.on_compile) options.on_compile("f32 baseline");
    LNPU_ASSIGN_OR_RETURN(LoadedModel loaded, CompileAndLoad(device, gguf_path, directory->path(),
                                                             n, WeightType::kF32, KvType::kF32));
    result.vocab_size = loaded.model->info().vocab_size;
    baseline.reserve(size_t{result.vocab_size} * tokens.size());
    LNPU_RETURN_IF_ERROR(
        RunTeacherForced(*loaded.model, tokens, [&](size_t, absl::Span<const float> logits) {
          baseline.insert(baseline.end(), logits.begin(), logits.end());
          return absl::OkStatus();
        }));
  }
  for (size_t v = 0; v < variants.size(); ++v) {
    if (options.on_compile) options.on_compile(options.weights[v]);
    LNPU_ASSIGN_OR_RETURN(LoadedModel loaded, CompileAndLoad(device, gguf_path, directory->path(),
                                                             n, variants[v], kv_dtype));
    LogitAccuracy accuracy;
    const size_t vocab = result.vocab_size;
    LNPU_RETURN_IF_ERROR(
        RunTeacherForced(*loaded.model, tokens, [&](size_t i, absl::Span<const float> logits) {
          return accuracy.Add(absl::MakeConstSpan(baseline).subspan(i * vocab, vocab), logits);
        }));
    result.variants.push_back({options.weights[v], loaded.artifact_bytes, accuracy.Summary()});
  }
  return result;
}

}  // namespace lnpu::eval
