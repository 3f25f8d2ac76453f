// The product's correctness argument, end to end: the static masked NPU
// pipeline (compiler -> artifact -> runtime on the NPU -> framework) must
// produce exactly the greedy tokens of the independent dynamic reference.

#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

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

using ::testing::StartsWith;

// The exact path: F32 weights and KV cache, for the long runs below. The
// default options (q8 weights with int8 activations, F16 KV cache) are
// equally exact against the reference on the artifact's weights
// (StoriesDefaultOptionsTest, the random cases with an F16 cache); the F32
// path keeps the longest runs independent of quantization.
compiler::CompileOptions ExactOptions() {
  compiler::CompileOptions options;
  options.weights = compiler::CompileOptions::WeightType::kF32;
  options.kv_dtype = compiler::CompileOptions::KvType::kF32;
  return options;
}

// stories260K compiled with ExactOptions (capacity 1024 + 128 slots,
// prefill chunks {16, 32, 64, 256}), shared by the suite.
class StoriesEquivalenceTest
    : public SharedModelTest<StoriesEquivalenceTest> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::string> artifact =
        CompileToTempDir(StoriesGgufPath(), "stories260K_f32", ExactOptions());
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    ShareModel(LoadModelAndReference(StoriesGgufPath(), *artifact));
  }
};

TEST_F(StoriesEquivalenceTest, ShortPromptMatchesReferenceFor200Tokens) {
  absl::StatusOr<framework::GenerationResult> result =
      llm_->GenerateFromTokens(kStoriesPrompt, GreedyConfig(200));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->tokens.size(), 200u);
  EXPECT_EQ(result->finish_reason, framework::FinishReason::kLength);
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, kStoriesPrompt, result->tokens));
  EXPECT_THAT(result->text, StartsWith(kStoriesContinuation));
}

// ~100 prompt tokens run through several prefill chunks (64 + 16 + a padded
// 16) before decoding starts at a slot that is not chunk-aligned.
TEST_F(StoriesEquivalenceTest, PromptSpanningSeveralPrefillChunksMatchesReference) {
  std::vector<int32_t> prompt(std::begin(kStoriesPrompt), std::end(kStoriesPrompt));
  const std::vector<int32_t> story = reference_->GenerateGreedy(prompt, 94);
  prompt.insert(prompt.end(), story.begin(), story.end());
  ASSERT_EQ(prompt.size(), 99u);

  absl::StatusOr<framework::GenerationResult> result =
      llm_->GenerateFromTokens(prompt, GreedyConfig(120));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->tokens.size(), 120u);
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, prompt, result->tokens));
}

TEST_F(StoriesEquivalenceTest, UnnaturalPromptMatchesReference) {
  const std::vector<int32_t> prompt = SeededPrompt(37, 512, /*seed=*/11);
  absl::StatusOr<framework::GenerationResult> result =
      llm_->GenerateFromTokens(prompt, GreedyConfig(60));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, prompt, result->tokens));
}

// A long request leaves K/V rows in many slots; a following short request
// must not see them (its mask starts empty again).
TEST_F(StoriesEquivalenceTest, ShortRequestAfterLongOneIgnoresStaleSlots) {
  const std::vector<int32_t> long_prompt = SeededPrompt(90, 512, /*seed=*/5);
  absl::StatusOr<framework::GenerationResult> first =
      llm_->GenerateFromTokens(long_prompt, GreedyConfig(40));
  ASSERT_TRUE(first.ok()) << first.status();

  const std::vector<int32_t> short_prompt = {1, 403};
  absl::StatusOr<framework::GenerationResult> second =
      llm_->GenerateFromTokens(short_prompt, GreedyConfig(40));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, short_prompt, second->tokens));
}

// Text in, text out: the tokenizer adds BOS and the greedy story follows.
TEST_F(StoriesEquivalenceTest, TextPromptGivesTheReferenceStory) {
  framework::GenerationConfig config = GreedyConfig(40);
  config.add_bos = true;
  absl::StatusOr<framework::GenerationResult> result =
      llm_->Generate("Once upon a time", config);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stats.prompt_tokens, 5);
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, kStoriesPrompt, result->tokens));
  EXPECT_THAT(result->text, StartsWith(kStoriesContinuation));
}

// The realistic long run: every one of the 1152 default slots gets used, so
// attention spans the whole fixed-size cache at the end.
TEST_F(StoriesEquivalenceTest, MatchesReferenceUntilTheDefaultCacheIsFull) {
  constexpr size_t kDefaultCapacity = 1024 + 128;
  absl::StatusOr<framework::GenerationResult> result =
      llm_->GenerateFromTokens(kStoriesPrompt, GreedyConfig(2 * kDefaultCapacity));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->finish_reason, framework::FinishReason::kLength);
  ASSERT_EQ(result->tokens.size(), kDefaultCapacity - std::size(kStoriesPrompt));
  EXPECT_TRUE(MatchesReferenceGreedy(*reference_, kStoriesPrompt, result->tokens));
}

// Int8-activation paths (q8 / q4 weights) are compared by teacher forcing
// (FollowsReferenceTeacherForced): a product token may trail the
// reference's argmax by at most kInt8FlipMargin, at up to
// kInt8FlipFraction of the steps. Exact greedy equality is not defined
// there: the reference on stories260K q8 run once with double and once
// with float dot products disagrees with itself at step 110 of 400 greedy
// tokens (its margin there 0.022), while with f32 weights both agree on all
// 400. Observed on this machine: up to 4 of 200 steps (2%) with the product
// token trailing by 0.0005 to 0.032 (F32 or F16 KV cache alike), where a
// pipeline bug (rope, norm, masking) puts nearly every step far off.
constexpr float kInt8FlipMargin = 0.1f;
constexpr double kInt8FlipFraction = 0.05;

// stories260K with `options`, the reference on the artifact's weights, and
// 200 greedy tokens after kStoriesPrompt, then 100 after a ~100-token prompt
// that runs through several prefill chunks (64 + 16 + 16), whose rows read
// each other f16-rounded with an F16 cache, as the reference does.
void CheckStories(const compiler::CompileOptions& options,
                  const std::string& name, bool int8_activations) {
  absl::StatusOr<std::string> artifact =
      CompileToTempDir(StoriesGgufPath(), name, options);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  absl::StatusOr<ModelAndReference> model =
      LoadModelAndReference(StoriesGgufPath(), *artifact);
  ASSERT_TRUE(model.ok()) << model.status();
  framework::Llm& llm = *model->llm;
  reference::ReferenceLlama& reference = *model->reference;
  const auto check = [&](absl::Span<const int32_t> prompt,
                         absl::Span<const int32_t> generated) {
    return int8_activations
               ? FollowsReferenceTeacherForced(reference, prompt, generated,
                                               kInt8FlipMargin,
                                               kInt8FlipFraction)
               : MatchesReferenceGreedy(reference, prompt, generated);
  };

  absl::StatusOr<framework::GenerationResult> result =
      llm.GenerateFromTokens(kStoriesPrompt, GreedyConfig(200));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->tokens.size(), 200u);
  EXPECT_TRUE(check(kStoriesPrompt, result->tokens));

  std::vector<int32_t> prompt(std::begin(kStoriesPrompt), std::end(kStoriesPrompt));
  prompt.insert(prompt.end(), result->tokens.begin(), result->tokens.begin() + 94);
  absl::StatusOr<framework::GenerationResult> chunked =
      llm.GenerateFromTokens(prompt, GreedyConfig(100));
  ASSERT_TRUE(chunked.ok()) << chunked.status();
  EXPECT_TRUE(check(prompt, chunked->tokens));
}

// F32 weights with the F16 KV cache: exactly the reference's greedy tokens.
TEST(StoriesF16KvTest, MatchesReferenceGreedy) {
  compiler::CompileOptions options;
  options.weights = compiler::CompileOptions::WeightType::kF32;
  options.kv_dtype = compiler::CompileOptions::KvType::kF16;
  CheckStories(options, "stories260K_f32_f16kv", /*int8_activations=*/false);
}

// F32 weights with the int8 KV cache, against a reference that stores K/V
// rows int8-quantized per head as the cache does. Rounding K/V to int8 is
// as discontinuous as rounding activations (a one-ulp difference in a K
// element can move it a whole step, 1/127 of its head's range over only 8
// values here), so this is checked by teacher forcing like the
// int8-activation paths, not by exact greedy equality.
TEST(StoriesQ8KvTest, FollowsReferenceTeacherForced) {
  compiler::CompileOptions options;
  options.weights = compiler::CompileOptions::WeightType::kF32;
  options.kv_dtype = compiler::CompileOptions::KvType::kQ8;
  CheckStories(options, "stories260K_f32_q8kv", /*int8_activations=*/true);
}

// The default options: q8 weights (int8 activations), F16 KV cache.
TEST(StoriesDefaultOptionsTest, FollowsQuantizedReference) {
  CheckStories(compiler::CompileOptions(), "stories260K_default",
               /*int8_activations=*/true);
}

// A random llama model and the prompt length to run it with.
struct RandomCase {
  std::string name;
  uint32_t dim;
  uint32_t n_heads;
  uint32_t n_kv_heads;
  uint32_t ffn_dim;
  uint32_t rope_dim;  // 0 = head_dim
  bool tied_embeddings;
  gguf::GgmlType weight_type;
  int prompt_len;
  std::string architecture = "llama";
  compiler::CompileOptions::WeightType weights =
      compiler::CompileOptions::WeightType::kQ8;
  float llama3_rope_factor = 0.0f;
  compiler::CompileOptions::KvType kv_dtype =
      compiler::CompileOptions::KvType::kF32;
  uint32_t head_dim = 0;  // 0 = dim / n_heads
  float rope_attn_factor = 0.0f;       // phi3 LongRoPE; 0 = none
  uint32_t rope_original_context = 0;  // phi3: long factors beyond it
  uint32_t n_layers = 2;
  // gemma2 / gemma3: attention.sliding_window and the soft caps (0 = key
  // not written).
  uint32_t sliding_window = 0;
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
};

void PrintTo(const RandomCase& c, std::ostream* os) { *os << c.name; }

// Small capacity (64 prompt + 64 response slots, prefill chunks {8, 32}):
// every case generates until the cache is full, i.e. 100+ tokens, crossing
// from prefill-written slots into decode-written ones and ending on the last
// slot.
class RandomModelEquivalenceTest : public ::testing::TestWithParam<RandomCase> {
 protected:
  static constexpr uint32_t kMaxPromptLen = 64;
  static constexpr uint32_t kMinResponseLen = 64;
  static constexpr uint32_t kCapacity = kMaxPromptLen + kMinResponseLen;
};

TEST_P(RandomModelEquivalenceTest, MatchesReferenceUntilTheCacheIsFull) {
  const RandomCase& c = GetParam();
  synthetic::RandomLlamaSpec spec;
  spec.vocab_size = 320;
  spec.dim = c.dim;
  spec.n_layers = c.n_layers;
  spec.n_heads = c.n_heads;
  spec.n_kv_heads = c.n_kv_heads;
  spec.ffn_dim = c.ffn_dim;
  spec.rope_dim = c.rope_dim;
  spec.context_length = kCapacity;
  spec.tied_embeddings = c.tied_embeddings;
  spec.weight_type = c.weight_type;
  spec.architecture = c.architecture;
  spec.llama3_rope_factor = c.llama3_rope_factor;
  spec.head_dim = c.head_dim;
  spec.rope_attn_factor = c.rope_attn_factor;
  spec.rope_original_context = c.rope_original_context;
  spec.sliding_window = c.sliding_window;
  spec.attn_logit_softcap = c.attn_softcap;
  spec.final_logit_softcap = c.final_softcap;
  spec.seed = 1000 + c.prompt_len;
  absl::StatusOr<std::string> gguf_path = WriteRandomLlamaToTempDir(spec, c.name);
  ASSERT_TRUE(gguf_path.ok()) << gguf_path.status();

  compiler::CompileOptions options;
  options.max_prompt_len = kMaxPromptLen;
  options.min_response_len = kMinResponseLen;
  options.prefill_chunks = {8, 32};
  options.weights = c.weights;
  options.kv_dtype = c.kv_dtype;
  absl::StatusOr<std::string> artifact = CompileToTempDir(*gguf_path, c.name, options);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  absl::StatusOr<ModelAndReference> model =
      LoadModelAndReference(*gguf_path, *artifact);
  ASSERT_TRUE(model.ok()) << model.status();

  const std::vector<int32_t> prompt =
      SeededPrompt(c.prompt_len, spec.vocab_size, /*seed=*/c.prompt_len);
  absl::StatusOr<framework::GenerationResult> result =
      model->llm->GenerateFromTokens(prompt, GreedyConfig(1000));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->finish_reason, framework::FinishReason::kLength);
  ASSERT_EQ(result->tokens.size(), kCapacity - prompt.size());
  const bool int8_activations =
      c.weights == compiler::CompileOptions::WeightType::kQ8 ||
      c.weights == compiler::CompileOptions::WeightType::kQ4 ||
      (c.weights == compiler::CompileOptions::WeightType::kKeep &&
       (c.weight_type == gguf::GgmlType::kQ8_0 ||
        c.weight_type == gguf::GgmlType::kQ4_0 ||
        c.weight_type == gguf::GgmlType::kQ6_K));
  if (int8_activations) {
    EXPECT_TRUE(FollowsReferenceTeacherForced(*model->reference, prompt,
                                              result->tokens, kInt8FlipMargin,
                                              kInt8FlipFraction));
  } else {
    EXPECT_TRUE(MatchesReferenceGreedy(*model->reference, prompt, result->tokens));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RandomModelEquivalenceTest,
    ::testing::Values(
        RandomCase{"gqa8x2", 64, 8, 2, 160, 0, false, gguf::GgmlType::kF32, 21},
        RandomCase{"gqa4x1_odd_ffn_f16", 48, 4, 1, 77, 0, false,
                   gguf::GgmlType::kF16, 28},
        RandomCase{"gqa6x3_odd_ffn", 72, 6, 3, 131, 0, false,
                   gguf::GgmlType::kF32, 5},
        // Random tied models greedily repeat their input token (its own
        // embedding dominates the logits), so this case checks little beyond
        // the tied output projection.
        RandomCase{"gqa8x2_tied_f16", 64, 8, 2, 96, 0, true,
                   gguf::GgmlType::kF16, 13},
        RandomCase{"mha4x4_partial_rope", 64, 4, 4, 100, 8, false,
                   gguf::GgmlType::kF32, 9},
        // The int8 KV cache (q8), against a reference that stores its K/V
        // rows int8-quantized per head the same way: GQA 8x2 with f32
        // weights, and 4x4 with partial RoPE and q8 weights.
        RandomCase{"gqa8x2_f32_q8kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 21, "llama",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kQ8},
        RandomCase{"mha4x4_partial_rope_q8kv", 64, 4, 4, 100, 8, false,
                   gguf::GgmlType::kF32, 9, "llama",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kQ8},
        // Each architecture and GGUF tensor type, compiled to q8 / q4 / f32.
        RandomCase{"qwen2_tied_bias_neox_q8", 64, 8, 2, 160, 0, true,
                   gguf::GgmlType::kF16, 17, "qwen2"},
        RandomCase{"qwen2_untied_q4", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 19, "qwen2",
                   compiler::CompileOptions::WeightType::kQ4},
        RandomCase{"llama3_scaling_bf16_f32", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kBF16, 23, "llama",
                   compiler::CompileOptions::WeightType::kF32, 32.0f},
        RandomCase{"llama_q8_0_keep", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kQ8_0, 11, "llama",
                   compiler::CompileOptions::WeightType::kKeep},
        RandomCase{"llama_q4_0_keep", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kQ4_0, 12, "llama",
                   compiler::CompileOptions::WeightType::kKeep},
        RandomCase{"llama_q4_k_to_f16", 256, 8, 2, 256, 0, false,
                   gguf::GgmlType::kQ4_K, 14, "llama",
                   compiler::CompileOptions::WeightType::kF16},
        RandomCase{"llama_q6_k_to_q4", 256, 8, 2, 256, 0, false,
                   gguf::GgmlType::kQ6_K, 15, "llama",
                   compiler::CompileOptions::WeightType::kQ4},
        // keep: the output projection stays LNPU_DTYPE_Q6_K (the other
        // matrices become Q8_0).
        RandomCase{"llama_q6_k_keep", 256, 8, 2, 256, 0, false,
                   gguf::GgmlType::kQ6_K, 16, "llama",
                   compiler::CompileOptions::WeightType::kKeep},
        // The default F16 KV cache, with q8, q4 and f32 weights.
        RandomCase{"gqa8x2_f16kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 21, "llama",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16},
        RandomCase{"mha4x4_partial_rope_f16kv", 64, 4, 4, 100, 8, false,
                   gguf::GgmlType::kF32, 9, "llama",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16},
        RandomCase{"qwen2_tied_bias_neox_q8_f16kv", 64, 8, 2, 160, 0, true,
                   gguf::GgmlType::kF16, 17, "qwen2",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16},
        RandomCase{"qwen2_untied_q4_f16kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 19, "qwen2",
                   compiler::CompileOptions::WeightType::kQ4, 0.0f,
                   compiler::CompileOptions::KvType::kF16},
        RandomCase{"gqa6x3_odd_ffn_f32_f16kv", 72, 6, 3, 131, 0, false,
                   gguf::GgmlType::kF32, 5, "llama",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF16},
        // qwen3: per-head Q/K norms, heads of 32 on a width of 64 (q_dim
        // 128 != dim), NEOX RoPE; exact with f32 weights (F32 and F16 KV),
        // teacher-forced with q8 weights.
        RandomCase{"qwen3_wide_heads_f32", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 21, "qwen3",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF32, 32},
        RandomCase{"qwen3_tied_f32_f16kv", 64, 4, 2, 160, 0, true,
                   gguf::GgmlType::kF16, 24, "qwen3",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 32},
        RandomCase{"qwen3_q8_f16kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 25, "qwen3",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16},
        // phi3: fused QKV and gate/up, LongRoPE short factors (the cache of
        // 128 fits the trained 4096) and long ones (trained on 64), with
        // the attention factor; exact with f32 weights, teacher-forced q8.
        RandomCase{"phi3_short_rope_f32", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 26, "phi3",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF32, 0, 1.19f, 4096},
        RandomCase{"phi3_long_rope_f32_f16kv", 64, 8, 8, 160, 0, false,
                   gguf::GgmlType::kF32, 27, "phi3",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 0, 1.19f, 64},
        // smollm3: layers 3 and 7 of 8 without RoPE.
        RandomCase{"smollm3_nope_layers_f32", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 29, "smollm3",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF32, 0, 0.0f, 0, 8},
        RandomCase{"phi3_q8_f16kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF16, 28, "phi3",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 0, 1.19f, 4096},
        // gemma2: embedding scale, post-norms, GeGLU, the attention and
        // logit soft caps (llama.cpp's defaults 50 / 30, and caps of 2 / 3
        // that bend most scores and logits), and a window of 16 positions
        // on the even layers of 4, shorter than a prefill chunk of 32 and
        // than the 128 positions each case runs: exact with f32 weights,
        // F32 and F16 KV.
        RandomCase{"gemma2_window16_f32", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 29, "gemma2",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF32, 0, 0.0f, 0, 4, 16, 50.0f, 30.0f},
        RandomCase{"gemma2_strong_caps_f32_f16kv", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 30, "gemma2",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 0, 0.0f, 0, 4, 16, 2.0f, 3.0f},
        // gemma3: per-head Q/K norms, heads of 32 on a width of 64, five
        // local layers (window 24, RoPE base 10000) to one global, tied
        // embeddings as the real models have.
        RandomCase{"gemma3_window24_f32", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 31, "gemma3",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF32, 32, 0.0f, 0, 6, 24},
        RandomCase{"gemma3_tied_window24_f32_f16kv", 64, 4, 2, 160, 0, true,
                   gguf::GgmlType::kF32, 33, "gemma3",
                   compiler::CompileOptions::WeightType::kF32, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 32, 0.0f, 0, 6, 24},
        RandomCase{"gemma3_q8_f16kv", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 34, "gemma3",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 32, 0.0f, 0, 6, 24},
        // Every architecture through both quantized weight paths (q8, q4),
        // teacher-forced: the ones above not yet covered.
        RandomCase{"qwen3_q4_f16kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 35, "qwen3",
                   compiler::CompileOptions::WeightType::kQ4, 0.0f,
                   compiler::CompileOptions::KvType::kF16},
        RandomCase{"phi3_q4_f16kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF16, 36, "phi3",
                   compiler::CompileOptions::WeightType::kQ4, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 0, 1.19f, 4096},
        RandomCase{"smollm3_nope_layers_q8_f16kv", 64, 8, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 37, "smollm3",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 0, 0.0f, 0, 8},
        RandomCase{"gemma2_window16_q8_f16kv", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 39, "gemma2",
                   compiler::CompileOptions::WeightType::kQ8, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 0, 0.0f, 0, 4, 16, 50.0f, 30.0f},
        RandomCase{"gemma2_window16_q4", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 40, "gemma2",
                   compiler::CompileOptions::WeightType::kQ4, 0.0f,
                   compiler::CompileOptions::KvType::kF32, 0, 0.0f, 0, 4, 16, 50.0f, 30.0f},
        RandomCase{"gemma3_q4_f16kv", 64, 4, 2, 160, 0, false,
                   gguf::GgmlType::kF32, 41, "gemma3",
                   compiler::CompileOptions::WeightType::kQ4, 0.0f,
                   compiler::CompileOptions::KvType::kF16, 32, 0.0f, 0, 6, 24}),
    [](const ::testing::TestParamInfo<RandomCase>& info) { return info.param.name; });

}  // namespace
}  // namespace lnpu::end_to_end
