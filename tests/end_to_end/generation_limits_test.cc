// The edges of a request on the fixed-capacity pipeline: prompts at and
// beyond max_prompt_len, generation that fills every KV slot, max_new_tokens,
// and cancellation from the streaming callback; each checked end to end and,
// where tokens come out, against the independent reference.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "framework/generation.h"
#include "framework/llm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/end_to_end/equivalence_harness.h"
#include "tests/reference/reference_llama.h"

namespace lnpu::end_to_end {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint32_t kMaxPromptLen = 48;
constexpr uint32_t kMinResponseLen = 16;
constexpr uint32_t kCapacity = kMaxPromptLen + kMinResponseLen;
constexpr uint32_t kVocabSize = 300;

// One small grouped-query random model ...
synthetic::RandomLlamaSpec LimitsModelSpec() {
  synthetic::RandomLlamaSpec spec;
  spec.vocab_size = kVocabSize;
  spec.dim = 48;
  spec.n_layers = 2;
  spec.n_heads = 6;
  spec.n_kv_heads = 2;
  spec.ffn_dim = 97;
  spec.context_length = kCapacity;
  spec.seed = 77;
  return spec;
}

// ... compiled with capacity 48 + 16 and prefill chunks {8, 32}.
compiler::CompileOptions LimitsCompileOptions() {
  compiler::CompileOptions options;
  options.max_prompt_len = kMaxPromptLen;
  options.min_response_len = kMinResponseLen;
  options.prefill_chunks = {8, 32};
  return options;
}

// The model above, shared by the suite.
class GenerationLimitsTest : public SharedModelTest<GenerationLimitsTest> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::string> gguf_path =
        WriteRandomLlamaToTempDir(LimitsModelSpec(), "generation_limits");
    ASSERT_TRUE(gguf_path.ok()) << gguf_path.status();
    absl::StatusOr<std::string> artifact =
        CompileToTempDir(*gguf_path, "generation_limits", LimitsCompileOptions());
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    ShareModel(LoadModelAndReference(*gguf_path, *artifact));
  }
};

TEST_F(GenerationLimitsTest, PromptLongerThanMaxPromptLenIsRejectedWithBothNumbers) {
  const std::vector<int32_t> prompt =
      SeededPrompt(kMaxPromptLen + 1, kVocabSize, /*seed=*/1);
  absl::StatusOr<framework::GenerationResult> result =
      llm_->GenerateFromTokens(prompt, GreedyConfig(4));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              AllOf(HasSubstr(absl::StrCat(kMaxPromptLen + 1)),
                    HasSubstr(absl::StrCat(kMaxPromptLen))));

  // The rejected request leaves the model usable.
  const std::vector<int32_t> short_prompt = SeededPrompt(6, kVocabSize, /*seed=*/2);
  absl::StatusOr<framework::GenerationResult> next =
      llm_->GenerateFromTokens(short_prompt, GreedyConfig(10));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, short_prompt, next->tokens));
}

TEST_F(GenerationLimitsTest, EmptyPromptIsRejected) {
  absl::StatusOr<framework::GenerationResult> result =
      llm_->GenerateFromTokens({}, GreedyConfig(4));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
}

// Each prompt length generates until all kCapacity slots hold a token (the
// last generated token needs no slot of its own), then stops without error.
TEST_F(GenerationLimitsTest, FillingTheCacheEndsWithLengthAfterCapacityMinusPromptTokens) {
  for (const uint32_t prompt_len : {1u, 8u, 33u, kMaxPromptLen}) {
    SCOPED_TRACE(absl::StrCat("prompt of ", prompt_len, " tokens"));
    const std::vector<int32_t> prompt =
        SeededPrompt(prompt_len, kVocabSize, /*seed=*/prompt_len);
    absl::StatusOr<framework::GenerationResult> result =
        llm_->GenerateFromTokens(prompt, GreedyConfig(10 * kCapacity));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->finish_reason, framework::FinishReason::kLength);
    ASSERT_EQ(result->tokens.size(), kCapacity - prompt_len);
    EXPECT_EQ(result->stats.generated_tokens, static_cast<int>(kCapacity - prompt_len));
    EXPECT_TRUE(MatchesReferenceGreedy(*reference_, prompt, result->tokens));
  }
}

TEST_F(GenerationLimitsTest, MaxNewTokensEndsWithLength) {
  const std::vector<int32_t> prompt = SeededPrompt(12, kVocabSize, /*seed=*/3);
  absl::StatusOr<framework::GenerationResult> result =
      llm_->GenerateFromTokens(prompt, GreedyConfig(7));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->finish_reason, framework::FinishReason::kLength);
  EXPECT_EQ(result->tokens.size(), 7u);
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, prompt, result->tokens));
}

TEST_F(GenerationLimitsTest, StreamingCallbackSeesEveryTokenAndTheWholeText) {
  const std::vector<int32_t> prompt = SeededPrompt(10, kVocabSize, /*seed=*/4);
  std::vector<int32_t> streamed_tokens;
  std::string streamed_text;
  absl::StatusOr<framework::GenerationResult> result = llm_->GenerateFromTokens(
      prompt, GreedyConfig(20), [&](int32_t token, std::string_view text) {
        if (token >= 0) streamed_tokens.push_back(token);
        streamed_text += text;
        return true;
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->finish_reason, framework::FinishReason::kLength);
  EXPECT_EQ(streamed_tokens, result->tokens);
  EXPECT_EQ(streamed_text, result->text);
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, prompt, result->tokens));
}

TEST_F(GenerationLimitsTest, CallbackReturningFalseCancels) {
  const std::vector<int32_t> prompt = SeededPrompt(10, kVocabSize, /*seed=*/5);
  constexpr int kAcceptedCalls = 3;
  int calls = 0;
  absl::StatusOr<framework::GenerationResult> result = llm_->GenerateFromTokens(
      prompt, GreedyConfig(30), [&](int32_t token, std::string_view) {
        if (token < 0) return true;  // flush of an incomplete character
        return ++calls < kAcceptedCalls;
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->finish_reason, framework::FinishReason::kCancelled);
  EXPECT_EQ(calls, kAcceptedCalls);
  // The token the callback refused is still part of the result.
  ASSERT_EQ(result->tokens.size(), static_cast<size_t>(kAcceptedCalls));
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, prompt, result->tokens));

  // A cancelled request leaves no state behind.
  absl::StatusOr<framework::GenerationResult> again =
      llm_->GenerateFromTokens(prompt, GreedyConfig(30));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tokens.size(), 30u);
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, prompt, again->tokens));
}

// Graphs whose compute commands are cut into many small jobs (a few
// commands each, chained by fences) run the same commands in the same
// order: the tokens still match the reference, through prefill chunks and
// decode until the cache is full.
TEST(GenerationJobsTest, GraphsCutIntoManyJobsMatchTheReference) {
  absl::StatusOr<std::string> gguf_path =
      WriteRandomLlamaToTempDir(LimitsModelSpec(), "generation_jobs");
  ASSERT_TRUE(gguf_path.ok()) << gguf_path.status();
  compiler::CompileOptions options = LimitsCompileOptions();
  options.max_job_macs = 20000;  // a decode matmul of this model is ~4.6 k
  absl::StatusOr<std::string> artifact =
      CompileToTempDir(*gguf_path, "generation_jobs", options);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  absl::StatusOr<ModelAndReference> model =
      LoadModelAndReference(*gguf_path, *artifact);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<int32_t> prompt = SeededPrompt(41, kVocabSize, /*seed=*/5);
  absl::StatusOr<framework::GenerationResult> result =
      model->llm->GenerateFromTokens(prompt, GreedyConfig(10 * kCapacity));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->tokens.size(), kCapacity - prompt.size());
  EXPECT_TRUE(MatchesReferenceGreedy(*model->reference, prompt, result->tokens));
}

}  // namespace
}  // namespace lnpu::end_to_end
