#include "compiler_artifacts/synthetic/random_llama.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "compiler_artifacts/gguf/gguf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/allocation_tracker.h"
#include "tests/gguf/gguf_test_util.h"

namespace lnpu::gguf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using synthetic::LlamaVocabulary;
using synthetic::MakeLlamaVocabulary;
using synthetic::RandomLlamaSpec;
using synthetic::WriteRandomLlamaGguf;
using testing::TempPath;

std::unique_ptr<GgufFile> WriteAndOpen(const RandomLlamaSpec& spec, const std::string& path) {
  absl::Status written = WriteRandomLlamaGguf(spec, path);
  EXPECT_TRUE(written.ok()) << written;
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? std::move(*file) : nullptr;
}

struct Moments {
  double mean;
  double std;
};
Moments MomentsOf(const std::vector<float>& values) {
  double sum = 0, squares = 0;
  for (float value : values) {
    sum += value;
    squares += static_cast<double>(value) * value;
  }
  const double mean = sum / values.size();
  return {mean, std::sqrt(squares / values.size() - mean * mean)};
}

TEST(RandomLlamaTest, DefaultSpecMetadataAndShapes) {
  const RandomLlamaSpec spec;
  std::unique_ptr<GgufFile> file = WriteAndOpen(spec, TempPath("default.gguf"));
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(*file->GetString("general.architecture"), "llama");
  EXPECT_TRUE(file->HasKey("general.name"));
  EXPECT_EQ(*file->GetUint("llama.context_length"), 2048u);
  EXPECT_EQ(*file->GetUint("llama.embedding_length"), 64u);
  EXPECT_EQ(*file->GetUint("llama.block_count"), 2u);
  EXPECT_EQ(*file->GetUint("llama.feed_forward_length"), 160u);
  EXPECT_EQ(*file->GetUint("llama.attention.head_count"), 8u);
  EXPECT_EQ(*file->GetUint("llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(*file->GetUint("llama.rope.dimension_count"), 8u);
  EXPECT_EQ(*file->GetFloat("llama.rope.freq_base"), 10000.0f);
  EXPECT_EQ(*file->GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(*file->GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*file->GetUint("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(*file->GetUint("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(*file->GetUint("tokenizer.ggml.unknown_token_id"), 0u);
  EXPECT_TRUE(*file->GetBool("tokenizer.ggml.add_bos_token"));

  ASSERT_EQ(file->tensors().size(), 1u + 2u * 9u + 2u);
  auto dims = [&](const std::string& name, GgmlType type) -> std::vector<uint64_t> {
    const TensorInfo* tensor = file->FindTensor(name);
    EXPECT_NE(tensor, nullptr) << name;
    if (tensor == nullptr) return {};
    EXPECT_EQ(tensor->type, type) << name;
    return tensor->dims;
  };
  constexpr GgmlType kF32 = GgmlType::kF32;
  EXPECT_THAT(dims("token_embd.weight", kF32), ElementsAre(64u, 512u));
  EXPECT_THAT(dims("output_norm.weight", kF32), ElementsAre(64u));
  EXPECT_THAT(dims("output.weight", kF32), ElementsAre(64u, 512u));
  for (const std::string prefix : {"blk.0.", "blk.1."}) {
    EXPECT_THAT(dims(prefix + "attn_norm.weight", kF32), ElementsAre(64u));
    EXPECT_THAT(dims(prefix + "attn_q.weight", kF32), ElementsAre(64u, 64u));
    EXPECT_THAT(dims(prefix + "attn_k.weight", kF32), ElementsAre(64u, 16u));
    EXPECT_THAT(dims(prefix + "attn_v.weight", kF32), ElementsAre(64u, 16u));
    EXPECT_THAT(dims(prefix + "attn_output.weight", kF32), ElementsAre(64u, 64u));
    EXPECT_THAT(dims(prefix + "ffn_norm.weight", kF32), ElementsAre(64u));
    EXPECT_THAT(dims(prefix + "ffn_gate.weight", kF32), ElementsAre(64u, 160u));
    EXPECT_THAT(dims(prefix + "ffn_up.weight", kF32), ElementsAre(64u, 160u));
    EXPECT_THAT(dims(prefix + "ffn_down.weight", kF32), ElementsAre(160u, 64u));
  }
}

TEST(RandomLlamaTest, WeightScales) {
  RandomLlamaSpec spec;
  spec.dim = 128;
  spec.n_heads = 4;
  spec.n_kv_heads = 4;
  spec.ffn_dim = 320;
  spec.n_layers = 1;
  std::unique_ptr<GgufFile> file = WriteAndOpen(spec, TempPath("scales.gguf"));
  ASSERT_NE(file, nullptr);
  auto moments = [&](const std::string& name) {
    return MomentsOf(*file->TensorToF32(*file->FindTensor(name)));
  };
  const struct {
    const char* name;
    double mean;
    double std;
  } expected[] = {
      {"token_embd.weight", 0.0, 1.0},
      {"blk.0.attn_q.weight", 0.0, 1.0 / std::sqrt(128.0)},
      {"blk.0.ffn_down.weight", 0.0, 1.0 / std::sqrt(320.0)},
      {"output.weight", 0.0, 1.0 / std::sqrt(128.0)},
      {"blk.0.attn_norm.weight", 1.0, 0.05},
      {"output_norm.weight", 1.0, 0.05},
  };
  for (const auto& tensor : expected) {
    const Moments actual = moments(tensor.name);
    EXPECT_NEAR(actual.mean, tensor.mean, 0.3 * tensor.std) << tensor.name;
    EXPECT_NEAR(actual.std, tensor.std, 0.15 * tensor.std) << tensor.name;
  }
}

// Tensors are generated row by row while the file is written: no
// allocation comes near the size of one tensor.
TEST(RandomLlamaTest, StreamsTensorsWithoutHoldingThem) {
  RandomLlamaSpec spec;
  spec.dim = 512;
  spec.ffn_dim = 1024;
  spec.n_layers = 1;
  size_t largest = 0;
  {
    testing::LargestAllocationTracker tracker;
    ASSERT_TRUE(WriteRandomLlamaGguf(spec, TempPath("streamed.gguf")).ok());
    largest = tracker.largest();
  }
  std::unique_ptr<GgufFile> file = std::move(*GgufFile::Open(TempPath("streamed.gguf")));
  const TensorInfo* ffn_up = file->FindTensor("blk.0.ffn_up.weight");
  ASSERT_NE(ffn_up, nullptr);
  EXPECT_EQ(ffn_up->bytes, uint64_t{512} * 1024 * 4);
  EXPECT_LT(largest, size_t{256} << 10);
}

TEST(RandomLlamaTest, DeterministicBySeed) {
  RandomLlamaSpec spec;
  spec.seed = 42;
  ASSERT_TRUE(WriteRandomLlamaGguf(spec, TempPath("a.gguf")).ok());
  ASSERT_TRUE(WriteRandomLlamaGguf(spec, TempPath("b.gguf")).ok());
  spec.seed = 43;
  ASSERT_TRUE(WriteRandomLlamaGguf(spec, TempPath("c.gguf")).ok());
  const std::vector<uint8_t> a = testing::ReadBytes(TempPath("a.gguf"));
  EXPECT_EQ(a, testing::ReadBytes(TempPath("b.gguf")));
  const std::vector<uint8_t> c = testing::ReadBytes(TempPath("c.gguf"));
  ASSERT_EQ(a.size(), c.size() + 0) << "only the seed in general.name and the weights differ";
  EXPECT_NE(a, c);
  std::unique_ptr<GgufFile> first = std::move(*GgufFile::Open(TempPath("a.gguf")));
  std::unique_ptr<GgufFile> other = std::move(*GgufFile::Open(TempPath("c.gguf")));
  const TensorInfo* q = first->FindTensor("blk.1.attn_q.weight");
  EXPECT_NE(*first->TensorToF32(*q), *other->TensorToF32(*other->FindTensor("blk.1.attn_q.weight")));
  // Different tensors of one model are not copies of each other.
  EXPECT_NE(*first->TensorToF32(*q), *first->TensorToF32(*first->FindTensor("blk.0.attn_q.weight")));
}

TEST(RandomLlamaTest, TiedEmbeddingsAndHalfWeights) {
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16}) {
    RandomLlamaSpec spec;
    spec.tied_embeddings = true;
    spec.weight_type = type;
    spec.rope_dim = 4;
    std::unique_ptr<GgufFile> file = WriteAndOpen(spec, TempPath("tied.gguf"));
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->FindTensor("output.weight"), nullptr);
    EXPECT_EQ(file->tensors().size(), 1u + 2u * 9u + 1u);
    EXPECT_EQ(*file->GetUint("llama.rope.dimension_count"), 4u);
    EXPECT_EQ(file->FindTensor("token_embd.weight")->type, type);
    EXPECT_EQ(file->FindTensor("blk.0.ffn_up.weight")->type, type);
    EXPECT_EQ(file->FindTensor("blk.0.ffn_norm.weight")->type, GgmlType::kF32);
    EXPECT_EQ(file->FindTensor("output_norm.weight")->type, GgmlType::kF32);
    const Moments embedding = MomentsOf(*file->TensorToF32(*file->FindTensor("token_embd.weight")));
    EXPECT_NEAR(embedding.std, 1.0, 0.05);
  }
}

TEST(RandomLlamaTest, Vocabulary) {
  RandomLlamaSpec spec;
  spec.vocab_size = 1000;
  std::unique_ptr<GgufFile> file = WriteAndOpen(spec, TempPath("vocab.gguf"));
  ASSERT_NE(file, nullptr);
  const std::vector<std::string> tokens = *file->GetStringArray("tokenizer.ggml.tokens");
  const std::vector<float> scores = *file->GetFloatArray("tokenizer.ggml.scores");
  const std::vector<int32_t> types = *file->GetInt32Array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), 1000u);
  ASSERT_EQ(scores.size(), 1000u);
  ASSERT_EQ(types.size(), 1000u);
  EXPECT_EQ(file->FindTensor("token_embd.weight")->dims[1], 1000u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(types[0], static_cast<int32_t>(TokenType::kUnknown));
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(types[1], static_cast<int32_t>(TokenType::kControl));
  EXPECT_EQ(types[2], static_cast<int32_t>(TokenType::kControl));
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    EXPECT_EQ(tokens[3 + byte], name);
    EXPECT_EQ(types[3 + byte], static_cast<int32_t>(TokenType::kByte));
  }
  EXPECT_EQ(tokens[259], "a");
  EXPECT_EQ(tokens[284], "z");
  EXPECT_EQ(tokens[285], "\xE2\x96\x81");
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size());
  for (size_t i = 259; i < tokens.size(); ++i) {
    EXPECT_EQ(types[i], static_cast<int32_t>(TokenType::kNormal)) << i;
    if (i > 259) {
      EXPECT_LT(scores[i], scores[i - 1]) << i;
    }
  }
  const std::set<std::string> pieces(tokens.begin(), tokens.end());
  for (const char* word : {"\xE2\x96\x81the", "\xE2\x96\x81Once", "\xE2\x96\x81Lily", "th"}) {
    EXPECT_TRUE(pieces.contains(word)) << word;
  }
}

TEST(RandomLlamaTest, VocabularySizes) {
  absl::StatusOr<LlamaVocabulary> smallest = MakeLlamaVocabulary(285);
  ASSERT_TRUE(smallest.ok()) << smallest.status();
  EXPECT_EQ(smallest->tokens.back(), "z");
  absl::StatusOr<LlamaVocabulary> large = MakeLlamaVocabulary(32000);
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(large->tokens.size(), 32000u);
  EXPECT_EQ(std::set<std::string>(large->tokens.begin(), large->tokens.end()).size(), 32000u);
  absl::StatusOr<LlamaVocabulary> too_small = MakeLlamaVocabulary(284);
  EXPECT_EQ(too_small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_small.status().message()), HasSubstr("284"));
}

// Every quantized weight type decodes (TensorToF32) to values with about the
// requested scale; rows that are not whole blocks fall back to F16.
TEST(RandomLlamaTest, QuantizedWeightTypes) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                        GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                        GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL,
                        GgmlType::kIQ4_XS}) {
    RandomLlamaSpec spec;
    spec.dim = 256;
    spec.n_heads = 4;
    spec.ffn_dim = 96;  // ffn_down rows: not whole K blocks
    spec.weight_type = type;
    const std::string path = TempPath("quantized.gguf");
    ASSERT_TRUE(WriteRandomLlamaGguf(spec, path).ok()) << GgmlTypeName(type);
    absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    const TensorInfo* q = (*file)->FindTensor("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, type);
    const bool super_block = GgmlBlockElements(type) == 256;
    EXPECT_EQ((*file)->FindTensor("blk.0.ffn_down.weight")->type,
              super_block ? GgmlType::kF16 : type);
    absl::StatusOr<std::vector<float>> values = (*file)->TensorToF32(*q);
    ASSERT_TRUE(values.ok()) << values.status();
    double sum = 0, sum_sq = 0;
    for (float v : *values) {
      sum += v;
      sum_sq += double{v} * v;
    }
    const double mean = sum / values->size();
    const double std = std::sqrt(sum_sq / values->size() - mean * mean);
    EXPECT_NEAR(mean, 0.0, 0.01) << GgmlTypeName(type);
    EXPECT_NEAR(std, 1.0 / 16, 0.2 / 16) << GgmlTypeName(type);
  }
}

TEST(RandomLlamaTest, Qwen2WithRealVocabularyAndLlama3Scaling) {
  RandomLlamaSpec spec;
  spec.architecture = "qwen2";
  spec.vocab_size = 0;
  spec.vocabulary_gguf = std::string(std::getenv("LNPU_TEST_DATA")) + "/vocab/ggml-vocab-qwen2.gguf";
  spec.dim = 32;
  spec.n_heads = 4;
  spec.n_layers = 1;
  spec.ffn_dim = 32;
  spec.tied_embeddings = true;
  spec.llama3_rope_factor = 8;
  const std::string path = TempPath("qwen2.gguf");
  ASSERT_TRUE(WriteRandomLlamaGguf(spec, path).ok());
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*(*file)->GetString("general.architecture"), "qwen2");
  EXPECT_EQ(*(*file)->GetUint("qwen2.vocab_size"), 151936u);
  EXPECT_EQ(*(*file)->GetString("qwen2.rope.scaling.type"), "llama3");
  EXPECT_EQ(*(*file)->GetString("tokenizer.ggml.model"), "gpt2");
  EXPECT_FALSE((*file)->GetStringArray("tokenizer.ggml.merges")->empty());
  EXPECT_NE((*file)->FindTensor("blk.0.attn_k.bias"), nullptr);
  EXPECT_EQ((*file)->FindTensor("output.weight"), nullptr);
  EXPECT_EQ((*file)->FindTensor("token_embd.weight")->dims[1], 151936u);

  spec.vocab_size = 1000;
  EXPECT_THAT(std::string(WriteRandomLlamaGguf(spec, path).message()),
              HasSubstr("differs from the 151936 tokens"));
}

TEST(RandomLlamaTest, RejectsInconsistentSpecs) {
  struct Case {
    void (*change)(RandomLlamaSpec&);
    const char* message;
  };
  const Case cases[] = {
      {[](RandomLlamaSpec& s) { s.vocab_size = 284; }, "vocab_size 284"},
      {[](RandomLlamaSpec& s) { s.dim = 60; }, "dim 60 is not a multiple of n_heads 8"},
      {[](RandomLlamaSpec& s) { s.n_kv_heads = 3; }, "n_heads 8 is not a multiple of n_kv_heads 3"},
      {[](RandomLlamaSpec& s) { s.n_layers = 0; }, "must be positive"},
      {[](RandomLlamaSpec& s) { s.rope_dim = 3; }, "rope dimension 3 must be even"},
      {[](RandomLlamaSpec& s) { s.rope_dim = 16; }, "at most head_dim 8"},
      {[](RandomLlamaSpec& s) { s.rope_theta = -1; }, "rope_theta"},
      {[](RandomLlamaSpec& s) { s.norm_eps = NAN; }, "norm_eps"},
      {[](RandomLlamaSpec& s) { s.weight_type = GgmlType::kIQ2_XXS; }, "weight_type IQ2_XXS"},
      {[](RandomLlamaSpec& s) { s.architecture = "gpt2"; }, "architecture \"gpt2\""},
      {[](RandomLlamaSpec& s) { s.llama3_rope_factor = -2; }, "llama3_rope_factor"},
      {[](RandomLlamaSpec& s) { s.dim = 65536; s.n_heads = 64; s.n_kv_heads = 64; },
       "the limit is"},
  };
  for (const Case& c : cases) {
    RandomLlamaSpec spec;
    c.change(spec);
    const std::string path = TempPath("rejected.gguf");
    absl::Status status = WriteRandomLlamaGguf(spec, path);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace lnpu::gguf
