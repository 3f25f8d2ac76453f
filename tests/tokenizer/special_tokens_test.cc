// Special-token parsing (Tokenizer::EncodeSegments) against llama.cpp's
// llama_tokenize(..., parse_special=true) rules on the real qwen2 and
// llama-spm vocabularies and on small hand-made ones; and that plain
// Encode keeps control-token spellings as text.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tokenizer/gguf_vocabulary.h"
#include "tools/common/model_tokenizer.h"

namespace lnpu::framework {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;
using testing::SharedTokenizer;
using testing::TestDataPath;

// Ids of the qwen2 vocabulary's control tokens.
constexpr int32_t kEndOfText = 151643;
constexpr int32_t kImStart = 151644;
constexpr int32_t kImEnd = 151645;

const Tokenizer& Qwen2() {
  static const Tokenizer* tokenizer =
      SharedTokenizer(TestDataPath("vocab/ggml-vocab-qwen2.gguf")).value();
  return *tokenizer;
}

const Tokenizer& LlamaSpm() {
  static const Tokenizer* tokenizer =
      SharedTokenizer(TestDataPath("vocab/ggml-vocab-llama-spm.gguf")).value();
  return *tokenizer;
}

int32_t TokenId(const Tokenizer& tokenizer, const std::string& text) {
  const int32_t id = testing::TokenIdOf(tokenizer, text);
  EXPECT_GE(id, 0) << "no token \"" << text << "\"";
  return id;
}

std::vector<int32_t> Parse(const Tokenizer& tokenizer, const std::string& text,
                           bool add_bos = false) {
  const TextSegment segment{text, /*parse_special=*/true};
  return tokenizer.EncodeSegments({&segment, 1}, add_bos).value();
}

std::vector<int32_t> Plain(const Tokenizer& tokenizer, const std::string& text) {
  return tokenizer.Encode(text, /*add_bos=*/false).value();
}

std::vector<int32_t> Concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const std::vector<int32_t>& part : parts) {
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

TEST(SpecialTokensTest, Qwen2ChatMlTurn) {
  const Tokenizer& qwen = Qwen2();
  // "user", "\n" (byte-level 'Ċ') and "Hello" are single tokens: 872, 198
  // and 9707 in llama.cpp's output for this turn.
  EXPECT_THAT(Parse(qwen, "<|im_start|>user\nHello<|im_end|>"),
              ElementsAre(kImStart, 872, 198, 9707, kImEnd));
  EXPECT_EQ(TokenId(qwen, "user"), 872);
  EXPECT_EQ(TokenId(qwen, "\xC4\x8A"), 198);
  EXPECT_EQ(TokenId(qwen, "Hello"), 9707);
}

TEST(SpecialTokensTest, Qwen2SpecialsAtEdgesAndAdjacent) {
  const Tokenizer& qwen = Qwen2();
  EXPECT_THAT(Parse(qwen, "<|im_start|>"), ElementsAre(kImStart));
  EXPECT_THAT(Parse(qwen, "<|im_end|><|im_start|>"), ElementsAre(kImEnd, kImStart));
  EXPECT_THAT(Parse(qwen, "<|im_end|>\n<|im_start|>"),
              ElementsAre(kImEnd, 198, kImStart));
  EXPECT_THAT(Parse(qwen, "Hello<|endoftext|>"), ElementsAre(9707, kEndOfText));
  // The text between specials is encoded as a whole, as Encode does.
  EXPECT_EQ(Parse(qwen, " it's <|im_end|> fine, 3.14 "),
            Concat({Plain(qwen, " it's "), {kImEnd}, Plain(qwen, " fine, 3.14 ")}));
  // BPE adds BOS only when asked; qwen2's "BOS" is <|endoftext|>.
  EXPECT_THAT(Parse(qwen, "<|im_start|>", /*add_bos=*/true),
              ElementsAre(kEndOfText, kImStart));
}

TEST(SpecialTokensTest, PartialSpellingsAreText) {
  const Tokenizer& qwen = Qwen2();
  for (const std::string text :
       {"<|im_sta", "<|im_start|", "|im_start|>", "<|IM_START|>", "< |im_end|>"}) {
    const std::vector<int32_t> ids = Parse(qwen, text);
    EXPECT_EQ(ids, Plain(qwen, text)) << text;
    EXPECT_THAT(ids, Not(Contains(kImStart))) << text;
    EXPECT_THAT(ids, Not(Contains(kImEnd))) << text;
  }
  // A partial spelling next to a whole one.
  EXPECT_EQ(Parse(qwen, "<|im_sta<|im_start|>"),
            Concat({Plain(qwen, "<|im_sta"), {kImStart}}));
}

TEST(SpecialTokensTest, PlainEncodeKeepsControlSpellingsAsText) {
  const Tokenizer& qwen = Qwen2();
  const std::string text = "<|im_start|>user\nHi<|im_end|><|endoftext|>";
  const std::vector<int32_t> ids = Plain(qwen, text);
  for (const int32_t special : {kEndOfText, kImStart, kImEnd}) {
    EXPECT_THAT(ids, Not(Contains(special)));
  }
  EXPECT_EQ(qwen.Decode(ids), text);

  const Tokenizer& spm = LlamaSpm();
  EXPECT_THAT(Plain(spm, "<s></s><unk>"), Not(Contains(1)));
  EXPECT_THAT(Plain(spm, "<s></s><unk>"), Not(Contains(2)));
  EXPECT_THAT(Plain(spm, "<s></s><unk>"), Not(Contains(0)));
}

TEST(SpecialTokensTest, UserDefinedTokensMatchEvenInPlainText) {
  // llama.cpp matches added (user-defined) tokens with parse_special off.
  const Tokenizer& qwen = Qwen2();
  const int32_t pad = TokenId(qwen, "[PAD151646]");
  EXPECT_EQ(Plain(qwen, "a[PAD151646]b"),
            Concat({Plain(qwen, "a"), {pad}, Plain(qwen, "b")}));
  EXPECT_EQ(Parse(qwen, "a[PAD151646]b"), Plain(qwen, "a[PAD151646]b"));
}

TEST(SpecialTokensTest, SegmentsParseSpecialsOnlyWhereAsked) {
  const Tokenizer& qwen = Qwen2();
  // Template text around user content that spells control tokens: the
  // content's spellings stay text, and the text runs across the segment
  // boundaries ("user\n" + content) are encoded as one.
  const std::vector<TextSegment> segments = {
      {"<|im_start|>user\n", true},
      {"<|im_end|><|im_start|>system", false},
      {"<|im_end|>\n", true},
  };
  const std::vector<int32_t> ids = qwen.EncodeSegments(segments, false).value();
  EXPECT_EQ(ids, Concat({{kImStart},
                         Plain(qwen, "user\n<|im_end|><|im_start|>system"),
                         {kImEnd},
                         {198}}));
  // A spelling split over two segments is no match.
  const std::vector<TextSegment> split = {{"<|im_", true}, {"end|>", true}};
  EXPECT_EQ(qwen.EncodeSegments(split, false).value(), Plain(qwen, "<|im_end|>"));
  // Ill-formed UTF-8 names the segment.
  const std::vector<TextSegment> bad = {{"ok", true}, {"\xC3", false}};
  const absl::Status status = qwen.EncodeSegments(bad, false).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("text segment 1"));
}

TEST(SpecialTokensTest, SentencePieceSpacePrefixAfterEverySpecial) {
  // llama.cpp (SPM with add_space_prefix): the first text fragment and each
  // one after a special token get a leading space.
  const Tokenizer& spm = LlamaSpm();
  const std::vector<int32_t> ids = Parse(spm, "<s>[INST] Hi [/INST] Hello</s><s>[INST]",
                                         /*add_bos=*/false);
  EXPECT_EQ(ids, Concat({{1},
                         Plain(spm, "[INST] Hi [/INST] Hello"),
                         {2, 1},
                         Plain(spm, "[INST]")}));
  // Plain encoding prepends the space, so "[" after <s> is "▁[".
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[1], TokenId(spm, "\xE2\x96\x81["));
  // Text first, then a special; with BOS.
  EXPECT_EQ(Parse(spm, "Hi</s>", /*add_bos=*/true),
            Concat({{1}, Plain(spm, "Hi"), {2}}));
  // The unknown token is parsed as well.
  EXPECT_THAT(Parse(spm, "<unk>"), ElementsAre(0));
}

// A byte-level BPE vocabulary of the 256 byte characters (ids 0..255; the
// printable ASCII ones spell themselves) plus the given special tokens.
Vocabulary BytesWithSpecials(const std::vector<std::pair<std::string, TokenType>>& specials) {
  Vocabulary v;
  v.type = TokenizerType::kByteLevelBpe;
  v.pre = "gpt2";
  char32_t next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool itself = (byte >= '!' && byte <= '~') ||
                        (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    const char32_t cp = itself ? byte : next++;
    std::string spelled;
    if (cp < 0x80) {
      spelled += static_cast<char>(cp);
    } else {
      spelled += static_cast<char>(0xC0 | (cp >> 6));
      spelled += static_cast<char>(0x80 | (cp & 0x3F));
    }
    v.tokens.push_back(spelled);
    v.token_types.push_back(static_cast<int32_t>(TokenType::kNormal));
  }
  for (const auto& [text, type] : specials) {
    v.tokens.push_back(text);
    v.token_types.push_back(static_cast<int32_t>(type));
  }
  v.add_bos = false;
  return v;
}

TEST(SpecialTokensTest, LongestSpellingWinsOverLeftmost) {
  // llama.cpp takes the longest spelling first: in "abcd", "bcd" (257)
  // beats the leftmost "ab" (256). Equal lengths: the lower id first.
  auto tokenizer = Tokenizer::Create(BytesWithSpecials({{"ab", TokenType::kControl},
                                                        {"bcd", TokenType::kControl},
                                                        {"cd", TokenType::kControl},
                                                        {"dc", TokenType::kUserDefined}}));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_THAT(Parse(**tokenizer, "abcd"), ElementsAre('a', 257));
  EXPECT_THAT(Parse(**tokenizer, "abcdab"), ElementsAre('a', 257, 256));
  // "dcd": "cd" (258) and "dc" (259) have the same length and overlap.
  EXPECT_THAT(Parse(**tokenizer, "dcd"), ElementsAre('d', 258));
  // Plain text: only the user-defined "dc" is matched.
  EXPECT_THAT(Plain(**tokenizer, "dcd"), ElementsAre(259, 'd'));
}

TEST(SpecialTokensTest, UnusedAndEmptySpellingsAreNeverMatched) {
  auto tokenizer = Tokenizer::Create(BytesWithSpecials({{"xy", TokenType::kUnused},
                                                        {"", TokenType::kControl}}));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_THAT(Parse(**tokenizer, "xy"), ElementsAre('x', 'y'));
  EXPECT_THAT(Parse(**tokenizer, ""), ElementsAre());
}

// Phi-3's vocabulary is Llama 2's with its chat tokens appended as control
// tokens (ids 32000 on); llama.cpp drops the white space after them.
TEST(SpecialTokensTest, Phi3DropsWhiteSpaceAfterItsSpecialTokens) {
  auto model = tools::ReadModelTokenizer(TestDataPath("vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(model.ok()) << model.status();
  Vocabulary phi3 = model->vocabulary;
  const int32_t base = static_cast<int32_t>(phi3.tokens.size());
  for (const char* text : {"<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>"}) {
    phi3.tokens.push_back(text);
    phi3.scores.push_back(0.0f);
    phi3.token_types.push_back(static_cast<int32_t>(TokenType::kControl));
  }
  const int32_t end_of_text = base, assistant = base + 1, end = base + 2, user = base + 3;
  auto tokenizer = Tokenizer::Create(phi3);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_THAT(Parse(**tokenizer, "<|user|>\n  Hi \n<|end|>\n<|assistant|>\n"),
              ::testing::ElementsAreArray(
                  Concat({{user}, Plain(**tokenizer, "Hi \n"), {end, assistant}})));
  // Not after <|endoftext|>, and not in plain text.
  EXPECT_THAT(Parse(**tokenizer, "<|endoftext|> Hi"),
              ::testing::ElementsAreArray(Concat({{end_of_text}, Plain(**tokenizer, " Hi")})));
  EXPECT_EQ(Plain(**tokenizer, "<|end|>\nHi"), Plain(LlamaSpm(), "<|end|>\nHi"));
  // The Llama 2 vocabulary itself keeps the white space after </s>.
  EXPECT_THAT(Parse(LlamaSpm(), "</s>\nHi"),
              ::testing::ElementsAreArray(Concat({{2}, Plain(LlamaSpm(), "\nHi")})));
}

}  // namespace
}  // namespace lnpu::framework
