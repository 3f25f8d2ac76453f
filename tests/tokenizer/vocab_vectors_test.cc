// The tokenizers against llama.cpp's test-tokenizer-0 vectors and the
// bundled stories260K model.
#include <optional>
#include <string>
#include <vector>

#include "compiler_artifacts/gguf/gguf_file.h"
#include "compiler_artifacts/gguf/gguf_writer.h"
#include "framework/tokenizer/byte_level_alphabet.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_temp_dir.h"
#include "tests/tokenizer/gguf_vocabulary.h"
#include "tools/common/model_tokenizer.h"

namespace lnpu::framework {
namespace {

using ::testing::ElementsAre;
using testing::ModelPath;
using testing::ReadVocabTestCases;
using testing::SharedTokenizer;
using testing::TestDataPath;

class VocabVectorsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectorsTest, EncodesExactlyAsLlamaCpp) {
  const std::string path = TestDataPath("vocab/" + GetParam());
  auto tokenizer = SharedTokenizer(path);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto cases = ReadVocabTestCases(path);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 46u);
  for (const testing::VocabTestCase& test_case : *cases) {
    auto ids = (*tokenizer)->Encode(test_case.text, /*add_bos=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, test_case.ids) << "text: \"" << test_case.text << "\"";
  }
}

TEST_P(VocabVectorsTest, DecodeInvertsEncode) {
  const std::string path = TestDataPath("vocab/" + GetParam());
  auto tokenizer = SharedTokenizer(path);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto cases = ReadVocabTestCases(path);
  ASSERT_TRUE(cases.ok()) << cases.status();
  for (const testing::VocabTestCase& test_case : *cases) {
    EXPECT_EQ((*tokenizer)->Decode(test_case.ids), test_case.text);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, VocabVectorsTest,
                         ::testing::Values("ggml-vocab-llama-spm.gguf",
                                           "ggml-vocab-qwen2.gguf",
                                           "ggml-vocab-deepseek-coder.gguf",
                                           "ggml-vocab-falcon.gguf",
                                           "ggml-vocab-mpt.gguf",
                                           "ggml-vocab-refact.gguf"));

// Where a GGUF file does not say whether prompts start with BOS, the
// tokenizer family decides, as in llama.cpp: Llama 3 and Tekken vocabularies
// get BOS, other byte-level BPE vocabularies do not.
TEST(GgufTokenizerDefaultsTest, AddBosFollowsThePreTokenizerWhenUnset) {
  const struct {
    const char* pre;
    std::optional<bool> add_bos_key;
    bool add_bos;
  } cases[] = {
      {"llama-bpe", std::nullopt, true}, {"llama3", std::nullopt, true},
      {"tekken", std::nullopt, true},    {"qwen2", std::nullopt, false},
      {"gpt-2", std::nullopt, false},    {"llama-bpe", false, false},
      {"qwen2", true, true},
  };
  for (const auto& c : cases) {
    gguf::GgufWriter writer;
    writer.SetString("tokenizer.ggml.model", "gpt2");
    writer.SetString("tokenizer.ggml.pre", c.pre);
    std::vector<std::string> tokens;
    for (int byte = 0; byte < 256; ++byte) {
      tokens.emplace_back(ByteLevelChar(static_cast<uint8_t>(byte)));
    }
    tokens.push_back("ab");
    tokens.push_back("<|begin_of_text|>");
    writer.SetStringArray("tokenizer.ggml.tokens", tokens);
    writer.SetStringArray("tokenizer.ggml.merges", {"a b"});
    writer.SetUint32("tokenizer.ggml.bos_token_id", 257);
    if (c.add_bos_key.has_value()) {
      writer.SetBool("tokenizer.ggml.add_bos_token", *c.add_bos_key);
    }
    const std::string path = lnpu::testing::TestTempPath("defaults.gguf");
    ASSERT_TRUE(writer.Write(path).ok());
    auto file = gguf::GgufFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    auto model = tools::ModelTokenizerFromGguf(**file);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->vocabulary.add_bos, c.add_bos) << c.pre;
    EXPECT_EQ(model->vocabulary.bos_id, 257) << c.pre;
  }
}

TEST(Stories260KTest, EncodesThePromptWithBos) {
  auto tokenizer = SharedTokenizer(ModelPath("stories260K.gguf"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto ids = (*tokenizer)->Encode("Once upon a time", /*add_bos=*/true);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(1, 403, 407, 261, 378));
  EXPECT_EQ((*tokenizer)->Decode(*ids), "Once upon a time");
  EXPECT_EQ((*tokenizer)->bos_id(), 1);
  EXPECT_EQ((*tokenizer)->eos_id(), 2);
  EXPECT_EQ((*tokenizer)->vocab_size(), 512);
  EXPECT_TRUE((*tokenizer)->IsEndOfGeneration(2));
  EXPECT_FALSE((*tokenizer)->IsEndOfGeneration(1));
}

TEST(Stories260KTest, RoundTripsTheGreedyContinuation) {
  auto tokenizer = SharedTokenizer(ModelPath("stories260K.gguf"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She loved to "
      "play outside in the park.";
  auto ids = (*tokenizer)->Encode(story, /*add_bos=*/true);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->front(), 1);
  // A 512-token vocabulary spells this in well under one token per byte.
  EXPECT_LT(ids->size(), story.size() / 2);
  EXPECT_EQ((*tokenizer)->Decode(*ids), story);
}

}  // namespace
}  // namespace lnpu::framework
