#include "framework/tokenizer/pre_tokenizer.h"

#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "framework/tokenizer/unicode_classes.h"

namespace lnpu::framework {
namespace {

using ::testing::ElementsAre;

std::vector<std::string_view> Split(PreTokenizer pre, std::string_view text) {
  return SplitWords(pre, text);
}

TEST(PreTokenizerTest, NamesMapToPreTokenizers) {
  const struct {
    const char* name;
    PreTokenizer pre_tokenizer;
  } cases[] = {
      {"gpt2", PreTokenizer::kGpt2},
      {"gpt-2", PreTokenizer::kGpt2},
      {"mpt", PreTokenizer::kGpt2},
      {"starcoder", PreTokenizer::kStarCoder},
      {"refact", PreTokenizer::kStarCoder},
      {"command-r", PreTokenizer::kStarCoder},
      {"smollm", PreTokenizer::kStarCoder},
      {"falcon", PreTokenizer::kFalcon},
      {"llama-bpe", PreTokenizer::kLlama3},
      {"llama3", PreTokenizer::kLlama3},
      {"llama-v3", PreTokenizer::kLlama3},
      {"qwen2", PreTokenizer::kQwen2},
      {"qwen35", PreTokenizer::kQwen35},
      {"deepseek-llm", PreTokenizer::kDeepSeekLlm},
      {"deepseek-coder", PreTokenizer::kDeepSeekCoder},
      {"deepseek-v3", PreTokenizer::kDeepSeekV3},
      {"tekken", PreTokenizer::kTekken},
      {"gpt-4o", PreTokenizer::kGpt4o},
  };
  for (const auto& c : cases) {
    absl::StatusOr<PreTokenizer> pre = PreTokenizerNamed(c.name);
    ASSERT_TRUE(pre.ok()) << c.name << ": " << pre.status();
    EXPECT_EQ(*pre, c.pre_tokenizer) << c.name;
  }
  for (const char* bad : {"", "GPT2", "bloom"}) {
    absl::StatusOr<PreTokenizer> pre = PreTokenizerNamed(bad);
    EXPECT_EQ(pre.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(pre.status().message()),
                ::testing::HasSubstr("\"gpt-2\", \"phi-2\""));
  }
  EXPECT_TRUE(WholeWordTokensFirst(PreTokenizer::kLlama3));
  EXPECT_TRUE(WholeWordTokensFirst(PreTokenizer::kTekken));
  EXPECT_FALSE(WholeWordTokensFirst(PreTokenizer::kQwen2));
  EXPECT_FALSE(WholeWordTokensFirst(PreTokenizer::kGpt4o));
}

TEST(PreTokenizerTest, Gpt2) {
  EXPECT_THAT(Split(PreTokenizer::kGpt2, "Hello world's  test 12345!!\n"),
              ElementsAre("Hello", " world", "'s", " ", " test", " 12345",
                          "!!", "\n"));
  // Contractions are case-sensitive; a space joins only a following word.
  EXPECT_THAT(Split(PreTokenizer::kGpt2, "I'LL  go"),
              ElementsAre("I", "'", "LL", " ", " go"));
  // ½ is a number, é a letter, U+3000 white space.
  EXPECT_THAT(Split(PreTokenizer::kGpt2, "ab\xC2\xBD \xC3\xA9\xE3\x80\x80x"),
              ElementsAre("ab", "\xC2\xBD", " \xC3\xA9", "\xE3\x80\x80", "x"));
}

TEST(PreTokenizerTest, Llama3) {
  EXPECT_THAT(Split(PreTokenizer::kLlama3, "I'LL pay 1234567 $5"),
              ElementsAre("I", "'LL", " pay", " ", "123", "456", "7", " $",
                          "5"));
  // A punctuation run takes the newlines after it; space runs end at their
  // last newline; a run before a word leaves one space to it.
  EXPECT_THAT(Split(PreTokenizer::kLlama3, "a.\n\n \n  b   "),
              ElementsAre("a", ".\n\n", " \n", " ", " b", "   "));
  // A non-letter, non-newline character prefixes a word.
  EXPECT_THAT(Split(PreTokenizer::kLlama3, "(x\ny"),
              ElementsAre("(x", "\n", "y"));
}

TEST(PreTokenizerTest, Qwen2SplitsDigitsSingly) {
  EXPECT_THAT(Split(PreTokenizer::kQwen2, "x 123"),
              ElementsAre("x", " ", "1", "2", "3"));
}

TEST(PreTokenizerTest, Qwen35KeepsMarksInWords) {
  // e, COMBINING ACUTE ACCENT, x.
  EXPECT_THAT(Split(PreTokenizer::kQwen35, "e\xCC\x81x 12"),
              ElementsAre("e\xCC\x81x", " ", "1", "2"));
  EXPECT_THAT(Split(PreTokenizer::kQwen2, "e\xCC\x81x"),
              ElementsAre("e", "\xCC\x81x"));
}

TEST(PreTokenizerTest, StarCoderSplitsDigitsFirst) {
  EXPECT_THAT(Split(PreTokenizer::kStarCoder, "x 123ab"),
              ElementsAre("x", " ", "1", "2", "3", "ab"));
}

TEST(PreTokenizerTest, Falcon) {
  // Punctuation runs first, then GPT-2 words, then three-digit groups.
  EXPECT_THAT(Split(PreTokenizer::kFalcon, "a, b!! 12345 c"),
              ElementsAre("a", ",", " b", "!!", " ", "123", "45", " c"));
}

TEST(PreTokenizerTest, DeepSeekCoder) {
  EXPECT_THAT(Split(PreTokenizer::kDeepSeekCoder, "Hi, 42\nx"),
              ElementsAre("Hi", ",", " ", "4", "2", "\n", "x"));
}

TEST(PreTokenizerTest, DeepSeekLlm) {
  EXPECT_THAT(
      Split(PreTokenizer::kDeepSeekLlm, "Hello, \xE4\xB8\x96\xE7\x95\x8C 123\n"),
      ElementsAre("Hello", ",", " ", "\xE4\xB8\x96\xE7\x95\x8C", " ", "123",
                  "\n"));
}

TEST(PreTokenizerTest, DeepSeekV3) {
  EXPECT_THAT(
      Split(PreTokenizer::kDeepSeekV3,
            "abc 1234 \xE6\x97\xA5\xE6\x9C\xAC x.y"),
      ElementsAre("abc", " ", "123", "4", " ", "\xE6\x97\xA5\xE6\x9C\xAC",
                  " x", ".y"));
}

TEST(PreTokenizerTest, TekkenSplitsAtCaseChanges) {
  EXPECT_THAT(Split(PreTokenizer::kTekken, "HelloWorld ABCdef x/y\n"),
              ElementsAre("Hello", "World", " ABCdef", " x", "/y", "\n"));
  EXPECT_THAT(Split(PreTokenizer::kTekken, "x12 a!!/\n"),
              ElementsAre("x", "1", "2", " a", "!!/\n"));
}

TEST(PreTokenizerTest, Gpt4oKeepsContractionsAndDigitTriples) {
  EXPECT_THAT(Split(PreTokenizer::kGpt4o, "I'm HAPPYdog 12345"),
              ElementsAre("I'm", " HAPPYdog", " ", "123", "45"));
}

TEST(PreTokenizerTest, Gemma4SplitsNewlineRuns) {
  EXPECT_THAT(Split(PreTokenizer::kGemma4, "a b\n\ncd\n"),
              ElementsAre("a b", "\n\n", "cd", "\n"));
  EXPECT_FALSE(UsesByteLevelAlphabet(PreTokenizer::kGemma4));
  EXPECT_TRUE(UsesByteLevelAlphabet(PreTokenizer::kGpt2));
}

TEST(PreTokenizerTest, WordsCoverTheText) {
  const std::string_view text =
      "  \t\xF0\x9F\x98\x80 'd 9\r\n~Ab,c 1234\xE6\x97\xA5\xE3\x80\x80x  ";
  for (PreTokenizer pre :
       {PreTokenizer::kGpt2, PreTokenizer::kStarCoder, PreTokenizer::kFalcon,
        PreTokenizer::kLlama3, PreTokenizer::kQwen2, PreTokenizer::kQwen35,
        PreTokenizer::kDeepSeekLlm, PreTokenizer::kDeepSeekCoder,
        PreTokenizer::kDeepSeekV3, PreTokenizer::kTekken,
        PreTokenizer::kGpt4o, PreTokenizer::kGemma4}) {
    std::string joined;
    for (std::string_view word : Split(pre, text)) {
      EXPECT_FALSE(word.empty());
      joined += word;
    }
    EXPECT_EQ(joined, text);
  }
  EXPECT_TRUE(Split(PreTokenizer::kGpt2, "").empty());
}

TEST(UnicodeClassesTest, LettersNumbersAndWhiteSpace) {
  EXPECT_EQ(ClassOf('a'), UnicodeClass::kLetter);
  EXPECT_EQ(ClassOf(U'ж'), UnicodeClass::kLetter);
  EXPECT_EQ(ClassOf(U'日'), UnicodeClass::kLetter);
  EXPECT_EQ(ClassOf('7'), UnicodeClass::kNumber);
  EXPECT_EQ(ClassOf(0x0663), UnicodeClass::kNumber);  // Arabic-Indic 3
  EXPECT_EQ(ClassOf(0x00BD), UnicodeClass::kNumber);  // ½
  EXPECT_EQ(ClassOf(0x0301), UnicodeClass::kMark);    // combining acute
  EXPECT_EQ(ClassOf('!'), UnicodeClass::kPunctuation);
  EXPECT_EQ(ClassOf(0x3002), UnicodeClass::kPunctuation);  // 。
  EXPECT_EQ(ClassOf('~'), UnicodeClass::kSymbol);
  EXPECT_EQ(ClassOf(0x20AC), UnicodeClass::kSymbol);  // €
  EXPECT_EQ(ClassOf(0x1F600), UnicodeClass::kSymbol);  // 😀
  EXPECT_EQ(ClassOf(0x0007), UnicodeClass::kOther);    // BEL
  EXPECT_EQ(ClassOf(0x200B), UnicodeClass::kOther);    // zero width space
  EXPECT_EQ(ClassOf(0x10FFFF), UnicodeClass::kOther);
  EXPECT_EQ(ClassOf(0x110000), UnicodeClass::kOther);
  EXPECT_TRUE(IsWhiteSpace(' '));
  EXPECT_TRUE(IsWhiteSpace('\r'));
  EXPECT_TRUE(IsWhiteSpace(0x3000));
  EXPECT_TRUE(IsWhiteSpace(0x200A));
  EXPECT_FALSE(IsWhiteSpace(0x200B));  // zero width space is not
  EXPECT_FALSE(IsWhiteSpace(0x1C));
}

}  // namespace
}  // namespace lnpu::framework
