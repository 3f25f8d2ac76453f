// framework::Session on the software NPU with stories260K compiled for a
// small cache (48 + 16 slots, prefill chunks {4, 16}): multi-turn
// generation without re-prefill, saved sessions, shared prefixes, sessions
// on threads, stop strings, context policies and finish reasons.
#include "framework/session.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "framework/generator.h"
#include "framework/llm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/framework/framework_test_util.h"

namespace lnpu::framework {
namespace {

using ::lnpu::framework::testing::Greedy;
using ::lnpu::framework::testing::ModelsDir;
using ::lnpu::framework::testing::NewTempDir;
using ::testing::HasSubstr;

// "Once upon a time" with BOS.
const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378};

class SessionTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kCapacity = 64;

  static void SetUpTestSuite() {
    dir_ = new std::string(NewTempDir());
    artifact_ = new std::string(Compile("stories", 48, 16));
    llm_ = Llm::Load(*artifact_, {.device = "soft"}).value().release();
  }
  static void TearDownTestSuite() {
    delete llm_;
    std::remove(artifact_->c_str());
    std::remove(dir_->c_str());
    delete artifact_;
    delete dir_;
  }

  static std::string Compile(const std::string& name, uint32_t max_prompt_len,
                             uint32_t min_response_len) {
    const std::string path = *dir_ + "/" + name + ".lnpu";
    compiler::CompileOptions options;
    options.max_prompt_len = max_prompt_len;
    options.min_response_len = min_response_len;
    options.prefill_chunks = {4, 16};
    const absl::Status compiled =
        compiler::CompileGguf(ModelsDir() + "/stories260K.gguf", path, options);
    EXPECT_TRUE(compiled.ok()) << compiled;
    return path;
  }

  std::unique_ptr<Session> NewSession() const { return testing::NewSession(*llm_); }

  std::vector<int32_t> Encode(const std::string& text) const {
    return llm_->tokenizer().Encode(text, false).value();
  }

  static GenerationResult Run(Session& session, const std::vector<int32_t>& tokens,
                              const GenerationConfig& config) {
    absl::StatusOr<GenerationResult> result = session.GenerateFromTokens(tokens, config);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *std::move(result) : GenerationResult{};
  }

  static std::string* dir_;
  static std::string* artifact_;
  static Llm* llm_;
};

std::string* SessionTest::dir_ = nullptr;
std::string* SessionTest::artifact_ = nullptr;
Llm* SessionTest::llm_ = nullptr;

TEST_F(SessionTest, MultiTurnEqualsOnePrefillOfTheConversation) {
  const std::vector<int32_t> turn2 = Encode(" Then the dog ran");
  const std::vector<int32_t> turn3 = Encode(" The end");
  std::unique_ptr<Session> chat = NewSession();
  const GenerationResult reply1 = Run(*chat, kPrompt, Greedy(8));
  ASSERT_EQ(reply1.tokens.size(), 8u);
  const int64_t after1 = chat->processed_tokens();
  const GenerationResult reply2 = Run(*chat, turn2, Greedy(8));
  // Only the new turn (and the first reply's last token) was prefilled.
  EXPECT_EQ(reply2.stats.prompt_tokens, static_cast<int>(1 + turn2.size()));
  EXPECT_EQ(chat->processed_tokens(), after1 + 1 + static_cast<int64_t>(turn2.size()) + 7);
  const GenerationResult reply3 = Run(*chat, turn3, Greedy(8));

  std::vector<int32_t> conversation = kPrompt;
  conversation.insert(conversation.end(), reply1.tokens.begin(), reply1.tokens.end());
  conversation.insert(conversation.end(), turn2.begin(), turn2.end());
  std::unique_ptr<Session> single = NewSession();
  EXPECT_EQ(Run(*single, conversation, Greedy(8)).tokens, reply2.tokens);

  conversation.insert(conversation.end(), reply2.tokens.begin(), reply2.tokens.end());
  conversation.insert(conversation.end(), turn3.begin(), turn3.end());
  single->Reset();
  EXPECT_EQ(Run(*single, conversation, Greedy(8)).tokens, reply3.tokens);

  conversation.insert(conversation.end(), reply3.tokens.begin(), reply3.tokens.end());
  EXPECT_EQ(chat->Tokens(), conversation);
}

TEST_F(SessionTest, SavedSessionContinuesIdentically) {
  const std::vector<int32_t> turn2 = Encode(" One day");
  std::unique_ptr<Session> original = NewSession();
  Run(*original, kPrompt, Greedy(6));
  const std::string path = *dir_ + "/chat.session";
  ASSERT_TRUE(original->SaveToFile(path).ok());

  std::unique_ptr<Session> restored = NewSession();
  ASSERT_TRUE(restored->LoadFromFile(path).ok());
  EXPECT_EQ(restored->Tokens(), original->Tokens());
  const GenerationResult a = Run(*original, turn2, Greedy(10));
  const GenerationResult b = Run(*restored, turn2, Greedy(10));
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.stats.prompt_tokens, b.stats.prompt_tokens);

  // A model compiled for another capacity refuses the file.
  const std::string other_artifact = Compile("stories_other_capacity", 32, 16);
  {
    absl::StatusOr<std::unique_ptr<Llm>> other = Llm::Load(other_artifact, {.device = "soft"});
    ASSERT_TRUE(other.ok()) << other.status();
    std::unique_ptr<Session> session = (*other)->CreateSession().value();
    const absl::Status refused = session->LoadFromFile(path);
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(refused.message()),
                HasSubstr("has 64 slots but this model was compiled for 48"));
    EXPECT_THAT(std::string(refused.message()), HasSubstr(path));
    EXPECT_TRUE(session->Tokens().empty());
  }
  std::remove(other_artifact.c_str());
  std::remove(path.c_str());
}

TEST_F(SessionTest, SaveNeverReplacesTheModelOrANonRegularFile) {
  std::unique_ptr<Session> session = NewSession();
  Run(*session, kPrompt, Greedy(2));
  const absl::Status model = session->SaveToFile(*artifact_);
  EXPECT_EQ(model.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.message()), HasSubstr("destroy the input"));
  // The artifact still loads.
  EXPECT_TRUE(Llm::Load(*artifact_, {.device = "soft"}).ok());
  const std::string fifo = *dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(session->SaveToFile(fifo).code(), absl::StatusCode::kInvalidArgument);
  std::remove(fifo.c_str());
}

TEST_F(SessionTest, SessionOutlivesItsLlm) {
  absl::StatusOr<std::unique_ptr<Llm>> llm = Llm::Load(*artifact_, {.device = "soft"});
  ASSERT_TRUE(llm.ok()) << llm.status();
  std::unique_ptr<Session> alone = (*llm)->CreateSession().value();
  std::unique_ptr<Session> reference = NewSession();
  llm->reset();  // the Llm goes first
  EXPECT_EQ(Run(*alone, kPrompt, Greedy(8)).tokens, Run(*reference, kPrompt, Greedy(8)).tokens);
}

TEST_F(SessionTest, SharedPrefixIsCopiedNotRecomputed) {
  std::unique_ptr<Session> system = NewSession();
  ASSERT_TRUE(system->AppendTokens(kPrompt).ok());
  const uint64_t tokens_before = system->runtime_stats().tokens;

  std::unique_ptr<Session> user = NewSession();
  ASSERT_TRUE(user->CopyPrefixFrom(*system, kPrompt.size()).ok());
  EXPECT_EQ(user->Tokens(), kPrompt);
  EXPECT_EQ(user->runtime_stats().tokens, 0u);  // nothing ran in `user`
  const GenerationResult copied = Run(*user, Encode(" there"), Greedy(8));

  std::unique_ptr<Session> recomputed = NewSession();
  std::vector<int32_t> whole = kPrompt;
  for (int32_t t : Encode(" there")) whole.push_back(t);
  EXPECT_EQ(Run(*recomputed, whole, Greedy(8)).tokens, copied.tokens);
  EXPECT_EQ(system->runtime_stats().tokens, tokens_before);
}

TEST_F(SessionTest, InterleavedSessionsOnTwoThreadsEqualTheirSoloRuns) {
  const std::vector<std::vector<int32_t>> turns_a = {kPrompt, Encode(" The cat"),
                                                     Encode(" Later")};
  const std::vector<std::vector<int32_t>> turns_b = {{1, 403}, Encode(" a big"),
                                                     Encode(" so")};
  auto converse = [&](Session& session, const std::vector<std::vector<int32_t>>& turns) {
    std::vector<std::vector<int32_t>> replies;
    for (const std::vector<int32_t>& turn : turns) {
      replies.push_back(Run(session, turn, Greedy(6)).tokens);
    }
    return replies;
  };
  std::unique_ptr<Session> solo = NewSession();
  const auto solo_a = converse(*solo, turns_a);
  solo->Reset();
  const auto solo_b = converse(*solo, turns_b);

  for (int round = 0; round < 3; ++round) {
    std::unique_ptr<Session> a = NewSession(), b = NewSession();
    std::vector<std::vector<int32_t>> threaded_a, threaded_b;
    std::thread ta([&] { threaded_a = converse(*a, turns_a); });
    std::thread tb([&] { threaded_b = converse(*b, turns_b); });
    ta.join();
    tb.join();
    EXPECT_EQ(threaded_a, solo_a);
    EXPECT_EQ(threaded_b, solo_b);
  }
  // And turn by turn on one thread.
  std::unique_ptr<Session> a = NewSession(), b = NewSession();
  for (size_t i = 0; i < turns_a.size(); ++i) {
    EXPECT_EQ(Run(*a, turns_a[i], Greedy(6)).tokens, solo_a[i]);
    EXPECT_EQ(Run(*b, turns_b[i], Greedy(6)).tokens, solo_b[i]);
  }
}

TEST_F(SessionTest, StopStringSplitAcrossTokensIsCaughtAndNotEmitted) {
  // The greedy story: ", there was a little girl named Lily. ..."
  std::unique_ptr<Session> session = NewSession();
  const GenerationResult free_run = Run(*session, kPrompt, Greedy(12));
  ASSERT_THAT(free_run.text, HasSubstr("little girl named"));
  // "girl na" ends inside the token of " named".
  GenerationConfig config = Greedy(30);
  config.stop_strings = {"girl na"};
  std::string streamed;
  session->Reset();
  absl::StatusOr<GenerationResult> stopped = session->GenerateFromTokens(
      kPrompt, config, [&](int32_t, std::string_view text) {
        streamed += text;
        return true;
      });
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->finish_reason, FinishReason::kStop);
  EXPECT_EQ(stopped->text, ", there was a little ");
  EXPECT_EQ(streamed, stopped->text);
  EXPECT_LT(stopped->tokens.size(), free_run.tokens.size());
}

TEST_F(SessionTest, StopTokensEndTheReplyWithoutBeingReturned) {
  std::unique_ptr<Session> session = NewSession();
  const GenerationResult free_run = Run(*session, kPrompt, Greedy(6));
  GenerationConfig config = Greedy(20);
  config.stop_token_ids = {free_run.tokens[3]};
  session->Reset();
  const GenerationResult stopped = Run(*session, kPrompt, config);
  EXPECT_EQ(stopped.finish_reason, FinishReason::kStop);
  EXPECT_EQ(stopped.tokens,
            std::vector<int32_t>(free_run.tokens.begin(), free_run.tokens.begin() + 3));
  // The stop token is part of the conversation.
  EXPECT_EQ(session->Tokens().back(), free_run.tokens[3]);
}

TEST_F(SessionTest, FullCacheEndsWithLengthByDefault) {
  std::unique_ptr<Session> session = NewSession();
  const GenerationResult result = Run(*session, kPrompt, Greedy(1000));
  EXPECT_EQ(result.finish_reason, FinishReason::kLength);
  EXPECT_EQ(result.tokens.size(), kCapacity - kPrompt.size());
  EXPECT_EQ(session->free_slots(), 1u);  // kept for the pending last token
  // More input does not fit.
  absl::StatusOr<GenerationResult> more = session->GenerateFromTokens(Encode(" more"), Greedy(4));
  EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(more.status().message()), HasSubstr("ring context policy"));
}

TEST_F(SessionTest, RingPolicyGeneratesFourTimesTheCapacity) {
  std::unique_ptr<Session> session = NewSession();
  ASSERT_TRUE(
      session->SetCacheFullPolicy(runtime::CacheFullPolicy::Ring(4)).ok());
  const GenerationResult result = Run(*session, kPrompt, Greedy(4 * kCapacity));
  EXPECT_EQ(result.finish_reason, FinishReason::kLength);
  EXPECT_EQ(result.tokens.size(), 4 * kCapacity);
  EXPECT_EQ(session->processed_tokens(), kPrompt.size() + 4 * kCapacity - 1);
  EXPECT_EQ(session->runtime_stats().evicted_tokens,
            kPrompt.size() + 4 * kCapacity - 1 - kCapacity);
  // The sinks keep the start of the story; the rest is the latest window.
  const std::vector<int32_t> kept = session->Tokens();
  ASSERT_EQ(kept.size(), kCapacity + 1);  // + the pending last token
  EXPECT_EQ(std::vector<int32_t>(kept.begin(), kept.begin() + 4),
            std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 4));
  EXPECT_EQ(kept.back(), result.tokens.back());

  // The policy cannot change once the ring wrapped...
  EXPECT_EQ(session->SetCacheFullPolicy({}).code(), absl::StatusCode::kFailedPrecondition);
  // ...and a ring too small for the largest prefill chunk is refused.
  session->Reset();
  EXPECT_EQ(session
                ->SetCacheFullPolicy(runtime::CacheFullPolicy::Ring(kCapacity - 8))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SessionTest, CancellationAndStatistics) {
  std::unique_ptr<Session> session = NewSession();
  int calls = 0;
  absl::StatusOr<GenerationResult> result = session->GenerateFromTokens(
      kPrompt, Greedy(20), [&](int32_t, std::string_view) { return ++calls < 3; });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(result->tokens.size(), 3u);
  EXPECT_EQ(result->stats.prompt_tokens, 5);
  EXPECT_EQ(result->stats.generated_tokens, 3);
  EXPECT_GT(result->stats.time_to_first_token_ms, 0);
  EXPECT_GE(result->stats.time_to_first_token_ms, result->stats.prefill_ms);
  EXPECT_GT(result->stats.decode_tokens_per_second, 0);
  EXPECT_GT(session->device_memory_bytes(), 0u);
  EXPECT_EQ(FinishReasonName(FinishReason::kError), "error");
}

TEST_F(SessionTest, BadInputIsRefusedAndChangesNothing) {
  std::unique_ptr<Session> session = NewSession();
  Run(*session, kPrompt, Greedy(3));
  const std::vector<int32_t> before = session->Tokens();
  EXPECT_EQ(session->GenerateFromTokens({5000}, Greedy(3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  GenerationConfig bad = Greedy(3);
  bad.top_p = 2;
  EXPECT_EQ(session->GenerateFromTokens(Encode(" x"), bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->Tokens(), before);
  // A fresh session's first input is bounded by max_prompt_len.
  std::unique_ptr<Session> fresh = NewSession();
  const absl::Status too_long = fresh->AppendTokens(std::vector<int32_t>(49, 300));
  EXPECT_EQ(too_long.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_long.message()), HasSubstr("--max-prompt-len"));
}


// Generator (framework/generator.h): the same reply one step at a time.

TEST_F(SessionTest, GeneratorInChunksEqualsGenerateFromTokens) {
  std::vector<int32_t> prompt = kPrompt;
  const std::vector<int32_t> more = Encode(" there was a little girl named Lily");
  prompt.insert(prompt.end(), more.begin(), more.end());
  ASSERT_GT(prompt.size(), 8u);
  std::unique_ptr<Session> whole = NewSession();
  const GenerationResult expected = Run(*whole, prompt, Greedy(12));

  std::unique_ptr<Session> stepped = NewSession();
  std::string streamed;
  absl::StatusOr<Generator> generator = Generator::Start(
      *stepped, prompt, Greedy(12),
      {.max_prefill_tokens_per_step = 3, .on_token = [&](int32_t, std::string_view text) {
         streamed += text;
         return true;
       }});
  ASSERT_TRUE(generator.ok()) << generator.status();
  int prefill_steps = 0;
  while (!generator->done()) {
    if (generator->prefilling()) ++prefill_steps;
    ASSERT_TRUE(generator->Step().ok());
  }
  EXPECT_EQ(prefill_steps, static_cast<int>((prompt.size() + 2) / 3));
  const GenerationResult result = generator->TakeResult();
  EXPECT_EQ(result.tokens, expected.tokens);
  EXPECT_EQ(result.text, expected.text);
  EXPECT_EQ(streamed, expected.text);
  EXPECT_EQ(result.finish_reason, FinishReason::kLength);
  EXPECT_EQ(result.stats.prompt_tokens, static_cast<int>(prompt.size()));
  EXPECT_EQ(stepped->Tokens(), whole->Tokens());
}

TEST_F(SessionTest, GeneratorCancelEndsBeforeTheNextToken) {
  std::unique_ptr<Session> session = NewSession();
  absl::StatusOr<Generator> generator = Generator::Start(*session, kPrompt, Greedy(20), {});
  ASSERT_TRUE(generator.ok()) << generator.status();
  while (generator->generated_tokens() < 3) ASSERT_TRUE(generator->Step().ok());
  generator->Cancel();
  ASSERT_TRUE(generator->Step().ok());
  EXPECT_TRUE(generator->done());
  EXPECT_EQ(generator->result().finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(generator->result().tokens.size(), 3u);
  EXPECT_EQ(generator->Step().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SessionTest, GeneratorLogitsFilterRestrictsTheTokens) {
  std::unique_ptr<Session> free_session = NewSession();
  const GenerationResult unfiltered = Run(*free_session, kPrompt, Greedy(6));
  ASSERT_FALSE(unfiltered.tokens.empty());
  const int32_t banned = unfiltered.tokens[0];
  std::unique_ptr<Session> session = NewSession();
  int calls = 0;
  absl::StatusOr<Generator> generator = Generator::Start(
      *session, kPrompt, Greedy(6),
      {.logits_filter = [&](absl::Span<const int32_t> generated, absl::Span<float> logits) {
         EXPECT_EQ(generated.size(), static_cast<size_t>(calls));
         ++calls;
         logits[banned] = -std::numeric_limits<float>::infinity();
       }});
  ASSERT_TRUE(generator.ok()) << generator.status();
  while (!generator->done()) ASSERT_TRUE(generator->Step().ok());
  EXPECT_EQ(calls, 6);
  EXPECT_THAT(generator->result().tokens, ::testing::Not(::testing::Contains(banned)));
}

TEST_F(SessionTest, GeneratorStartRefusesBadInputAndChangesNothing) {
  std::unique_ptr<Session> session = NewSession();
  GenerationConfig bad = Greedy(4);
  bad.top_p = 0;
  EXPECT_EQ(Generator::Start(*session, kPrompt, bad, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<int32_t> too_long(100, 300);
  EXPECT_EQ(Generator::Start(*session, too_long, Greedy(4), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(session->Tokens().empty());
}

}  // namespace
}  // namespace lnpu::framework
