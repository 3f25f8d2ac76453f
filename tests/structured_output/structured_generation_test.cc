// End to end: the real stories260K model, compiled here and run on the
// software NPU through framework::Llm, generating greedily under a
// GrammarMatcher (GenerationConfig::constraint). The tiny model knows
// nothing of JSON; the grammar alone makes every reply valid.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compiler_artifacts/compiler/compiler.h"
#include "framework/llm.h"
#include "framework/structured_output/grammar_matcher.h"
#include "framework/structured_output/json_schema.h"
#include "framework/structured_output/token_trie.h"
#include "gtest/gtest.h"
#include "tests/structured_output/json_schema_validator.h"
#include "tests/test_temp_dir.h"

namespace lnpu::framework::structured_output {
namespace {

class StructuredGenerationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* models = std::getenv("LNPU_MODELS_DIR");
    artifact_ = new std::string(lnpu::testing::TestTempPath("structured_stories.lnpu"));
    compiler::CompileOptions options;
    options.max_prompt_len = 16;
    options.min_response_len = 480;
    options.prefill_chunks = {16};
    const absl::Status compiled = compiler::CompileGguf(
        std::string(models ? models : "models") + "/stories260K.gguf", *artifact_, options);
    ASSERT_TRUE(compiled.ok()) << compiled;
    llm_ = Llm::Load(*artifact_, {.device = "soft"}).value().release();
    trie_ = new std::shared_ptr<const TokenTrie>(TokenTrie::Create(llm_->tokenizer()));
  }
  static void TearDownTestSuite() {
    delete trie_;
    delete llm_;
    std::remove(artifact_->c_str());
    delete artifact_;
  }

  static std::string* artifact_;
  static Llm* llm_;
  static std::shared_ptr<const TokenTrie>* trie_;
};

std::string* StructuredGenerationTest::artifact_ = nullptr;
Llm* StructuredGenerationTest::llm_ = nullptr;
std::shared_ptr<const TokenTrie>* StructuredGenerationTest::trie_ = nullptr;

// Numeric bounds of every kind, enforced by the grammar.
constexpr char kBoundedSchema[] =
    R"({"type": "object", "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "year": {"type": "integer", "minimum": 1900, "exclusiveMaximum": 2100},
        "depth": {"type": "integer", "maximum": -3},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "celsius": {"type": "number", "exclusiveMinimum": -273.15, "exclusiveMaximum": 60.5}},
        "required": ["count", "year", "depth", "ratio", "celsius"],
        "additionalProperties": false})";

TEST_F(StructuredGenerationTest, GreedyRepliesAreValidJson) {
  for (const std::string schema : {
           R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
               "age": {"type": "integer"}, "happy": {"type": "boolean"}},
               "required": ["name", "age", "happy"], "additionalProperties": false})",
           R"({"type": "array", "items": {"enum": ["cat", "dog", "bird"]},
               "minItems": 1, "maxItems": 3})",
           R"({"anyOf": [{"type": "null"}, {"type": "object", "properties":
               {"story": {"type": "string", "maxLength": 20}}, "required": ["story"],
               "additionalProperties": false}]})",
           kBoundedSchema,
       }) {
    SCOPED_TRACE(schema);
    GrammarMatcher matcher(JsonSchemaGrammar(schema).value(), *trie_);
    GenerationConfig config;
    // Greedy, the tiny model fills most whitespace slots (20 bytes each).
    config.max_new_tokens = 440;
    config.constraint = &matcher;
    absl::StatusOr<GenerationResult> result = llm_->Generate("Once upon a time", config);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->finish_reason, FinishReason::kStop) << result->error << " " << result->text;
    EXPECT_TRUE(matcher.IsFinished());
    EXPECT_EQ(testing::ValidateJsonText(result->text, schema), "") << result->text;
  }
}

TEST_F(StructuredGenerationTest, SampledRepliesAreValidJson) {
  const std::string stories_schema =
      R"({"type": "object", "properties": {"hero": {"type": "string", "maxLength": 10},
          "friends": {"type": "array", "items": {"type": "string", "maxLength": 6},
                      "maxItems": 2}},
          "required": ["hero", "friends"], "additionalProperties": false})";
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const std::string schema = seed <= 3 ? stories_schema : kBoundedSchema;
    GrammarMatcher matcher(JsonSchemaGrammar(schema).value(), *trie_);
    GenerationConfig config;
    config.max_new_tokens = seed <= 3 ? 200 : 440;  // the bounded schema has more members
    config.temperature = 1.0f;
    config.seed = seed;
    config.constraint = &matcher;
    absl::StatusOr<GenerationResult> result = llm_->Generate("Once upon a time", config);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->finish_reason, FinishReason::kStop) << result->error << " " << result->text;
    EXPECT_EQ(testing::ValidateJsonText(result->text, schema), "") << result->text;
  }
}

TEST_F(StructuredGenerationTest, ConstraintErrorsEndGeneration) {
  // A constraint that refuses everything ends generation with kError.
  class RefuseAll : public TokenConstraint {
   public:
    absl::Status AllowedTokens(std::vector<uint64_t>&) override {
      return absl::FailedPreconditionError("refusing every token");
    }
    absl::Status Accept(int32_t) override { return absl::OkStatus(); }
  } refuse;
  GenerationConfig config;
  config.constraint = &refuse;
  absl::StatusOr<GenerationResult> result = llm_->Generate("Once upon a time", config);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->finish_reason, FinishReason::kError);
  EXPECT_EQ(result->error,
            absl::InternalError("the token constraint failed: refusing every token"));
  EXPECT_TRUE(result->tokens.empty());
}

TEST_F(StructuredGenerationTest, LogitBiasBanningEveryAllowedTokenIsTheRequestsError) {
  const std::string schema = R"({"type": "boolean"})";
  GrammarMatcher first_step(JsonSchemaGrammar(schema).value(), *trie_);
  std::vector<uint64_t> allowed;
  ASSERT_TRUE(first_step.AllowedTokens(allowed).ok());
  GenerationConfig config;
  for (size_t id = 0; id < allowed.size() * 64; ++id) {
    if ((allowed[id / 64] >> (id % 64) & 1) != 0) {
      config.logit_bias[static_cast<int32_t>(id)] = -INFINITY;
    }
  }
  ASSERT_FALSE(config.logit_bias.empty());
  for (const float temperature : {0.0f, 0.8f}) {
    SCOPED_TRACE(temperature);
    config.temperature = temperature;
    GrammarMatcher matcher(JsonSchemaGrammar(schema).value(), *trie_);
    config.constraint = &matcher;
    absl::StatusOr<GenerationResult> result = llm_->Generate("Once upon a time", config);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->finish_reason, FinishReason::kError);
    EXPECT_EQ(result->error,
              absl::InvalidArgumentError(
                  "logit_bias bans every token the response format or tool grammar allows "
                  "after 0 generated tokens: lift the -100 (-inf) bias of a token the reply "
                  "needs"));
    EXPECT_TRUE(result->tokens.empty());
  }
}

}  // namespace
}  // namespace lnpu::framework::structured_output
