#include "tests/end_to_end/equivalence_harness.h"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tests/test_device.h"
#include "tests/test_temp_dir.h"

namespace lnpu::end_to_end {
namespace {

std::string TempPath(const std::string& name, const std::string& extension) {
  return absl::StrCat(lnpu::testing::ProcessTempDir(), name, extension);
}

// Returns "top token, margin" of `logits`: the lowest-index argmax and how
// far the runner-up logit is below it.
std::string DescribeMargin(const std::vector<float>& logits) {
  const int32_t best = reference::ArgmaxLowestIndex(logits);
  float runner_up = -INFINITY;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (static_cast<int32_t>(i) != best) runner_up = std::max(runner_up, logits[i]);
  }
  return absl::StrCat("the reference's top logit (token ", best, ") leads the ",
                      "runner-up by ", logits[best] - runner_up);
}

}  // namespace

std::string StoriesGgufPath() {
  const char* dir = std::getenv("LNPU_MODELS_DIR");
  return absl::StrCat(dir != nullptr ? dir : "models", "/stories260K.gguf");
}

absl::StatusOr<std::string> WriteRandomLlamaToTempDir(
    const synthetic::RandomLlamaSpec& spec, const std::string& name) {
  const std::string path = TempPath(name, ".gguf");
  if (absl::Status status = synthetic::WriteRandomLlamaGguf(spec, path); !status.ok()) {
    return status;
  }
  return path;
}

absl::StatusOr<std::string> CompileToTempDir(
    const std::string& gguf_path, const std::string& name,
    const compiler::CompileOptions& options) {
  const std::string path = TempPath(name, ".lnpu");
  if (absl::Status status = compiler::CompileGguf(gguf_path, path, options);
      !status.ok()) {
    return status;
  }
  return path;
}

absl::StatusOr<std::unique_ptr<reference::ReferenceLlama>>
LoadReferenceForArtifact(const std::string& gguf_path,
                         const std::string& artifact_path) {
  absl::StatusOr<std::unique_ptr<artifact::Artifact>> opened =
      artifact::Artifact::Open(artifact_path);
  if (!opened.ok()) return opened.status();
  std::shared_ptr<const artifact::Artifact> art = *std::move(opened);
  reference::ReferenceOptions options;
  options.round_kv_to_f16 = art->model().kv_cache()->dtype() == LNPU_DTYPE_F16;
  options.quantize_kv_to_i8 = art->model().kv_cache()->dtype() == LNPU_DTYPE_I8;
  options.context_length = static_cast<int>(art->model().kv_cache()->capacity());
  options.weight_values =
      [art](const std::string& name) -> absl::StatusOr<std::vector<float>> {
    for (const artifact::fb::Weight* w : *art->model().weights()) {
      if (w->name()->str() != name) continue;
      gguf::GgmlType type;
      switch (w->dtype()) {
        case LNPU_DTYPE_F32: type = gguf::GgmlType::kF32; break;
        case LNPU_DTYPE_F16: type = gguf::GgmlType::kF16; break;
        case LNPU_DTYPE_Q8_0: type = gguf::GgmlType::kQ8_0; break;
        case LNPU_DTYPE_Q4_0: type = gguf::GgmlType::kQ4_0; break;
        case LNPU_DTYPE_Q6_K: type = gguf::GgmlType::kQ6_K; break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat("weight ", name, " has dtype ", w->dtype()));
      }
      uint64_t elements = 1;
      for (uint64_t d : *w->shape()) elements *= d;
      std::vector<float> values(elements);
      if (absl::Status s = gguf::DequantizeRow(
              type, art->data().subspan(w->offset(), w->size()),
              absl::MakeSpan(values));
          !s.ok()) {
        return s;
      }
      return values;
    }
    return absl::NotFoundError(
        absl::StrCat("the artifact has no weight named ", name));
  };
  options.int8_matmul_inputs = [art](const std::string& name) {
    for (const artifact::fb::Weight* w : *art->model().weights()) {
      if (w->name()->str() == name) {
        return w->dtype() == LNPU_DTYPE_Q8_0 || w->dtype() == LNPU_DTYPE_Q4_0 ||
               w->dtype() == LNPU_DTYPE_Q6_K;
      }
    }
    return false;
  };
  return reference::ReferenceLlama::Load(gguf_path, std::move(options));
}

absl::StatusOr<ModelAndReference> LoadModelAndReference(
    const std::string& gguf_path, const std::string& artifact_path) {
  ModelAndReference model;
  framework::LlmOptions options;
  options.device = lnpu::testing::TestDevice();
  absl::StatusOr<std::unique_ptr<framework::Llm>> llm =
      framework::Llm::Load(artifact_path, options);
  if (!llm.ok()) return llm.status();
  model.llm = *std::move(llm);
  absl::StatusOr<std::unique_ptr<reference::ReferenceLlama>> reference =
      LoadReferenceForArtifact(gguf_path, artifact_path);
  if (!reference.ok()) return reference.status();
  model.reference = *std::move(reference);
  return model;
}

framework::GenerationConfig GreedyConfig(int max_new_tokens) {
  framework::GenerationConfig config;
  config.max_new_tokens = max_new_tokens;
  config.temperature = 0.0f;
  config.add_bos = false;
  config.stop_at_eos = false;
  return config;
}

std::vector<int32_t> SeededPrompt(int length, int vocab_size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> token(3, vocab_size - 1);
  std::vector<int32_t> prompt = {1};
  while (static_cast<int>(prompt.size()) < length) prompt.push_back(token(rng));
  return prompt;
}

::testing::AssertionResult MatchesReferenceGreedy(
    reference::ReferenceLlama& reference, absl::Span<const int32_t> prompt,
    absl::Span<const int32_t> generated) {
  // Without a stop token the reference returns exactly generated.size()
  // tokens, so the two sequences differ only in content.
  const std::vector<int32_t> expected =
      reference.GenerateGreedy(prompt, static_cast<int>(generated.size()));
  const auto [expected_it, generated_it] =
      std::mismatch(expected.begin(), expected.end(), generated.begin());
  if (expected_it == expected.end()) return ::testing::AssertionSuccess();
  const size_t step = static_cast<size_t>(expected_it - expected.begin());
  // Replay the reference up to the differing step to report its margin.
  reference.Reset();
  std::vector<float> logits;
  for (int32_t token : prompt) logits = reference.Forward(token);
  for (size_t i = 0; i < step; ++i) logits = reference.Forward(expected[i]);
  return ::testing::AssertionFailure()
         << "generation differs from the reference at step " << step << " of "
         << generated.size() << " (prompt of " << prompt.size()
         << " tokens): product token " << *generated_it << ", reference token "
         << *expected_it << "; " << DescribeMargin(logits)
         << "\n  reference: " << absl::StrJoin(expected, " ")
         << "\n  product:   " << absl::StrJoin(generated, " ");
}

::testing::AssertionResult FollowsReferenceTeacherForced(
    reference::ReferenceLlama& reference, absl::Span<const int32_t> prompt,
    absl::Span<const int32_t> generated, float max_margin,
    double max_exception_fraction) {
  const size_t max_exceptions = static_cast<size_t>(
      max_exception_fraction * static_cast<double>(generated.size()));
  reference.Reset();
  std::vector<float> logits;
  for (int32_t token : prompt) logits = reference.Forward(token);
  std::string exceptions;
  size_t count = 0;
  bool too_far = false;
  for (size_t step = 0; step < generated.size(); ++step) {
    const int32_t token = generated[step];
    const int32_t best = reference::ArgmaxLowestIndex(logits);
    if (token != best) {
      const float behind = logits[best] - logits[token];
      ++count;
      too_far = too_far || !(behind <= max_margin);
      absl::StrAppend(&exceptions, "\n  step ", step, ": product token ",
                      token, " is ", behind, " below the reference's ", best);
    }
    if (step + 1 < generated.size()) logits = reference.Forward(token);
  }
  if (count <= max_exceptions && !too_far) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << count << " of " << generated.size()
         << " product tokens are not the reference's argmax (allowed: "
         << max_exceptions << ", each within " << max_margin << ")"
         << exceptions;
}

}  // namespace lnpu::end_to_end
