// Tokenizer::Create validation, Encode / Decode / TokenBytes contracts, and
// round-trip properties on the bundled vocabularies.
#include "framework/tokenizer/tokenizer.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tokenizer/gguf_vocabulary.h"
#include "tests/tokenizer/random_text.h"

namespace lnpu::framework {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::SharedTokenizer;
using testing::TestDataPath;

constexpr int32_t kNormal = static_cast<int32_t>(TokenType::kNormal);
constexpr int32_t kControl = static_cast<int32_t>(TokenType::kControl);
constexpr int32_t kUnknown = static_cast<int32_t>(TokenType::kUnknown);
constexpr int32_t kByte = static_cast<int32_t>(TokenType::kByte);

void AddToken(Vocabulary& v, std::string text, int32_t type, float score) {
  v.tokens.push_back(std::move(text));
  v.token_types.push_back(type);
  v.scores.push_back(score);
}

// <unk> <s> </s>, the 256 byte tokens (ids 3..258), then a few pieces.
Vocabulary SmallSentencePiece() {
  Vocabulary v;
  v.type = TokenizerType::kSentencePiece;
  AddToken(v, "<unk>", kUnknown, 0);
  AddToken(v, "<s>", kControl, 0);
  AddToken(v, "</s>", kControl, 0);
  for (int byte = 0; byte < 256; ++byte) {
    AddToken(v, absl::StrFormat("<0x%02X>", byte), kByte, 0);
  }
  AddToken(v, "\xE2\x96\x81", kNormal, -1);        // 259 "▁"
  AddToken(v, "a", kNormal, -2);                   // 260
  AddToken(v, "b", kNormal, -2);                   // 261
  AddToken(v, "\xE2\x96\x81" "a", kNormal, -3);    // 262 "▁a"
  AddToken(v, "ab", kNormal, -1.5f);               // 263
  AddToken(v, "\xE2\x96\x81" "ab", kNormal, -4);   // 264 "▁ab"
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

// The 256 byte characters (ids 0..255 in byte order) and one merge.
Vocabulary SmallByteLevelBpe() {
  Vocabulary v;
  v.type = TokenizerType::kByteLevelBpe;
  v.pre = "gpt2";
  // GPT-2's bytes_to_unicode, written out independently of the library.
  char32_t next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    std::string spelled;
    const bool itself = (byte >= '!' && byte <= '~') ||
                        (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    const char32_t cp = itself ? byte : next++;
    if (cp < 0x80) {
      spelled += static_cast<char>(cp);
    } else {
      spelled += static_cast<char>(0xC0 | (cp >> 6));
      spelled += static_cast<char>(0x80 | (cp & 0x3F));
    }
    v.tokens.push_back(spelled);
    v.token_types.push_back(kNormal);
  }
  v.tokens.push_back("ab");  // 256
  v.token_types.push_back(kNormal);
  v.tokens.push_back("<|endoftext|>");  // 257
  v.token_types.push_back(kControl);
  v.merges = {"a b"};
  v.eos_id = 257;
  v.add_bos = false;
  v.add_space_prefix = false;
  return v;
}

absl::Status CreateStatus(Vocabulary v) {
  return Tokenizer::Create(std::move(v)).status();
}

void ExpectRejected(Vocabulary v, const std::string& message_part) {
  const absl::Status status = CreateStatus(std::move(v));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(message_part));
}

TEST(TokenizerCreateTest, AcceptsTheSmallVocabularies) {
  EXPECT_TRUE(CreateStatus(SmallSentencePiece()).ok());
  EXPECT_TRUE(CreateStatus(SmallByteLevelBpe()).ok());
}

TEST(TokenizerCreateTest, RejectsInconsistentSentencePieceVocabularies) {
  ExpectRejected(Vocabulary{}, "no tokens");

  Vocabulary v = SmallSentencePiece();
  v.token_types.pop_back();
  ExpectRejected(v, "token types");

  v = SmallSentencePiece();
  v.scores.clear();
  ExpectRejected(v, "scores");

  v = SmallSentencePiece();
  v.scores[260] = std::numeric_limits<float>::quiet_NaN();
  ExpectRejected(v, "token 260 has the non-finite score");

  v = SmallSentencePiece();
  v.token_types[260] = 7;
  ExpectRejected(v, "token 260 has type 7");

  v = SmallSentencePiece();
  v.tokens[3] = "<0xG0>";
  ExpectRejected(v, "byte token 3");

  v = SmallSentencePiece();
  v.eos_id = 265;
  ExpectRejected(v, "eos_id is 265");

  v = SmallSentencePiece();
  v.pad_id = -2;
  ExpectRejected(v, "pad_id is -2");

  v = SmallSentencePiece();
  v.bos_id = -1;
  ExpectRejected(v, "add_bos is set but bos_id is -1");

  v = SmallSentencePiece();
  v.add_eos = true;
  v.eos_id = -1;
  ExpectRejected(v, "add_eos is set but eos_id is -1");

  // A missing byte token is fine while unk_id can stand in for it...
  v = SmallSentencePiece();
  v.tokens[3 + 0x41] = "A";
  v.token_types[3 + 0x41] = kNormal;
  EXPECT_TRUE(CreateStatus(v).ok());
  // ... but not without one.
  v.unk_id = -1;
  ExpectRejected(v, "no byte token <0x41> and no unk_id");
}

TEST(TokenizerCreateTest, RejectsInconsistentByteLevelBpeVocabularies) {
  Vocabulary v = SmallByteLevelBpe();
  v.pre = "bloom";
  ExpectRejected(v, "unsupported byte-level BPE pre-tokenizer \"bloom\"");

  v = SmallByteLevelBpe();
  v.tokens['x'] = "xx";
  ExpectRejected(v, "no token \"x\" for byte 0x78");

  v = SmallByteLevelBpe();
  v.merges = {"ab"};
  ExpectRejected(v, "merge rule 0 \"ab\" is not two pieces");

  v = SmallByteLevelBpe();
  v.merges = {"a b", "b a"};
  ExpectRejected(v, "merge rule 1 \"b a\" merges into no token");

  v = SmallByteLevelBpe();
  v.merges = {"a zz"};
  ExpectRejected(v, "has a piece that is no token");

  v = SmallByteLevelBpe();
  v.tokens[256] = "a b";
  ExpectRejected(v, "outside the byte-level BPE alphabet");

  v = SmallByteLevelBpe();
  v.scores = {1.0f};
  ExpectRejected(v, "1 scores");

  // Scores are optional for byte-level BPE.
  v = SmallByteLevelBpe();
  v.scores.assign(v.tokens.size(), 0.0f);
  EXPECT_TRUE(CreateStatus(v).ok());
}

TEST(TokenizerTest, SentencePieceMergesByScoreAndFallsBackToBytes) {
  auto tokenizer = Tokenizer::Create(SmallSentencePiece());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // "▁ab" (264) has the lowest score, but merging is greedy on pairs:
  // "ab" (-1.5) beats "▁a" (-3), then "▁"+"ab" -> "▁ab".
  auto ids = (*tokenizer)->Encode("ab", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(264));
  // 'c' is no token: its byte token <0x63> (3 + 0x63).
  ids = (*tokenizer)->Encode("ac", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(1, 262, 3 + 0x63));
  EXPECT_EQ((*tokenizer)->Decode(*ids), "ac");
  // Multi-byte characters fall back byte by byte.
  ids = (*tokenizer)->Encode("\xC3\xA9", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(259, 3 + 0xC3, 3 + 0xA9));
  EXPECT_EQ((*tokenizer)->Decode(*ids), "\xC3\xA9");
}

TEST(TokenizerTest, SentencePieceWithoutSpacePrefix) {
  Vocabulary v = SmallSentencePiece();
  v.add_space_prefix = false;
  auto tokenizer = Tokenizer::Create(std::move(v));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto ids = (*tokenizer)->Encode("ab a", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(263, 262));
  EXPECT_EQ((*tokenizer)->Decode(*ids), "ab a");
}

TEST(TokenizerTest, UnknownFallbackWhenByteTokensAreMissing) {
  Vocabulary v = SmallSentencePiece();
  v.tokens[3 + 0x63] = "<0x63-unused>";
  v.token_types[3 + 0x63] = kNormal;
  auto tokenizer = Tokenizer::Create(std::move(v));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto ids = (*tokenizer)->Encode("c", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(259, 0));
  EXPECT_EQ((*tokenizer)->TokenBytes(0), "\xE2\x96\x85");
}

TEST(TokenizerTest, ByteLevelBpeMergesAndMapsBytes) {
  auto tokenizer = Tokenizer::Create(SmallByteLevelBpe());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // gpt2 words "ab" and " abé"; "a b" merges, the rest stays bytes.
  auto ids = (*tokenizer)->Encode("ab ab\xC3\xA9", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(256, 0x20, 256, 0xC3, 0xA9));
  EXPECT_EQ((*tokenizer)->Decode(*ids), "ab ab\xC3\xA9");
  EXPECT_EQ((*tokenizer)->TokenBytes(0x0A), "\n");
  EXPECT_EQ((*tokenizer)->TokenBytes(257), "");
  EXPECT_TRUE((*tokenizer)->IsEndOfGeneration(257));
  auto with_bos = (*tokenizer)->Encode("ab", true);
  EXPECT_EQ(with_bos.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(with_bos.status().message()), HasSubstr("no BOS"));
}

TEST(TokenizerTest, ByteLevelBpeDropsBytesWithoutAToken) {
  // As llama.cpp does for Falcon's vocabulary, which lacks most control
  // characters: a byte without a token vanishes from the encoding.
  Vocabulary v = SmallByteLevelBpe();
  v.tokens[0x03] = "<unused>";
  v.token_types[0x03] = static_cast<int32_t>(TokenType::kUnused);
  auto tokenizer = Tokenizer::Create(v);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto ids = (*tokenizer)->Encode("a\x03" "b", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre('a', 'b'));
}

TEST(TokenizerTest, ByteLevelBpeTokensMayHoldNonAsciiCharactersAsThemselves) {
  // Command-R's vocabulary has ZERO WIDTH JOINER tokens spelled as is.
  Vocabulary v = SmallByteLevelBpe();
  v.tokens.push_back("\xE2\x80\x8D");
  v.token_types.push_back(kNormal);
  auto tokenizer = Tokenizer::Create(v);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->TokenBytes(258), "\xE2\x80\x8D");
}

// Gemma 4 (GGUF tokenizer.ggml.model "gemma4"): BPE on characters, spaces
// as U+2581, byte tokens for characters that are no token.
TEST(TokenizerTest, Gemma4MergesCharactersAndFallsBackToBytes) {
  Vocabulary v;
  v.type = TokenizerType::kByteLevelBpe;
  v.pre = "gemma4";
  for (int byte = 0; byte < 256; ++byte) {
    v.tokens.push_back(absl::StrFormat("<0x%02X>", byte));
    v.token_types.push_back(static_cast<int32_t>(TokenType::kByte));
  }
  for (const char* text : {"a", "b", "ab", "\xE2\x96\x81", "\xE2\x96\x81" "a"}) {
    v.tokens.push_back(text);  // 256..260
    v.token_types.push_back(kNormal);
  }
  v.merges = {"a b", "\xE2\x96\x81 a"};
  v.add_bos = false;
  v.add_space_prefix = false;
  auto tokenizer = Tokenizer::Create(v);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // Words "ab▁a", "\n\n", "c": '\n' and 'c' are no tokens.
  auto ids = (*tokenizer)->Encode("ab a\n\nc", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(258, 260, 0x0A, 0x0A, 0x63));
  EXPECT_EQ((*tokenizer)->Decode(*ids), "ab a\n\nc");
  EXPECT_EQ((*tokenizer)->TokenBytes(259), " ");
}

TEST(TokenizerTest, RejectsInvalidUtf8NamingTheOffset) {
  auto tokenizer = Tokenizer::Create(SmallSentencePiece());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  struct Case {
    std::string text;
    std::string offset;
  };
  for (const Case& c : std::vector<Case>{
           {"ab\xFF" "cd", "byte offset 2"},
           {"a\xC0\xAF", "byte offset 1"},         // overlong '/'
           {"ab\xED\xA0\x80", "byte offset 2"},    // surrogate U+D800
           {"\xF4\x90\x80\x80", "byte offset 0"},  // above U+10FFFF
           {"abc\xE2\x96", "starts at byte offset 3"},  // truncated
           {"\xE2(", "byte offset 0"},
       }) {
    auto ids = (*tokenizer)->Encode(c.text, false);
    EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(ids.status().message()), HasSubstr(c.offset))
        << ids.status();
  }
}

TEST(TokenizerTest, EmptyTextGivesOnlyBos) {
  auto tokenizer = Tokenizer::Create(SmallSentencePiece());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_THAT(*(*tokenizer)->Encode("", true), ElementsAre(1));
  EXPECT_TRUE((*tokenizer)->Encode("", false)->empty());
  EXPECT_EQ((*tokenizer)->Decode({}), "");
}

TEST(TokenizerTest, TokenBytesAndDecodeOfSpecialTokens) {
  auto tokenizer = SharedTokenizer(TestDataPath("vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const Tokenizer& t = **tokenizer;
  EXPECT_EQ(t.TokenBytes(1), "");             // <s>: control
  EXPECT_EQ(t.TokenBytes(3 + 0x41), "A");     // <0x41>
  EXPECT_EQ(t.TokenBytes(29871), " ");        // ▁
  EXPECT_EQ(t.TokenBytes(15043), " Hello");   // ▁Hello
  EXPECT_EQ(t.TokenBytes(-1), "\xEF\xBF\xBD");
  EXPECT_EQ(t.TokenBytes(t.vocab_size()), "\xEF\xBF\xBD");
  // The leading space goes from the first token after an optional BOS only.
  EXPECT_EQ(t.Decode(std::vector<int32_t>{15043, 3186}), "Hello world");
  EXPECT_EQ(t.Decode(std::vector<int32_t>{1, 15043, 2, 15043}),
            "Hello Hello");
  EXPECT_EQ(t.Decode(std::vector<int32_t>{29871, 15043}), " Hello");
}

TEST(TokenizerTest, SpecialTokenTextIsPlainText) {
  auto tokenizer = SharedTokenizer(TestDataPath("vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto ids = (*tokenizer)->Encode("</s><s>", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, Not(::testing::Contains(1)));
  EXPECT_THAT(*ids, Not(::testing::Contains(2)));
  EXPECT_EQ((*tokenizer)->Decode(*ids), "</s><s>");
}

TEST(TokenizerTest, QwenEndOfGenerationTokens) {
  auto tokenizer = SharedTokenizer(TestDataPath("vocab/ggml-vocab-qwen2.gguf"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const Tokenizer& t = **tokenizer;
  EXPECT_TRUE(t.IsEndOfGeneration(151643));   // <|endoftext|>, eos
  EXPECT_TRUE(t.IsEndOfGeneration(151645));   // <|im_end|>
  EXPECT_FALSE(t.IsEndOfGeneration(151644));  // <|im_start|>
  EXPECT_FALSE(t.IsEndOfGeneration(9707));
  EXPECT_EQ(t.TokenBytes(151645), "");
  EXPECT_EQ(t.TokenBytes(21927), " Hello");   // ĠHello
  auto ids = t.Encode("<|im_end|>", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, Not(::testing::Contains(151645)));
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, DecodeOfEncodeIsTheText) {
  auto tokenizer = SharedTokenizer(TestDataPath("vocab/" + GetParam()));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const Tokenizer& t = **tokenizer;
  // SentencePiece cannot tell U+2581 in the text from an escaped space.
  const bool sentencepiece =
      t.vocabulary().type == TokenizerType::kSentencePiece;
  std::mt19937 rng(20240611);
  for (int i = 0; i < 300; ++i) {
    const std::string text =
        testing::RandomUtf8(rng, 40, /*allow_u2581=*/!sentencepiece);
    for (bool add_bos : {false, true}) {
      auto ids = t.Encode(text, add_bos);
      ASSERT_TRUE(ids.ok()) << ids.status();
      ASSERT_EQ(t.Decode(*ids), text)
          << "add_bos " << add_bos << ", text: \"" << text << "\"";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, RoundTripTest,
                         ::testing::Values("ggml-vocab-llama-spm.gguf",
                                           "ggml-vocab-qwen2.gguf"));

}  // namespace
}  // namespace lnpu::framework
