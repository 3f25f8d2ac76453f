// GgufFile on the bundled real files: stories260K and the llama SPM vocab.

#include "compiler_artifacts/gguf/gguf_file.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/gguf_test_util.h"

namespace lnpu::gguf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ModelPath;
using testing::TestDataPath;

class StoriesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(ModelPath("stories260K.gguf"));
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = file->release();
  }
  static void TearDownTestSuite() {
    delete file_;
    file_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(file_, nullptr); }

  static GgufFile* file_;
};
GgufFile* StoriesTest::file_ = nullptr;

TEST_F(StoriesTest, HyperParameters) {
  EXPECT_EQ(file_->version(), 3u);
  EXPECT_EQ(file_->alignment(), 32u);
  EXPECT_EQ(*file_->GetString("general.architecture"), "llama");
  EXPECT_EQ(*file_->GetUint("llama.embedding_length"), 64u);
  EXPECT_EQ(*file_->GetUint("llama.block_count"), 5u);
  EXPECT_EQ(*file_->GetUint("llama.attention.head_count"), 8u);
  EXPECT_EQ(*file_->GetUint("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(*file_->GetUint("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*file_->GetUint("llama.context_length"), 2048u);
  EXPECT_EQ(*file_->GetInt("llama.rope.dimension_count"), 8);
  EXPECT_FLOAT_EQ(*file_->GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(*file_->GetUint("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(*file_->GetUint("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(*file_->GetString("tokenizer.ggml.model"), "llama");
  EXPECT_TRUE(file_->HasKey("tokenizer.ggml.scores"));
  EXPECT_FALSE(file_->HasKey("llama.rope.freq_base"));
}

TEST_F(StoriesTest, Vocabulary) {
  absl::StatusOr<std::vector<std::string>> tokens = file_->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[2], "</s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ((*tokens)[258], "<0xFF>");
  EXPECT_EQ(file_->GetFloatArray("tokenizer.ggml.scores")->size(), 512u);
  absl::StatusOr<std::vector<int32_t>> types = file_->GetInt32Array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok()) << types.status();
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[3], 6);
  EXPECT_EQ((*types)[300], 1);
}

TEST_F(StoriesTest, TensorShapes) {
  constexpr uint64_t kDim = 64, kVocab = 512, kFfn = 172, kKvDim = 4 * (64 / 8);
  ASSERT_EQ(file_->tensors().size(), 3u + 5u * 9u);
  auto dims = [&](const std::string& name) -> std::vector<uint64_t> {
    const TensorInfo* tensor = file_->FindTensor(name);
    EXPECT_NE(tensor, nullptr) << name;
    if (tensor == nullptr) return {};
    EXPECT_EQ(tensor->type, GgmlType::kF32) << name;
    EXPECT_EQ(tensor->bytes, tensor->elements() * 4) << name;
    EXPECT_EQ(tensor->offset % 32, 0u) << name;
    return tensor->dims;
  };
  EXPECT_THAT(dims("token_embd.weight"), ElementsAre(kDim, kVocab));
  EXPECT_THAT(dims("output.weight"), ElementsAre(kDim, kVocab));
  EXPECT_THAT(dims("output_norm.weight"), ElementsAre(kDim));
  for (int layer = 0; layer < 5; ++layer) {
    const std::string prefix = "blk." + std::to_string(layer) + ".";
    EXPECT_THAT(dims(prefix + "attn_norm.weight"), ElementsAre(kDim));
    EXPECT_THAT(dims(prefix + "attn_q.weight"), ElementsAre(kDim, kDim));
    EXPECT_THAT(dims(prefix + "attn_k.weight"), ElementsAre(kDim, kKvDim));
    EXPECT_THAT(dims(prefix + "attn_v.weight"), ElementsAre(kDim, kKvDim));
    EXPECT_THAT(dims(prefix + "attn_output.weight"), ElementsAre(kDim, kDim));
    EXPECT_THAT(dims(prefix + "ffn_norm.weight"), ElementsAre(kDim));
    EXPECT_THAT(dims(prefix + "ffn_gate.weight"), ElementsAre(kDim, kFfn));
    EXPECT_THAT(dims(prefix + "ffn_up.weight"), ElementsAre(kDim, kFfn));
    EXPECT_THAT(dims(prefix + "ffn_down.weight"), ElementsAre(kFfn, kDim));
  }
  EXPECT_EQ(file_->FindTensor("blk.5.attn_q.weight"), nullptr);
}

TEST_F(StoriesTest, TensorData) {
  const TensorInfo* norm = file_->FindTensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(file_->TensorData(*norm).size(), 256u);
  absl::StatusOr<std::vector<float>> values = file_->TensorToF32(*norm);
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), 64u);
  double sum = 0;
  for (float value : *values) {
    ASSERT_TRUE(std::isfinite(value));
    sum += value;
  }
  EXPECT_GT(sum / 64, 0.1);  // Trained RMSNorm gains are positive on average.
  const TensorInfo* embedding = file_->FindTensor("token_embd.weight");
  ASSERT_NE(embedding, nullptr);
  EXPECT_EQ(file_->TensorToF32(*embedding)->size(), 64u * 512u);
}

TEST_F(StoriesTest, TypedGetterErrors) {
  absl::StatusOr<uint64_t> missing = file_->GetUint("llama.no_such_key");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("'llama.no_such_key' is not present"));
  absl::StatusOr<std::string> wrong = file_->GetString("llama.block_count");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr("holds uint32, not a string"));
  absl::StatusOr<std::vector<std::string>> not_strings =
      file_->GetStringArray("tokenizer.ggml.scores");
  EXPECT_THAT(std::string(not_strings.status().message()), HasSubstr("holds array of float32"));
  EXPECT_EQ(file_->GetFloat("tokenizer.ggml.model").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(file_->GetBool("llama.block_count").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*file_->KeyType("tokenizer.ggml.tokens"), GgufValueType::kArray);
}

TEST(GgufFileTest, LlamaSpmVocabulary) {
  absl::StatusOr<std::unique_ptr<GgufFile>> file =
      GgufFile::Open(TestDataPath("vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE((*file)->tensors().empty());
  absl::StatusOr<std::vector<std::string>> tokens = (*file)->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 32000u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[2], "</s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ((*tokens)[13], "<0x0A>");
  EXPECT_EQ((*tokens)[29871], "\xE2\x96\x81");  // "▁"
  EXPECT_EQ((*tokens)[450], "\xE2\x96\x81The");
  EXPECT_EQ((*file)->GetFloatArray("tokenizer.ggml.scores")->size(), 32000u);
  EXPECT_EQ((*file)->GetInt32Array("tokenizer.ggml.token_type")->size(), 32000u);
  EXPECT_EQ(*(*file)->GetString("tokenizer.ggml.model"), "llama");
  EXPECT_TRUE(*(*file)->GetBool("tokenizer.ggml.add_bos_token"));
}

TEST(GgufFileTest, OpenErrors) {
  absl::StatusOr<std::unique_ptr<GgufFile>> missing = GgufFile::Open("/nonexistent/model.gguf");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/model.gguf"));
  absl::StatusOr<std::unique_ptr<GgufFile>> directory = GgufFile::Open(TestDataPath("vocab"));
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(directory.status().message()), HasSubstr("not a regular file"));
  absl::StatusOr<std::unique_ptr<GgufFile>> text =
      GgufFile::Open(TestDataPath("vocab/ggml-vocab-llama-spm.gguf.inp"));
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("not a GGUF file"));
}

}  // namespace
}  // namespace lnpu::gguf
