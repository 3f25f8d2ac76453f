// GrammarMatcher on the real qwen2 (byte-level BPE, 151,936 tokens) and
// llama-spm (SentencePiece, byte fallback) vocabularies: seeded random
// walks whose every output parses as JSON and validates against its
// schema, the mask compared with a token-by-token oracle, tokens that span
// grammar elements or end inside a UTF-8 character, end-of-generation
// only when complete, and the mask time per step.
#include "framework/structured_output/grammar_matcher.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "framework/structured_output/json_schema.h"
#include "framework/structured_output/token_trie.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/structured_output/json_schema_validator.h"
#include "tests/structured_output/random_walk.h"
#include "tests/tokenizer/gguf_vocabulary.h"

namespace lnpu::framework::structured_output {
namespace {

using ::testing::HasSubstr;

constexpr char kQwen2[] = "vocab/ggml-vocab-qwen2.gguf";
constexpr char kLlamaSpm[] = "vocab/ggml-vocab-llama-spm.gguf";

// One trie per vocabulary for the whole test program.
std::shared_ptr<const TokenTrie> SharedTrie(const std::string& vocab) {
  static auto* const tries = new std::map<std::string, std::shared_ptr<const TokenTrie>>;
  auto it = tries->find(vocab);
  if (it != tries->end()) return it->second;
  const Tokenizer* tokenizer =
      framework::testing::SharedTokenizer(framework::testing::TestDataPath(vocab)).value();
  return (*tries)[vocab] = TokenTrie::Create(*tokenizer);
}

std::shared_ptr<const Grammar> SchemaGrammar(const std::string& schema) {
  absl::StatusOr<std::shared_ptr<const Grammar>> grammar = JsonSchemaGrammar(schema);
  EXPECT_TRUE(grammar.ok()) << grammar.status();
  return grammar.ok() ? *grammar : nullptr;
}

// Schemas whose random walks end within the step budget.
const std::vector<std::string>& WalkSchemas() {
  static const auto* const schemas = new std::vector<std::string>{
      R"({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer"},
            "email": {"type": "string", "pattern": "^[a-z]{1,8}@[a-z]{1,8}\\.com$"},
            "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
            "score": {"type": ["number", "null"]}},
          "required": ["name", "age"], "additionalProperties": false})",
      R"({"type": "array", "maxItems": 4, "items": {"type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"], "additionalProperties": false}})",
      R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 5}, {"type": "null"},
                    {"type": "boolean"}]})",
      R"({"$defs": {"tree": {"type": "object", "properties": {
            "label": {"type": "string", "maxLength": 4},
            "children": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/tree"}}},
            "required": ["label"], "additionalProperties": false}},
          "$ref": "#/$defs/tree"})",
      R"({"type": "object", "properties": {"id": {"type": "integer"}},
          "additionalProperties": {"type": "boolean"}})",
      R"({"type": "string", "maxLength": 6})",
      R"({"type": "object", "properties": {"kind": {"const": "point"},
            "at": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}},
          "required": ["kind", "at"], "additionalProperties": false})",
      R"({"type": "object", "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "offset": {"type": "integer", "minimum": -250, "exclusiveMaximum": 1000},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "celsius": {"type": "number", "exclusiveMinimum": -273.15, "maximum": 1e3},
            "big": {"type": "integer", "minimum": 3}},
          "required": ["count", "offset", "ratio", "celsius", "big"],
          "additionalProperties": false})",
  };
  return *schemas;
}

class RandomWalkTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RandomWalkTest, EveryOutputIsValidJsonForItsSchema) {
  const std::shared_ptr<const TokenTrie> trie = SharedTrie(GetParam());
  const int seeds = std::string(GetParam()) == kQwen2 ? 3 : 6;
  std::vector<double> times;
  for (const std::string& schema : WalkSchemas()) {
    const std::shared_ptr<const Grammar> grammar = SchemaGrammar(schema);
    ASSERT_NE(grammar, nullptr);
    for (int seed = 0; seed < seeds; ++seed) {
      SCOPED_TRACE(schema + " seed " + std::to_string(seed));
      const testing::Walk walk = testing::RandomWalk(grammar, trie, {.seed = uint64_t(seed)});
      ASSERT_TRUE(walk.ended) << walk.text;
      EXPECT_EQ(testing::ValidateJsonText(walk.text, schema), "") << walk.text;
      times.insert(times.end(), walk.mask_microseconds.begin(), walk.mask_microseconds.end());
    }
  }
  std::cout << GetParam() << " mask time: " << testing::DescribeTimes(times) << "\n";
}

TEST_P(RandomWalkTest, AnyJsonObjectWalksParse) {
  const std::shared_ptr<const TokenTrie> trie = SharedTrie(GetParam());
  const std::shared_ptr<const Grammar> grammar = JsonObjectGrammar();
  for (int seed = 0; seed < 4; ++seed) {
    SCOPED_TRACE(seed);
    const testing::Walk walk = testing::RandomWalk(grammar, trie, {.seed = uint64_t(seed)});
    ASSERT_TRUE(walk.ended) << walk.text;
    const nlohmann::json value = nlohmann::json::parse(walk.text, nullptr, false);
    EXPECT_TRUE(value.is_object()) << walk.text;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, RandomWalkTest, ::testing::Values(kQwen2, kLlamaSpm),
                         [](const auto& info) {
                           return std::string(info.param) == kQwen2 ? "qwen2" : "llama_spm";
                         });

bool Allowed(const std::vector<uint64_t>& mask, int32_t token) {
  return (mask[token / 64] >> (token % 64) & 1) != 0;
}

// A token whose bytes are exactly `bytes`, or -1.
int32_t TokenWithBytes(const Tokenizer& tokenizer, const std::string& bytes) {
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.TokenBytes(id) == bytes &&
        tokenizer.vocabulary().token_types[id] != static_cast<int32_t>(TokenType::kControl)) {
      return id;
    }
  }
  return -1;
}

TEST(GrammarMatcherTest, EncodedTextsAreAllowedTokenByToken) {
  // The tokenizer's own tokens of valid texts span grammar elements
  // ("\":", "},", "\"]}") and must all be allowed, then end of generation.
  const std::shared_ptr<const TokenTrie> trie = SharedTrie(kQwen2);
  const Tokenizer& tokenizer = trie->tokenizer();
  const std::string schema = WalkSchemas()[0];
  const std::shared_ptr<const Grammar> grammar = SchemaGrammar(schema);
  for (const std::string text :
       {R"({"name": "Ada Lovelace", "age": 36, "tags": ["red","blue"]})",
        R"({"name":"\u00e9t\u00e9 中文","age":-1,"email":"ab@cd.com","score":null})",
        "{\n  \"name\": \"x\",\n  \"age\": 0,\n  \"score\": 1.5e-3\n}"}) {
    SCOPED_TRACE(text);
    ASSERT_EQ(testing::ValidateJsonText(text, schema), "");
    const std::vector<int32_t> tokens = tokenizer.Encode(text, /*add_bos=*/false).value();
    GrammarMatcher matcher(grammar, trie);
    std::vector<uint64_t> mask;
    bool spans = false;
    for (int32_t token : tokens) {
      ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
      ASSERT_TRUE(Allowed(mask, token)) << "token \"" << tokenizer.TokenBytes(token) << "\"";
      EXPECT_FALSE(Allowed(mask, tokenizer.eos_id()));
      ASSERT_TRUE(matcher.Accept(token).ok());
      const std::string bytes = tokenizer.TokenBytes(token);
      spans = spans || bytes == "\":" || bytes == "\"," || bytes == "\"]" || bytes == "},";
    }
    EXPECT_TRUE(spans) << "no token of the text spans two grammar elements";
    ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
    EXPECT_TRUE(Allowed(mask, tokenizer.eos_id()));
    EXPECT_TRUE(matcher.IsComplete());
  }
}

TEST(GrammarMatcherTest, TokensMayEndInsideAUtf8Character) {
  for (const char* vocab : {kQwen2, kLlamaSpm}) {
    SCOPED_TRACE(vocab);
    const std::shared_ptr<const TokenTrie> trie = SharedTrie(vocab);
    const Tokenizer& tokenizer = trie->tokenizer();
    GrammarMatcher matcher(SchemaGrammar(R"({"type": "string", "maxLength": 2})"), trie);
    const int32_t quote = TokenWithBytes(tokenizer, "\"");
    const int32_t lead = TokenWithBytes(tokenizer, "\xe4");  // 中 is E4 B8 AD
    const int32_t middle = TokenWithBytes(tokenizer, "\xb8");
    const int32_t last = TokenWithBytes(tokenizer, "\xad");
    const int32_t letter = TokenWithBytes(tokenizer, "a");
    ASSERT_GE(std::min({quote, lead, middle, last, letter}), 0);
    std::vector<uint64_t> mask;
    ASSERT_TRUE(matcher.Accept(quote).ok());
    ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
    EXPECT_TRUE(Allowed(mask, lead));
    EXPECT_FALSE(Allowed(mask, middle));  // a continuation byte cannot start
    ASSERT_TRUE(matcher.Accept(lead).ok());
    ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
    EXPECT_TRUE(Allowed(mask, middle));
    EXPECT_FALSE(Allowed(mask, letter));
    EXPECT_FALSE(Allowed(mask, quote));
    EXPECT_EQ(matcher.Accept(quote).code(), absl::StatusCode::kInvalidArgument);
    ASSERT_TRUE(matcher.Accept(middle).ok());
    ASSERT_TRUE(matcher.Accept(last).ok());
    ASSERT_TRUE(matcher.Accept(letter).ok());
    ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
    EXPECT_FALSE(Allowed(mask, letter));  // maxLength 2 reached
    EXPECT_FALSE(Allowed(mask, lead));
    EXPECT_TRUE(Allowed(mask, quote));
    ASSERT_TRUE(matcher.Accept(quote).ok());
    ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
    // Only end of generation is left.
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
      ASSERT_EQ(Allowed(mask, id), trie->is_end_token(id)) << id;
    }
  }
}

TEST(GrammarMatcherTest, EndOfGenerationOnlyWhenComplete) {
  const std::shared_ptr<const TokenTrie> trie = SharedTrie(kLlamaSpm);
  const Tokenizer& tokenizer = trie->tokenizer();
  GrammarMatcher matcher(SchemaGrammar(R"({"type": "integer"})"), trie);
  std::vector<uint64_t> mask;
  ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
  EXPECT_FALSE(Allowed(mask, tokenizer.eos_id()));
  EXPECT_EQ(matcher.Accept(tokenizer.eos_id()).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(matcher.Accept(TokenWithBytes(tokenizer, "4")).ok());
  ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
  EXPECT_TRUE(Allowed(mask, tokenizer.eos_id()));
  EXPECT_TRUE(Allowed(mask, TokenWithBytes(tokenizer, "2")));  // the number may go on
  EXPECT_FALSE(Allowed(mask, tokenizer.bos_id()));             // control tokens never
  ASSERT_TRUE(matcher.Accept(tokenizer.eos_id()).ok());
  EXPECT_TRUE(matcher.IsFinished());
  ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
  EXPECT_TRUE(Allowed(mask, tokenizer.eos_id()));
  EXPECT_FALSE(Allowed(mask, TokenWithBytes(tokenizer, "2")));
  const absl::Status after_end = matcher.Accept(TokenWithBytes(tokenizer, "2"));
  EXPECT_EQ(after_end.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(after_end.message(), HasSubstr("already ended"));
}

TEST(GrammarMatcherTest, RejectedTokensAreNamed) {
  const std::shared_ptr<const TokenTrie> trie = SharedTrie(kQwen2);
  const Tokenizer& tokenizer = trie->tokenizer();
  GrammarMatcher matcher(SchemaGrammar(R"({"type": "boolean"})"), trie);
  const int32_t word = TokenWithBytes(tokenizer, "yes");
  ASSERT_GE(word, 0);
  const absl::Status status = matcher.Accept(word);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("token ", word, " (\"yes\")")));
  EXPECT_EQ(matcher.Accept(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(matcher.Accept(tokenizer.vocab_size()).code(), absl::StatusCode::kInvalidArgument);
  const int32_t im_start = framework::testing::TokenIdOf(tokenizer, "<|im_start|>");
  ASSERT_GE(im_start, 0);
  EXPECT_THAT(matcher.Accept(im_start).message(), HasSubstr("control"));
  EXPECT_TRUE(matcher.Accept(TokenWithBytes(tokenizer, "true")).ok());
}

TEST(GrammarMatcherTest, NoContinuingTokenIsAnError) {
  // A SentencePiece vocabulary without byte tokens (unknown-token
  // fallback) that cannot spell '"'.
  Vocabulary vocabulary;
  vocabulary.tokens = {"<unk>", "<s>", "</s>", "{", "}", "a"};
  vocabulary.scores = {0, 0, 0, -1, -1, -1};
  vocabulary.token_types = {2, 3, 3, 1, 1, 1};
  vocabulary.unk_id = 0;
  vocabulary.bos_id = 1;
  vocabulary.eos_id = 2;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::Create(vocabulary).value();
  const std::shared_ptr<const TokenTrie> trie = TokenTrie::Create(*tokenizer);
  GrammarMatcher matcher(
      SchemaGrammar(R"({"type": "object", "properties": {"k": {"type": "integer"}},
                        "required": ["k"]})"),
      trie);
  std::vector<uint64_t> mask;
  ASSERT_TRUE(matcher.AllowedTokens(mask).ok());
  EXPECT_EQ(mask[0], uint64_t{1} << 3);  // only "{"
  ASSERT_TRUE(matcher.Accept(3).ok());
  const absl::Status status = matcher.AllowedTokens(mask);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("no token of the vocabulary"));
}

TEST(GrammarMatcherTest, MaskTimeOnQwen2) {
  // Reports the figures docs/structured-output.md quotes: trie build,
  // first mask of a fresh matcher (no cached transitions) and per-step
  // masks along walks.
  const Tokenizer* tokenizer =
      framework::testing::SharedTokenizer(framework::testing::TestDataPath(kQwen2)).value();
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<const TokenTrie> trie = TokenTrie::Create(*tokenizer);
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> first, steps;
  for (const std::string& schema : WalkSchemas()) {
    const std::shared_ptr<const Grammar> grammar = SchemaGrammar(schema);
    for (int seed = 0; seed < 2; ++seed) {
      const testing::Walk walk =
          testing::RandomWalk(grammar, trie, {.seed = uint64_t(100 + seed), .oracle_every = 0});
      ASSERT_TRUE(walk.ended);
      first.push_back(walk.mask_microseconds.front());
      steps.insert(steps.end(), walk.mask_microseconds.begin() + 1, walk.mask_microseconds.end());
    }
  }
  std::cout << "qwen2 vocabulary (" << tokenizer->vocab_size() << " tokens, " << trie->node_count()
            << " trie nodes): trie built in " << build_ms << " ms\n"
            << "  first mask: " << testing::DescribeTimes(first) << "\n"
            << "  later masks: " << testing::DescribeTimes(steps) << "\n";
  EXPECT_GT(trie->node_count(), tokenizer->vocab_size() / 2);
}

}  // namespace
}  // namespace lnpu::framework::structured_output
