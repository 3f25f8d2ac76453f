#include "framework/tokenizer/streaming_detokenizer.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "framework/tokenizer/utf8.h"
#include "tests/tokenizer/gguf_vocabulary.h"
#include "tests/tokenizer/random_text.h"

namespace lnpu::framework {
namespace {

using testing::SharedTokenizer;
using testing::TestDataPath;

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// llama-spm: <0xHH> is token 3 + 0xHH.
constexpr int32_t ByteToken(int byte) { return 3 + byte; }

const Tokenizer& LlamaSpm() {
  auto tokenizer =
      SharedTokenizer(TestDataPath("vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return **tokenizer;
}

// Everything a detokenizer emits for `ids`, piece by piece, with Flush last.
std::vector<std::string> Stream(const Tokenizer& tokenizer,
                                const std::vector<int32_t>& ids,
                                StreamingDetokenizer::Start start =
                                    StreamingDetokenizer::Start::kStartOfText) {
  StreamingDetokenizer detokenizer(tokenizer, start);
  std::vector<std::string> pieces;
  for (const int32_t id : ids) pieces.push_back(detokenizer.Push(id));
  pieces.push_back(detokenizer.Flush());
  return pieces;
}

std::string Join(const std::vector<std::string>& pieces) {
  std::string text;
  for (const std::string& piece : pieces) text += piece;
  return text;
}

class StreamingRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingRoundTripTest, EmitsWholeCharactersThatJoinToDecode) {
  auto tokenizer = SharedTokenizer(TestDataPath("vocab/" + GetParam()));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const Tokenizer& t = **tokenizer;
  const bool sentencepiece =
      t.vocabulary().type == TokenizerType::kSentencePiece;
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const std::string text = testing::RandomUtf8(rng, 30, !sentencepiece);
    auto ids = t.Encode(text, /*add_bos=*/i % 2 == 0);
    ASSERT_TRUE(ids.ok()) << ids.status();
    const std::vector<std::string> pieces = Stream(t, *ids);
    for (const std::string& piece : pieces) {
      ASSERT_TRUE(utf8::Validate(piece).ok()) << "piece of \"" << text << "\"";
    }
    EXPECT_EQ(pieces.back(), "");
    ASSERT_EQ(Join(pieces), t.Decode(*ids));
    ASSERT_EQ(Join(pieces), text);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, StreamingRoundTripTest,
                         ::testing::Values("ggml-vocab-llama-spm.gguf",
                                           "ggml-vocab-qwen2.gguf"));

TEST(StreamingDetokenizerTest, HoldsACharacterSplitAcrossByteTokens) {
  const Tokenizer& t = LlamaSpm();
  // 𝄞 U+1D11E is F0 9D 84 9E; llama-spm spells it with byte tokens.
  auto ids = t.Encode("\xF0\x9D\x84\x9E", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ::testing::ElementsAre(29871, ByteToken(0xF0),
                                           ByteToken(0x9D), ByteToken(0x84),
                                           ByteToken(0x9E)));
  EXPECT_THAT(Stream(t, *ids), ::testing::ElementsAre(
                                   "", "", "", "", "\xF0\x9D\x84\x9E", ""));
}

TEST(StreamingDetokenizerTest, ReplacesIllFormedBytes) {
  const Tokenizer& t = LlamaSpm();
  // A byte that never starts a character: replaced at once.
  EXPECT_THAT(Stream(t, {ByteToken(0xFF), ByteToken('A')}),
              ::testing::ElementsAre(kReplacement, "A", ""));
  // A started character that the next byte breaks: one U+FFFD for the
  // broken prefix, then the byte itself.
  EXPECT_THAT(Stream(t, {ByteToken(0xE2), ByteToken(0x96), ByteToken('A')}),
              ::testing::ElementsAre("", "", std::string(kReplacement) + "A",
                                     ""));
  // An incomplete character at the end: Flush gives one U+FFFD.
  EXPECT_THAT(Stream(t, {ByteToken(0xF0), ByteToken(0x9D)}),
              ::testing::ElementsAre("", "", kReplacement));
  // A surrogate ED A0 80 has no well-formed prefix longer than ED: one
  // U+FFFD per byte.
  const std::string three_replacements = std::string(kReplacement) +
                                         std::string(kReplacement) +
                                         std::string(kReplacement);
  EXPECT_EQ(
      Join(Stream(t, {ByteToken(0xED), ByteToken(0xA0), ByteToken(0x80)})),
      three_replacements);
}

TEST(StreamingDetokenizerTest, LeadingSpaceRuleMatchesDecode) {
  const Tokenizer& t = LlamaSpm();
  // 1 = <s>, 15043 = ▁Hello, 3186 = ▁world.
  EXPECT_THAT(Stream(t, {1, 15043, 3186}),
              ::testing::ElementsAre("", "Hello", " world", ""));
  EXPECT_THAT(Stream(t, {15043, 3186}),
              ::testing::ElementsAre("Hello", " world", ""));
  EXPECT_EQ(Join(Stream(t, {15043, 3186})),
            t.Decode(std::vector<int32_t>{15043, 3186}));
  // A continuation keeps the space that separates it from earlier text.
  EXPECT_THAT(
      Stream(t, {15043, 3186}, StreamingDetokenizer::Start::kContinuation),
      ::testing::ElementsAre(" Hello", " world", ""));
}

TEST(StreamingDetokenizerTest, ControlTokensPrintNothing) {
  const Tokenizer& t = LlamaSpm();
  EXPECT_THAT(Stream(t, {15043, 2, 1}),
              ::testing::ElementsAre("Hello", "", "", ""));
}

}  // namespace
}  // namespace lnpu::framework
