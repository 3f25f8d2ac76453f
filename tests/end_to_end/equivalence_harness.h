// Shared set-up of the end-to-end tests: models compiled into the test's
// temporary directory and loaded together with their reference, a fixture
// sharing one such model across a suite, greedy generation configs, and the
// comparison of the product's generated tokens with the independent dynamic
// reference (tests/reference/reference_llama.h).
//
// Thread-safety: the functions are free of shared state; ReferenceLlama
// arguments are mutated (reset and re-run) and must not be shared between
// threads.
#ifndef LNPU_TESTS_END_TO_END_EQUIVALENCE_HARNESS_H_
#define LNPU_TESTS_END_TO_END_EQUIVALENCE_HARNESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "framework/generation.h"
#include "framework/llm.h"
#include "gtest/gtest.h"
#include "tests/reference/reference_llama.h"

namespace lnpu::end_to_end {

// "Once upon a time" with BOS, as tokenized by the stories260K vocabulary,
// and its greedy continuation by the pretrained model.
inline constexpr int32_t kStoriesPrompt[] = {1, 403, 407, 261, 378};
inline constexpr char kStoriesContinuation[] =
    ", there was a little girl named Lily. She loved to play outside in the "
    "park.";

// models/stories260K.gguf, located through LNPU_MODELS_DIR.
std::string StoriesGgufPath();

// Writes the random llama model `spec` to <dir>/<name>.gguf and returns
// that path; <dir> is this process's own directory under
// ::testing::TempDir(), removed at exit.
absl::StatusOr<std::string> WriteRandomLlamaToTempDir(
    const synthetic::RandomLlamaSpec& spec, const std::string& name);

// Compiles `gguf_path` with `options` to <dir>/<name>.lnpu and returns
// that path.
absl::StatusOr<std::string> CompileToTempDir(
    const std::string& gguf_path, const std::string& name,
    const compiler::CompileOptions& options);

// The reference for `artifact_path` compiled from `gguf_path`: its weights
// are the artifact's own bytes (F32, F16, Q8_0 or Q4_0) widened with
// gguf::DequantizeRow, exactly the values the NPU multiplies with; inputs of
// Q8_0 / Q4_0 matrices are rounded to int8 blocks as the NPU does; KV rows
// are rounded to f16 when the artifact's KV cache is F16.
absl::StatusOr<std::unique_ptr<reference::ReferenceLlama>>
LoadReferenceForArtifact(const std::string& gguf_path,
                         const std::string& artifact_path);

// An artifact loaded through the framework on the test device
// (tests/test_device.h: the software NPU, or LNPU_TEST_DEVICE), and its
// reference (LoadReferenceForArtifact).
struct ModelAndReference {
  std::unique_ptr<framework::Llm> llm;
  std::unique_ptr<reference::ReferenceLlama> reference;
};
absl::StatusOr<ModelAndReference> LoadModelAndReference(
    const std::string& gguf_path, const std::string& artifact_path);

// A fixture whose tests share one ModelAndReference, loaded once per suite:
// Suite::SetUpTestSuite() passes it to ShareModel, and every test stops
// with a failure if that failed. Suite is the deriving fixture (CRTP), so
// that each suite has its own model.
template <class Suite>
class SharedModelTest : public ::testing::Test {
 protected:
  static void ShareModel(absl::StatusOr<ModelAndReference> model) {
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = new ModelAndReference(*std::move(model));
    llm_ = model_->llm.get();
    reference_ = model_->reference.get();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
    llm_ = nullptr;
    reference_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(model_, nullptr) << "suite set-up failed";
  }

  static inline ModelAndReference* model_ = nullptr;
  // The parts of model_.
  static inline framework::Llm* llm_ = nullptr;
  static inline reference::ReferenceLlama* reference_ = nullptr;
};

// Greedy decoding of exactly the given prompt tokens (no BOS added), not
// stopping at end-of-generation tokens.
framework::GenerationConfig GreedyConfig(int max_new_tokens);

// `length` pseudo-random tokens in [3, vocab_size) after BOS (token 1),
// fixed by `seed`: a prompt without end-of-generation tokens.
std::vector<int32_t> SeededPrompt(int length, int vocab_size, uint64_t seed);

// Success when `generated` equals reference.GenerateGreedy(prompt,
// generated.size()) token for token. On a mismatch the message names the
// first differing step, both tokens and the reference's margin between its
// best and second-best logit there (a tiny margin points at a numerical
// near-tie, a large one at a real pipeline bug).
::testing::AssertionResult MatchesReferenceGreedy(
    reference::ReferenceLlama& reference, absl::Span<const int32_t> prompt,
    absl::Span<const int32_t> generated);

// For artifacts whose matmuls round activations to int8 (Q8_0 / Q4_0
// weights), where exact greedy equality over long runs is not well defined:
// rounding x / d to an integer is discontinuous, so f32 summation-order
// differences of one ulp (between the NPU's paths and the reference, or
// between the reference in double and in float) flip a rounding now and
// then and move a logit by ~1e-2. The product's tokens are fed to the
// reference (teacher forcing); success when each one is the reference's
// argmax, except at most max_exception_fraction of the steps where it is
// within `max_margin` of the argmax logit. The message lists every
// exception.
::testing::AssertionResult FollowsReferenceTeacherForced(
    reference::ReferenceLlama& reference, absl::Span<const int32_t> prompt,
    absl::Span<const int32_t> generated, float max_margin,
    double max_exception_fraction);

}  // namespace lnpu::end_to_end

#endif  // LNPU_TESTS_END_TO_END_EQUIVALENCE_HARNESS_H_
