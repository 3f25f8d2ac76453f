// Speculative decoding (GenerationConfig::speculative) on the software NPU:
// greedy output equals that without speculation token for token, with
// prompt lookup and with draft models, on stories260K and a random model,
// also where a reply ends inside an accepted run (EOS, stop strings,
// max_new_tokens, a full cache); the rejected positions leave the cache as
// a run without speculation leaves it.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "framework/generator.h"
#include "framework/llm.h"
#include "framework/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/framework/framework_test_util.h"

namespace lnpu::framework {
namespace {

using ::lnpu::framework::testing::Greedy;
using ::lnpu::framework::testing::ModelsDir;
using ::lnpu::framework::testing::NewSession;
using ::lnpu::framework::testing::NewTempDir;
using ::testing::HasSubstr;
using Kind = SpeculativeConfig::Kind;

// A target model (verify graph of 6 rows) and draft models of one source
// model, all with 48 + 16 cache slots.
struct ModelSet {
  std::unique_ptr<Llm> target;
  std::unique_ptr<Llm> plain;       // the target without a verify graph
  std::unique_ptr<Llm> same;        // the target model as a draft: every proposal agrees
  std::unique_ptr<Llm> few_layers;  // the first layer(s) only: a cheap self-draft
};

class SpeculativeTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kVerifyRows = 6;

  static void SetUpTestSuite() {
    dir_ = new std::string(NewTempDir());
    stories_ = new ModelSet(Load(ModelsDir() + "/stories260K.gguf", "stories", 2));
    const std::string random_gguf = *dir_ + "/random.gguf";
    synthetic::RandomLlamaSpec spec;
    spec.n_layers = 3;
    ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, random_gguf).ok());
    random_ = new ModelSet(Load(random_gguf, "random", 1));
    std::remove(random_gguf.c_str());
  }
  static void TearDownTestSuite() {
    delete stories_;
    delete random_;
    std::remove(dir_->c_str());
    delete dir_;
  }

  static ModelSet Load(const std::string& gguf, const std::string& name, uint32_t draft_layers) {
    ModelSet set;
    set.target = Compile(gguf, name + "_target", kVerifyRows, 0);
    set.plain = Compile(gguf, name + "_plain", 0, 0);
    set.same = Compile(gguf, name + "_same", 0, 0);
    set.few_layers = Compile(gguf, name + "_draft", 0, draft_layers);
    return set;
  }

  static std::unique_ptr<Llm> Compile(const std::string& gguf, const std::string& name,
                                      uint32_t verify_rows, uint32_t keep_layers) {
    const std::string path = *dir_ + "/" + name + ".lnpu";
    compiler::CompileOptions options;
    options.max_prompt_len = 48;
    options.min_response_len = 16;
    options.prefill_chunks = {4, 16};
    options.verify_rows = verify_rows;
    options.keep_layers = keep_layers;
    const absl::Status compiled = compiler::CompileGguf(gguf, path, options);
    EXPECT_TRUE(compiled.ok()) << compiled;
    absl::StatusOr<std::unique_ptr<Llm>> llm = Llm::Load(path, {.device = "soft"});
    EXPECT_TRUE(llm.ok()) << llm.status();
    std::remove(path.c_str());
    return llm.ok() ? *std::move(llm) : nullptr;
  }

  // The reply to `prompt` on a new session of `models.target` with
  // `config`; `state` gets the session's state afterwards.
  static GenerationResult Run(const ModelSet& models, const std::vector<int32_t>& prompt,
                              const GenerationConfig& config,
                              runtime::CacheSnapshot* state = nullptr) {
    std::unique_ptr<Session> session = NewSession(*models.target);
    absl::StatusOr<GenerationResult> result = session->GenerateFromTokens(prompt, config);
    EXPECT_TRUE(result.ok()) << result.status();
    if (state != nullptr) *state = session->SaveState().value();
    return result.ok() ? *std::move(result) : GenerationResult{};
  }

  // Generates with and without `speculative` and expects the same reply
  // and the same cache (mask, slot tokens, positions, pending tokens);
  // returns the speculative run's result.
  static GenerationResult ExpectSameAsPlain(const ModelSet& models,
                                            const std::vector<int32_t>& prompt,
                                            GenerationConfig config,
                                            const SpeculativeConfig& speculative) {
    runtime::CacheSnapshot plain_state, speculative_state;
    const GenerationResult plain = Run(models, prompt, config, &plain_state);
    config.speculative = speculative;
    const GenerationResult result = Run(models, prompt, config, &speculative_state);
    EXPECT_EQ(result.tokens, plain.tokens);
    EXPECT_EQ(result.text, plain.text);
    EXPECT_EQ(result.finish_reason, plain.finish_reason);
    EXPECT_EQ(speculative_state.next_position, plain_state.next_position);
    EXPECT_EQ(speculative_state.mask, plain_state.mask);
    EXPECT_EQ(speculative_state.slot_tokens, plain_state.slot_tokens);
    EXPECT_EQ(speculative_state.pending_tokens, plain_state.pending_tokens);
    EXPECT_LE(result.stats.accepted_tokens, result.stats.drafted_tokens);
    return result;
  }

  static SpeculativeConfig Lookup(int max_draft_tokens = 5) {
    return {.kind = Kind::kPromptLookup, .max_draft_tokens = max_draft_tokens};
  }
  // Proposes max_draft_tokens whatever the draft's confidence, unless
  // `min_probability` says otherwise.
  static SpeculativeConfig Draft(Session& draft, int max_draft_tokens = 5,
                                 float min_probability = 0.0f) {
    return {.kind = Kind::kDraftModel,
            .max_draft_tokens = max_draft_tokens,
            .min_draft_probability = min_probability,
            .draft = &draft};
  }

  // A prompt that repeats a text, so that prompt lookup proposes the
  // model's continuation of it.
  std::vector<int32_t> RepeatingPrompt(const ModelSet& models) const {
    const std::vector<int32_t> story = {1, 403, 407, 261, 378};  // "Once upon a time"
    GenerationResult continuation = Run(models, story, Greedy(12));
    std::vector<int32_t> prompt = story;
    prompt.insert(prompt.end(), continuation.tokens.begin(), continuation.tokens.end());
    prompt.insert(prompt.end(), story.begin() + 1, story.end());
    return prompt;
  }

  static std::string* dir_;
  static ModelSet* stories_;
  static ModelSet* random_;
};

std::string* SpeculativeTest::dir_ = nullptr;
ModelSet* SpeculativeTest::stories_ = nullptr;
ModelSet* SpeculativeTest::random_ = nullptr;

TEST_F(SpeculativeTest, GreedyPromptLookupEqualsPlainAndAcceptsRepeatedText) {
  // stories260K repeats the story it was shown: the proposals are accepted.
  const GenerationResult result =
      ExpectSameAsPlain(*stories_, RepeatingPrompt(*stories_), Greedy(14), Lookup());
  EXPECT_GE(result.stats.accepted_tokens, 8) << "the repeated text was not proposed";
  // A random model does not: the proposals are rejected.
  ExpectSameAsPlain(*random_, RepeatingPrompt(*random_), Greedy(14), Lookup());
}

TEST_F(SpeculativeTest, GreedyPromptLookupEqualsPlainInFreeGeneration) {
  for (const ModelSet* models : {stories_, random_}) {
    ExpectSameAsPlain(*models, {1, 403, 407, 261, 378}, Greedy(40), Lookup());
  }
}

TEST_F(SpeculativeTest, GreedyDraftModelEqualsPlain) {
  for (const ModelSet* models : {stories_, random_}) {
    std::unique_ptr<Session> few = NewSession(*models->few_layers);
    ExpectSameAsPlain(*models, {1, 403, 407, 261, 378}, Greedy(40), Draft(*few));
    // The target model itself as the draft: every proposal is accepted.
    std::unique_ptr<Session> same = NewSession(*models->same);
    const GenerationResult result =
        ExpectSameAsPlain(*models, {1, 403, 407, 261, 378}, Greedy(40), Draft(*same));
    EXPECT_GT(result.stats.drafted_tokens, 20);
    EXPECT_EQ(result.stats.accepted_tokens, result.stats.drafted_tokens);
  }
}

// The draft stops proposing at a token it gives less than
// min_draft_probability: 1 leaves no proposal at all (a softmax of finite
// logits over several tokens never reaches 1), the default some; greedy
// output stays the plain one either way.
TEST_F(SpeculativeTest, DraftProposesOnlyTokensItIsSureOf) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  std::unique_ptr<Session> same = NewSession(*stories_->same);
  GenerationResult never = ExpectSameAsPlain(*stories_, prompt, Greedy(40), Draft(*same, 5, 1.0f));
  EXPECT_EQ(never.stats.drafted_tokens, 0);
  const GenerationResult always = ExpectSameAsPlain(*stories_, prompt, Greedy(40), Draft(*same));
  const GenerationResult sure = ExpectSameAsPlain(
      *stories_, prompt, Greedy(40),
      Draft(*same, 5, SpeculativeConfig{}.min_draft_probability));
  EXPECT_GT(sure.stats.drafted_tokens, 0) << "stories260K is sure of some tokens";
  EXPECT_LT(sure.stats.drafted_tokens, always.stats.drafted_tokens);
  EXPECT_EQ(sure.stats.accepted_tokens, sure.stats.drafted_tokens);

  std::unique_ptr<Session> few = NewSession(*stories_->few_layers);
  GenerationConfig config = Greedy(8);
  config.speculative = Draft(*few, 5, 1.5f);
  absl::StatusOr<GenerationResult> refused =
      NewSession(*stories_->target)->GenerateFromTokens(prompt, config);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("min_draft_probability"));
}

// A draft unsure of its first token every time (threshold 1) is run less
// and less often: after 1, 2, 4, 8 and 16 skipped steps, so 6 times in a
// 40-token reply instead of 39; it still catches up on the conversation
// each time, and the reply is the plain one.
TEST_F(SpeculativeTest, AnUnsureDraftRunsLessAndLessOften) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  for (const ModelSet* models : {stories_, random_}) {
    std::unique_ptr<Session> few = NewSession(*models->few_layers);
    const GenerationResult result =
        ExpectSameAsPlain(*models, prompt, Greedy(40), Draft(*few, 3, 1.0f));
    EXPECT_EQ(result.stats.drafted_tokens, 0);
    EXPECT_EQ(few->runtime_stats().forward_calls, 6u);
    // Its cache holds the conversation up to its last run (step 37).
    EXPECT_GE(few->runtime_stats().tokens, prompt.size() + 36);
  }
}

TEST_F(SpeculativeTest, RepliesEndInsideAnAcceptedRunAsWithoutSpeculation) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const GenerationResult plain = Run(*stories_, prompt, Greedy(30));
  ASSERT_EQ(plain.tokens.size(), 30u);
  std::unique_ptr<Session> same = NewSession(*stories_->same);

  // A stop token in the middle of a run of accepted proposals: nothing
  // after it is emitted.
  GenerationConfig stop_token = Greedy(30);
  stop_token.stop_token_ids = {plain.tokens[9]};
  GenerationResult result = ExpectSameAsPlain(*stories_, prompt, stop_token, Draft(*same));
  EXPECT_EQ(result.finish_reason, FinishReason::kStop);
  EXPECT_LE(result.tokens.size(), 9u);

  // End of generation (EOS) itself as the stop token.
  GenerationConfig eos = Greedy(30);
  eos.stop_at_eos = true;
  ExpectSameAsPlain(*stories_, prompt, eos, Draft(*same));

  // A stop string.
  GenerationConfig stop_string = Greedy(30);
  const std::string tail = plain.text.substr(plain.text.size() / 2, 4);
  stop_string.stop_strings = {tail};
  result = ExpectSameAsPlain(*stories_, prompt, stop_string, Draft(*same));
  EXPECT_EQ(result.finish_reason, FinishReason::kStop);
  EXPECT_THAT(result.text, ::testing::Not(HasSubstr(tail)));

  // max_new_tokens in the middle of a run, for every offset.
  for (int max_new_tokens = 1; max_new_tokens <= 8; ++max_new_tokens) {
    result = ExpectSameAsPlain(*stories_, prompt, Greedy(max_new_tokens), Draft(*same));
    EXPECT_EQ(result.tokens.size(), static_cast<size_t>(max_new_tokens));
  }
}

TEST_F(SpeculativeTest, FullCacheEndsTheReplyAsWithoutSpeculation) {
  // 40 prompt tokens in 64 slots: the cache fills before max_new_tokens.
  std::vector<int32_t> prompt = RepeatingPrompt(*stories_);
  while (prompt.size() < 40) prompt.insert(prompt.end(), prompt.begin() + 1, prompt.begin() + 8);
  prompt.resize(40);
  std::unique_ptr<Session> same = NewSession(*stories_->same);
  for (const SpeculativeConfig& speculative : {Lookup(), Draft(*same)}) {
    const GenerationResult result = ExpectSameAsPlain(*stories_, prompt, Greedy(100), speculative);
    EXPECT_EQ(result.finish_reason, FinishReason::kLength);
    EXPECT_EQ(result.tokens.size(), 64u - 40u);
  }
}

TEST_F(SpeculativeTest, TheConversationContinuesAsWithoutSpeculation) {
  // Two turns with speculation, then one without on both sessions.
  const std::vector<int32_t> prompt = RepeatingPrompt(*stories_);
  std::unique_ptr<Session> plain = NewSession(*stories_->target);
  std::unique_ptr<Session> speculative = NewSession(*stories_->target);
  const GenerationConfig config = Greedy(6);
  GenerationConfig with = config;
  with.speculative = Lookup();
  for (const std::vector<int32_t>& input : {prompt, std::vector<int32_t>{403, 407}}) {
    absl::StatusOr<GenerationResult> a = plain->GenerateFromTokens(input, config);
    absl::StatusOr<GenerationResult> b = speculative->GenerateFromTokens(input, with);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->tokens, b->tokens);
  }
  EXPECT_EQ(plain->Tokens(), speculative->Tokens());
  EXPECT_EQ(plain->processed_tokens(), speculative->processed_tokens());
  EXPECT_EQ(plain->free_slots(), speculative->free_slots());
  absl::StatusOr<GenerationResult> a = plain->GenerateFromTokens({261}, config);
  absl::StatusOr<GenerationResult> b = speculative->GenerateFromTokens({261}, config);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokens, b->tokens);
}

TEST_F(SpeculativeTest, SamplingWithSpeculationGivesValidReplies) {
  GenerationConfig config = Greedy(30);
  config.temperature = 0.8f;
  config.top_k = 40;
  config.seed = 3;
  std::unique_ptr<Session> same = NewSession(*stories_->same);
  std::unique_ptr<Session> few = NewSession(*stories_->few_layers);
  for (const SpeculativeConfig& speculative : {Lookup(), Draft(*same), Draft(*few)}) {
    config.speculative = speculative;
    const GenerationResult result = Run(*stories_, RepeatingPrompt(*stories_), config);
    EXPECT_EQ(result.tokens.size(), 30u);
    EXPECT_GT(result.stats.drafted_tokens, 0);
    EXPECT_LE(result.stats.accepted_tokens, result.stats.drafted_tokens);
  }
  // The same model as the draft: the target's and the draft's
  // distributions agree up to rounding, so nearly every proposal stays.
  config.speculative = Draft(*same);
  const GenerationResult result = Run(*stories_, {1, 403, 407, 261, 378}, config);
  EXPECT_GE(result.stats.accepted_tokens, result.stats.drafted_tokens * 9 / 10);
}

TEST_F(SpeculativeTest, BadConfigurationsAreRefusedWithAdvice) {
  const std::vector<int32_t> prompt = {1, 403};
  GenerationConfig config = Greedy(4);
  config.speculative = Lookup();

  std::unique_ptr<Session> plain = NewSession(*stories_->plain);
  absl::StatusOr<GenerationResult> result = plain->GenerateFromTokens(prompt, config);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("--verify-rows"));

  std::unique_ptr<Session> session = NewSession(*stories_->target);
  config.speculative.max_draft_tokens = 0;
  EXPECT_EQ(session->GenerateFromTokens(prompt, config).status().code(),
            absl::StatusCode::kInvalidArgument);
  config.speculative = Lookup();
  config.speculative.min_ngram = 3;
  config.speculative.max_ngram = 2;
  EXPECT_EQ(session->GenerateFromTokens(prompt, config).status().code(),
            absl::StatusCode::kInvalidArgument);

  config.speculative = {.kind = Kind::kDraftModel};
  EXPECT_EQ(session->GenerateFromTokens(prompt, config).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string other_gguf = *dir_ + "/other.gguf";
  synthetic::RandomLlamaSpec spec;
  spec.vocab_size = 640;
  spec.n_layers = 1;
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, other_gguf).ok());
  std::unique_ptr<Llm> other = Compile(other_gguf, "other", 0, 0);
  std::remove(other_gguf.c_str());
  std::unique_ptr<Session> other_vocabulary = NewSession(*other);
  config.speculative = Draft(*other_vocabulary);
  result = session->GenerateFromTokens(prompt, config);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("same vocabulary"));

  ASSERT_TRUE(session->SetCacheFullPolicy(runtime::CacheFullPolicy::Ring(4)).ok());
  config.speculative = Lookup();
  result = session->GenerateFromTokens(prompt, config);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("ring"));
}

}  // namespace
}  // namespace lnpu::framework
