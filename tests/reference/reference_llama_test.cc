#include "tests/reference/reference_llama.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_temp_dir.h"

namespace lnpu::reference {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// "Once upon a time" with BOS, as tokenized by the stories260K vocabulary.
constexpr int32_t kStoriesPrompt[] = {1, 403, 407, 261, 378};
constexpr char kStoriesContinuation[] =
    ", there was a little girl named Lily. She loved to play outside in the "
    "park.";

std::string ModelsDir() {
  const char* dir = std::getenv("LNPU_MODELS_DIR");
  return dir != nullptr ? dir : "models";
}

std::string StoriesPath() { return ModelsDir() + "/stories260K.gguf"; }

std::string TestDataDir() {
  const char* dir = std::getenv("LNPU_TEST_DATA");
  return dir != nullptr ? dir : "tests/data";
}

void ExpectAllFinite(const std::vector<float>& logits) {
  for (size_t i = 0; i < logits.size(); ++i) {
    ASSERT_TRUE(std::isfinite(logits[i])) << "logit " << i << " = " << logits[i];
  }
}

// Concatenates the SentencePiece pieces of `tokens` (U+2581 -> space,
// <0xXX> byte tokens -> that byte), straight from tokenizer.ggml.tokens.
std::string DecodePieces(const std::string& gguf_path,
                         const std::vector<int32_t>& tokens) {
  absl::StatusOr<std::unique_ptr<gguf::GgufFile>> file =
      gguf::GgufFile::Open(gguf_path);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return "";
  absl::StatusOr<std::vector<std::string>> pieces =
      (*file)->GetStringArray("tokenizer.ggml.tokens");
  EXPECT_TRUE(pieces.ok()) << pieces.status();
  if (!pieces.ok()) return "";
  std::string text;
  for (int32_t token : tokens) {
    EXPECT_LT(static_cast<size_t>(token), pieces->size());
    if (static_cast<size_t>(token) >= pieces->size()) return text;
    const std::string& piece = (*pieces)[token];
    if (piece.size() == 6 && piece.starts_with("<0x") && piece.ends_with(">")) {
      text.push_back(static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    } else {
      text += absl::StrReplaceAll(piece, {{"\xE2\x96\x81", " "}});
    }
  }
  return text;
}

class StoriesReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ReferenceLlama>> model =
        ReferenceLlama::Load(StoriesPath());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(model_, nullptr);
    model_->Reset();
  }

  static ReferenceLlama* model_;
};

ReferenceLlama* StoriesReferenceTest::model_ = nullptr;

TEST_F(StoriesReferenceTest, ReadsTheModelShape) {
  const ReferenceLlamaConfig& c = model_->config();
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_GT(c.norm_eps, 0.0f);
}

// The pretrained model continues its training-set story: this validates the
// reference itself (RoPE pairing, GQA mapping, norms, FFN) against reality.
TEST_F(StoriesReferenceTest, GreedilyContinuesOnceUponATime) {
  const std::vector<int32_t> generated =
      model_->GenerateGreedy(kStoriesPrompt, 40);
  ASSERT_EQ(generated.size(), 40u);
  EXPECT_THAT(DecodePieces(StoriesPath(), generated),
              StartsWith(kStoriesContinuation));
  EXPECT_EQ(model_->position(), static_cast<int>(std::size(kStoriesPrompt)) + 39);
}

TEST_F(StoriesReferenceTest, StopTokenEndsGenerationAndIsNotReturned) {
  const std::vector<int32_t> full = model_->GenerateGreedy(kStoriesPrompt, 10);
  ASSERT_EQ(full.size(), 10u);
  const std::vector<int32_t> stopped =
      model_->GenerateGreedy(kStoriesPrompt, 10, /*stop_token=*/full[4]);
  // The stop token may occur earlier than index 4; it ends at its first use.
  const auto first = std::find(full.begin(), full.end(), full[4]);
  EXPECT_EQ(stopped, std::vector<int32_t>(full.begin(), first));
}

TEST_F(StoriesReferenceTest, PositionCountsTokensAndResetEmptiesTheCache) {
  EXPECT_EQ(model_->position(), 0);
  std::vector<std::vector<float>> first_run;
  for (int32_t token : kStoriesPrompt) first_run.push_back(model_->Forward(token));
  EXPECT_EQ(model_->position(), 5);
  for (const auto& logits : first_run) {
    ASSERT_EQ(logits.size(), 512u);
    ExpectAllFinite(logits);
  }

  model_->Reset();
  EXPECT_EQ(model_->position(), 0);
  for (size_t i = 0; i < std::size(kStoriesPrompt); ++i) {
    // Bitwise equal: the computation is deterministic and cache-independent
    // after Reset.
    EXPECT_EQ(model_->Forward(kStoriesPrompt[i]), first_run[i]) << "step " << i;
  }
}

TEST_F(StoriesReferenceTest, LogitsDependOnTheContext) {
  const std::vector<float> at_start = model_->Forward(403);
  model_->Reset();
  model_->Forward(1);
  const std::vector<float> after_bos = model_->Forward(403);
  EXPECT_NE(at_start, after_bos);
}

TEST(ReferenceLlamaLoadTest, MissingFileFails) {
  const absl::StatusOr<std::unique_ptr<ReferenceLlama>> model =
      ReferenceLlama::Load(::testing::TempDir() + "/no_such_model.gguf");
  EXPECT_FALSE(model.ok());
}

TEST(ReferenceLlamaLoadTest, VocabularyOnlyFileNamesTheMissingPiece) {
  // A llama GGUF with a tokenizer but no weights.
  const absl::StatusOr<std::unique_ptr<ReferenceLlama>> model =
      ReferenceLlama::Load(TestDataDir() + "/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("ggml-vocab-llama-spm.gguf"));
}

TEST(ArgmaxLowestIndexTest, LowestIndexWinsTies) {
  EXPECT_EQ(ArgmaxLowestIndex(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(ArgmaxLowestIndex(std::vector<float>{-1.0f}), 0);
  EXPECT_EQ(ArgmaxLowestIndex(std::vector<float>{-2.0f, -1.0f, -1.0f}), 1);
}

// The smallest vocabulary WriteRandomLlamaGguf accepts, plus a few pieces.
constexpr uint32_t kRandomVocabSize = 300;

struct RandomShape {
  std::string name;
  int dim;
  int n_heads;
  int n_kv_heads;
  int ffn_dim;
  int rope_dim;
  bool tied_embeddings;
  gguf::GgmlType weight_type;
};

void PrintTo(const RandomShape& shape, std::ostream* os) { *os << shape.name; }

class RandomReferenceTest : public ::testing::TestWithParam<RandomShape> {
 protected:
  std::string WriteModel(uint64_t seed) {
    const RandomShape& shape = GetParam();
    synthetic::RandomLlamaSpec spec;
    spec.vocab_size = kRandomVocabSize;
    spec.dim = shape.dim;
    spec.n_layers = 2;
    spec.n_heads = shape.n_heads;
    spec.n_kv_heads = shape.n_kv_heads;
    spec.ffn_dim = shape.ffn_dim;
    spec.rope_dim = shape.rope_dim;
    spec.rope_theta = 10000.0f;
    spec.norm_eps = 1e-5f;
    spec.context_length = 256;
    spec.tied_embeddings = shape.tied_embeddings;
    spec.weight_type = shape.weight_type;
    spec.seed = seed;
    const std::string path = lnpu::testing::TestTempPath(absl::StrCat(seed, ".gguf"));
    const absl::Status status = synthetic::WriteRandomLlamaGguf(spec, path);
    EXPECT_TRUE(status.ok()) << status;
    return path;
  }
};

TEST_P(RandomReferenceTest, FiniteDeterministicLogits) {
  const RandomShape& shape = GetParam();
  const std::string path = WriteModel(/*seed=*/7);
  absl::StatusOr<std::unique_ptr<ReferenceLlama>> a = ReferenceLlama::Load(path);
  absl::StatusOr<std::unique_ptr<ReferenceLlama>> b = ReferenceLlama::Load(path);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const ReferenceLlamaConfig& c = (*a)->config();
  EXPECT_EQ(c.n_heads, shape.n_heads);
  EXPECT_EQ(c.n_kv_heads, shape.n_kv_heads);
  EXPECT_EQ(c.ffn_dim, shape.ffn_dim);
  EXPECT_EQ(c.rope_dim, shape.rope_dim);
  EXPECT_EQ(c.tied_embeddings, shape.tied_embeddings);

  const std::vector<int32_t> prompt = {1, 50, 296, 0, 12, 12, 41};
  for (int32_t token : prompt) {
    const std::vector<float> la = (*a)->Forward(token);
    const std::vector<float> lb = (*b)->Forward(token);
    ASSERT_EQ(la.size(), kRandomVocabSize);
    ExpectAllFinite(la);
    EXPECT_EQ(la, lb);
  }
  const std::vector<int32_t> ga = (*a)->GenerateGreedy(prompt, 40);
  EXPECT_EQ(ga.size(), 40u);
  EXPECT_EQ(ga, (*b)->GenerateGreedy(prompt, 40));

  // The same token at the same position sees different caches.
  (*a)->Reset();
  (*a)->Forward(7);
  const std::vector<float> after_7 = (*a)->Forward(9);
  (*a)->Reset();
  (*a)->Forward(8);
  EXPECT_NE((*a)->Forward(9), after_7);
}

TEST_P(RandomReferenceTest, DifferentWeightsGiveDifferentLogits) {
  absl::StatusOr<std::unique_ptr<ReferenceLlama>> a =
      ReferenceLlama::Load(WriteModel(/*seed=*/1));
  absl::StatusOr<std::unique_ptr<ReferenceLlama>> b =
      ReferenceLlama::Load(WriteModel(/*seed=*/2));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE((*a)->Forward(5), (*b)->Forward(5));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RandomReferenceTest,
    ::testing::Values(
        RandomShape{"gqa8x2", 64, 8, 2, 96, 8, false, gguf::GgmlType::kF32},
        RandomShape{"gqa4x1_f16_tied", 48, 4, 1, 77, 12, true,
                    gguf::GgmlType::kF16},
        RandomShape{"mha6x6_odd_ffn", 36, 6, 6, 53, 6, false,
                    gguf::GgmlType::kF32},
        RandomShape{"gqa6x3_partial_rope_bf16", 72, 6, 3, 131, 8, false,
                    gguf::GgmlType::kBF16},
        RandomShape{"gqa6x2_odd_head_dim", 54, 6, 2, 61, 8, false,
                    gguf::GgmlType::kF32}),
    [](const ::testing::TestParamInfo<RandomShape>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace lnpu::reference
