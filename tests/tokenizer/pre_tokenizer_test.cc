#include "framework/tokenizer/pre_tokenizer.h"

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
  EXPECT_EQ(*PreTokenizerNamed("gpt2"), PreTokenizer::kGpt2);
  EXPECT_EQ(*PreTokenizerNamed("llama-bpe"), PreTokenizer::kLlama3);
  EXPECT_EQ(*PreTokenizerNamed("llama3"), PreTokenizer::kLlama3);
  EXPECT_EQ(*PreTokenizerNamed("qwen2"), PreTokenizer::kQwen2);
  EXPECT_EQ(PreTokenizerNamed("").status().code(),
            absl::StatusCode::kInvalidArgument);
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

TEST(PreTokenizerTest, WordsCoverTheText) {
  const std::string_view text = "  \t\xF0\x9F\x98\x80 'd 9\r\n";
  for (PreTokenizer pre :
       {PreTokenizer::kGpt2, PreTokenizer::kLlama3, PreTokenizer::kQwen2}) {
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
  EXPECT_EQ(ClassOf('!'), UnicodeClass::kOther);
  EXPECT_EQ(ClassOf(0x0301), UnicodeClass::kOther);   // combining acute
  EXPECT_EQ(ClassOf(0x1F600), UnicodeClass::kOther);  // 😀
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
