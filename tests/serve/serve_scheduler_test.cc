// npu-serve's scheduler on the software NPU with stories260K (no
// sockets): concurrent requests equal their solo runs, the prefix cache
// restores a resent conversation, the queue is bounded, cancellation and
// shutdown free the sessions.
#include "tools/npu-serve/scheduler.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "framework/generator.h"
#include "framework/llm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_temp_dir.h"

namespace lnpu::serve {
namespace {

framework::GenerationConfig Greedy(int max_new_tokens) {
  framework::GenerationConfig config;
  config.max_new_tokens = max_new_tokens;
  config.stop_at_eos = false;
  return config;
}

// Waits for the end of `stream`'s request and returns its outcome.
RequestOutcome Await(RequestStream& stream) {
  std::string text;
  while (!stream.Wait(absl::Seconds(1), text)) {
  }
  return stream.outcome();
}

class SchedulerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = lnpu::testing::ProcessTempDir() + "serve_scheduler_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = new std::string(pattern);
    const char* models = std::getenv("LNPU_MODELS_DIR");
    compiler::CompileOptions options;
    options.max_prompt_len = 48;
    options.min_response_len = 16;
    options.prefill_chunks = {4, 16};
    // Batched decode graphs: sessions are lanes of batches of 2 or 4.
    options.decode_batches = {2, 4};
    const std::string artifact = *dir_ + "/stories.lnpu";
    const absl::Status compiled = compiler::CompileGguf(
        std::string(models ? models : "models") + "/stories260K.gguf", artifact, options);
    ASSERT_TRUE(compiled.ok()) << compiled;
    llm_ = framework::Llm::Load(artifact, {.device = "soft"}).value().release();
    std::remove(artifact.c_str());
  }
  static void TearDownTestSuite() {
    delete llm_;
    std::remove(dir_->c_str());
    delete dir_;
  }

  std::vector<int32_t> Prompt(const std::string& text) const {
    return llm_->tokenizer().Encode(text, true).value();
  }

  // The reply of a fresh session, as the framework gives it.
  // The reply of a fresh session, its prompt run at most
  // `max_prefill_tokens_per_step` tokens at a time (0: the session's own
  // plan).
  framework::GenerationResult Solo(const std::vector<int32_t>& prompt,
                                   const framework::GenerationConfig& config,
                                   uint32_t max_prefill_tokens_per_step = 0) const {
    std::unique_ptr<framework::Session> session = llm_->CreateSession().value();
    framework::Generator generator =
        framework::Generator::Start(*session, prompt, config,
                                    {.max_prefill_tokens_per_step = max_prefill_tokens_per_step})
            .value();
    while (!generator.done()) EXPECT_TRUE(generator.Step().ok());
    return generator.TakeResult();
  }

  std::unique_ptr<Scheduler> NewScheduler(SchedulerOptions options) {
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
        Scheduler::Create(*llm_, options, metrics_);
    EXPECT_TRUE(scheduler.ok()) << scheduler.status();
    return scheduler.ok() ? *std::move(scheduler) : nullptr;
  }

  Metrics metrics_;
  static std::string* dir_;
  static framework::Llm* llm_;
};

std::string* SchedulerTest::dir_ = nullptr;
framework::Llm* SchedulerTest::llm_ = nullptr;

TEST_F(SchedulerTest, ConcurrentRequestsEqualTheirSoloRuns) {
  std::unique_ptr<Scheduler> scheduler =
      NewScheduler({.sessions = 2, .max_queue = 8, .prefill_chunk = 4});
  const std::vector<std::string> texts = {
      "Once upon a time", "The little dog ran to the park and saw a big red ball",
      "Lily liked to", "One day, a boy named Tim went"};
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < texts.size(); ++i) {
    streams.push_back(scheduler->Submit(Prompt(texts[i]), Greedy(10 + 3 * i)).value());
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    const RequestOutcome outcome = Await(*streams[i]);
    ASSERT_TRUE(outcome.status.ok()) << outcome.status;
    const framework::GenerationResult solo = Solo(Prompt(texts[i]), Greedy(10 + 3 * i));
    EXPECT_EQ(outcome.result.tokens, solo.tokens) << texts[i];
    EXPECT_EQ(outcome.result.text, solo.text);
    EXPECT_EQ(outcome.result.stats.prompt_tokens, static_cast<int>(Prompt(texts[i]).size()));
  }
  const MetricsGauges gauges = scheduler->Gauges();
  EXPECT_EQ(gauges.active_requests, 0u);
  EXPECT_EQ(gauges.queue_depth, 0u);
  EXPECT_EQ(gauges.sessions, 2u);
  EXPECT_GT(gauges.device_memory_bytes, llm_->weights_device_memory_bytes());
}

// A batched decode step gives each session what it alone gives. The
// prompts are prefilled as in the solo runs (from position 0, 4 tokens per
// step, no prefix cache): where the chunks of a prompt begin changes the
// f32 rounding of attention and whether a matmul takes the GEMV or GEMM
// kernel, so differently chunked prompts may flip a near-tie greedy choice
// on some CPU.
TEST_F(SchedulerTest, BatchedDecodeStepsEqualSoloRunsWhateverTheSessionGroups) {
  constexpr uint32_t kPrefillChunk = 4;
  const std::vector<std::string> texts = {
      "Once upon a time", "The little dog ran to the park and saw a big red ball",
      "Lily liked to", "One day, a boy named Tim went", "The sun was", "Tom and Sue",
      "A cat sat on the mat and", "Mom said"};
  std::vector<framework::GenerationResult> solo;
  for (size_t i = 0; i < texts.size(); ++i) {
    solo.push_back(Solo(Prompt(texts[i]), Greedy(6 + 5 * (i % 4)), kPrefillChunk));
  }
  // 4: one batch of 4; 3: a batch of 2 and a plain session; 4 unbatched.
  for (const auto& [sessions, batch] :
       std::vector<std::pair<size_t, bool>>{{4, true}, {3, true}, {4, false}}) {
    SchedulerOptions options{.sessions = sessions,
                             .max_queue = 8,
                             .prefill_chunk = kPrefillChunk,
                             .prefix_cache_entries = 0};
    options.batch_decode = batch;
    std::unique_ptr<Scheduler> scheduler = NewScheduler(options);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (size_t i = 0; i < texts.size(); ++i) {
      streams.push_back(scheduler->Submit(Prompt(texts[i]), Greedy(6 + 5 * (i % 4))).value());
    }
    for (size_t i = 0; i < texts.size(); ++i) {
      const RequestOutcome outcome = Await(*streams[i]);
      ASSERT_TRUE(outcome.status.ok()) << outcome.status;
      EXPECT_EQ(outcome.result.tokens, solo[i].tokens) << sessions << " " << batch << " " << texts[i];
      EXPECT_EQ(outcome.result.text, solo[i].text);
    }
    const MetricsGauges gauges = scheduler->Gauges();
    EXPECT_EQ(gauges.sessions, sessions);
    if (batch) {
      EXPECT_GT(gauges.batched_decode_steps, 0u);
      EXPECT_GE(gauges.batched_decode_tokens, 2 * gauges.batched_decode_steps);
    } else {
      EXPECT_EQ(gauges.batched_decode_steps, 0u);
    }
  }
}

// The step observer (npu-serve --trace) sees each session's own runs and
// the batched decode steps of the batch's sessions, with device times.
TEST_F(SchedulerTest, StepObserverSeesSessionAndBatchedSteps) {
  absl::Mutex mu;
  std::map<std::string, std::vector<std::pair<std::string, uint32_t>>> steps;  // who: graph, tokens
  bool all_profiled = true;
  SchedulerOptions options{.sessions = 4, .max_queue = 8, .prefill_chunk = 4};
  options.step_observer = [&](const std::string& who, const runtime::StepTimeline& step) {
    absl::MutexLock lock(&mu);
    steps[who].emplace_back(step.graph_spec->name, step.tokens);
    all_profiled &= step.device_profiled && !step.jobs.empty() &&
                    step.jobs.front().commands.size() == step.graph_spec->streams[0].commands.size();
  };
  // The scheduler thread waits in its first step until every request is
  // queued: a request that ended before the last one was submitted would
  // hand its session on, and the sessions would not all run at once.
  absl::Notification all_submitted;
  options.step_observer = [&, record = options.step_observer](
                              const std::string& who, const runtime::StepTimeline& step) {
    all_submitted.WaitForNotification();
    record(who, step);
  };
  std::unique_ptr<Scheduler> scheduler = NewScheduler(options);
  const std::vector<std::string> texts = {"Once upon a time", "Lily liked to", "The sun was",
                                          "Tom and Sue"};
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const std::string& text : texts) {
    streams.push_back(scheduler->Submit(Prompt(text), Greedy(12)).value());
  }
  all_submitted.Notify();
  for (auto& stream : streams) ASSERT_TRUE(Await(*stream).status.ok());
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(all_profiled);
  // Each session prefilled its own prompt.
  for (const char* who : {"session 1", "session 2", "session 3", "session 4"}) {
    ASSERT_TRUE(steps.contains(who)) << who;
    EXPECT_TRUE(absl::StartsWith(steps[who].front().first, "prefill")) << who;
  }
  // The four sessions are the lanes of one batch; its steps ran several.
  ASSERT_TRUE(steps.contains("sessions 1-4"));
  uint32_t batched_tokens = 0;
  for (const auto& [graph, tokens] : steps["sessions 1-4"]) {
    EXPECT_TRUE(absl::StartsWith(graph, "decode_batch_")) << graph;
    EXPECT_GE(tokens, 2u);
    batched_tokens += tokens;
  }
  EXPECT_EQ(batched_tokens, scheduler->Gauges().batched_decode_tokens);
}

// The span observer (npu-serve --trace) sees the host's scheduling: each
// request queued then generating on its own track, in order of Submit, and
// the scheduler's rounds, each enclosing the steps it ran.
TEST_F(SchedulerTest, SpanObserverSeesRequestsAndRounds) {
  absl::Mutex mu;
  std::map<std::string, std::vector<std::pair<std::string, runtime::TimeSpan>>> spans;
  std::vector<runtime::TimeSpan> steps;
  SchedulerOptions options{.sessions = 2, .max_queue = 8};
  options.span_observer = [&](absl::string_view name, absl::string_view track,
                              const runtime::TimeSpan& span) {
    absl::MutexLock lock(&mu);
    spans[std::string(track)].emplace_back(std::string(name), span);
  };
  options.step_observer = [&](const std::string&, const runtime::StepTimeline& step) {
    absl::MutexLock lock(&mu);
    steps.push_back(step.step);
  };
  std::unique_ptr<Scheduler> scheduler = NewScheduler(options);
  // Three requests on two sessions: the third waits for a free one.
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const char* text : {"Once upon a time", "Lily liked to", "The sun was"}) {
    streams.push_back(scheduler->Submit(Prompt(text), Greedy(8)).value());
  }
  for (auto& stream : streams) ASSERT_TRUE(Await(*stream).status.ok());
  absl::MutexLock lock(&mu);
  for (const char* track : {"request 1", "request 2", "request 3"}) {
    ASSERT_TRUE(spans.contains(track)) << track;
    const auto& request = spans[track];
    ASSERT_EQ(request.size(), 2u) << track;
    EXPECT_EQ(request[0].first, "queued");
    EXPECT_EQ(request[1].first, "generating");
    EXPECT_LE(request[0].second.start_ns, request[0].second.end_ns);
    EXPECT_EQ(request[0].second.end_ns, request[1].second.start_ns) << track;
    EXPECT_LT(request[1].second.start_ns, request[1].second.end_ns);
  }
  // Request 3 was admitted only after request 1 or 2 had finished.
  EXPECT_GE(spans["request 3"][1].second.start_ns,
            std::min(spans["request 1"][1].second.end_ns, spans["request 2"][1].second.end_ns));
  size_t admits = 0, finishes = 0;
  std::vector<runtime::TimeSpan> rounds;
  for (const auto& [name, span] : spans["scheduler"]) {
    admits += name == "admit";
    finishes += name == "finish";
    if (name == "round") rounds.push_back(span);
  }
  EXPECT_EQ(admits, 3u);
  EXPECT_EQ(finishes, 3u);
  ASSERT_FALSE(steps.empty());
  // Every step ran inside a round.
  for (const runtime::TimeSpan& step : steps) {
    EXPECT_TRUE(std::any_of(rounds.begin(), rounds.end(), [&](const runtime::TimeSpan& round) {
      return round.start_ns <= step.start_ns && step.end_ns <= round.end_ns;
    })) << "a step at " << step.start_ns << " outside every round";
  }
}

TEST_F(SchedulerTest, ResentConversationPrefillsOnlyTheNewTurn) {
  std::unique_ptr<Scheduler> scheduler = NewScheduler({.sessions = 1});
  const std::vector<int32_t> first = Prompt("Once upon a time, there was a");
  const RequestOutcome turn1 = Await(*scheduler->Submit(first, Greedy(8)).value());
  ASSERT_TRUE(turn1.status.ok());
  std::vector<int32_t> second = first;
  second.insert(second.end(), turn1.result.tokens.begin(), turn1.result.tokens.end());
  const std::vector<int32_t> more = llm_->tokenizer().Encode(" Then they", false).value();
  second.insert(second.end(), more.begin(), more.end());

  const RequestOutcome turn2 = Await(*scheduler->Submit(second, Greedy(8)).value());
  ASSERT_TRUE(turn2.status.ok());
  // The first turn's prompt and reply were run, except the reply's last
  // token (never run through the model).
  EXPECT_EQ(turn2.cached_tokens, static_cast<int>(first.size() + turn1.result.tokens.size() - 1));
  EXPECT_EQ(turn2.result.stats.prompt_tokens, static_cast<int>(second.size()));
  // The same computation in plain sessions: turn 1, its state saved and
  // restored (what the prefix cache does), then the rest. (A prompt
  // prefilled whole from position 0 may differ in f32 rounding.)
  std::unique_ptr<framework::Session> solo = llm_->CreateSession().value();
  ASSERT_EQ(solo->GenerateFromTokens(first, Greedy(8)).value().tokens, turn1.result.tokens);
  std::unique_ptr<framework::Session> resumed = llm_->CreateSession().value();
  ASSERT_TRUE(resumed->RestoreState(solo->SaveState().value()).ok());
  EXPECT_EQ(turn2.result.tokens,
            resumed
                ->GenerateFromTokens(absl::MakeConstSpan(second).subspan(turn2.cached_tokens),
                                     Greedy(8))
                .value()
                .tokens);
  EXPECT_EQ(scheduler->Gauges().prefix_cache_hits, 1u);
}

TEST_F(SchedulerTest, FullQueueRefusesAndAcceptedRequestsFinish) {
  std::unique_ptr<Scheduler> scheduler = NewScheduler({.sessions = 1, .max_queue = 2});
  std::vector<std::shared_ptr<RequestStream>> accepted;
  int refused = 0;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<std::shared_ptr<RequestStream>> stream =
        scheduler->Submit(Prompt("Once upon a time"), Greedy(16));
    if (stream.ok()) {
      accepted.push_back(*stream);
    } else {
      EXPECT_EQ(stream.status().code(), absl::StatusCode::kResourceExhausted);
      ++refused;
    }
  }
  EXPECT_GE(refused, 7);
  for (const auto& stream : accepted) EXPECT_TRUE(Await(*stream).status.ok());
  EXPECT_EQ(scheduler->Gauges().active_requests, 0u);
}

TEST_F(SchedulerTest, InputErrorsArriveThroughTheStream) {
  std::unique_ptr<Scheduler> scheduler = NewScheduler({.sessions = 1});
  const RequestOutcome too_long =
      Await(*scheduler->Submit(std::vector<int32_t>(100, 300), Greedy(4)).value());
  EXPECT_FALSE(too_long.status.ok());
  framework::GenerationConfig bad = Greedy(4);
  bad.top_p = 0;
  EXPECT_EQ(Await(*scheduler->Submit(Prompt("Once"), bad).value()).status.code(),
            absl::StatusCode::kInvalidArgument);
  // The session is free again.
  EXPECT_TRUE(Await(*scheduler->Submit(Prompt("Once"), Greedy(4)).value()).status.ok());
}

TEST_F(SchedulerTest, CancelledRequestEndsAndFreesItsSession) {
  SchedulerOptions options{.sessions = 1};
  options.context_policy.on_full = runtime::CacheFullPolicy::OnFull::kRing;
  std::unique_ptr<Scheduler> scheduler = NewScheduler(options);
  // Endless with the ring: only the cancellation ends it.
  std::shared_ptr<RequestStream> stream =
      scheduler->Submit(Prompt("Once upon a time"), Greedy(1 << 30)).value();
  std::string text;
  while (text.empty()) ASSERT_FALSE(stream->Wait(absl::Seconds(10), text));
  stream->Cancel();
  const RequestOutcome outcome = Await(*stream);
  EXPECT_EQ(outcome.result.finish_reason, framework::FinishReason::kCancelled);
  EXPECT_EQ(scheduler->Gauges().active_requests, 0u);
  EXPECT_TRUE(Await(*scheduler->Submit(Prompt("Once"), Greedy(4)).value()).status.ok());
}

TEST_F(SchedulerTest, DrainCancelsWhatOutlastsTheTimeoutAndRefusesNewRequests) {
  SchedulerOptions options{.sessions = 1, .max_queue = 4};
  options.context_policy.on_full = runtime::CacheFullPolicy::OnFull::kRing;
  std::unique_ptr<Scheduler> scheduler = NewScheduler(options);
  std::shared_ptr<RequestStream> endless =
      scheduler->Submit(Prompt("Once upon a time"), Greedy(1 << 30)).value();
  std::shared_ptr<RequestStream> queued =
      scheduler->Submit(Prompt("Once"), Greedy(1 << 30)).value();
  scheduler->StopAccepting();
  EXPECT_EQ(scheduler->Submit(Prompt("Once"), Greedy(4)).status().code(),
            absl::StatusCode::kUnavailable);
  scheduler->Drain(absl::Milliseconds(200));
  EXPECT_EQ(Await(*endless).result.finish_reason, framework::FinishReason::kCancelled);
  EXPECT_EQ(Await(*queued).result.finish_reason, framework::FinishReason::kCancelled);
  EXPECT_EQ(scheduler->Gauges().active_requests, 0u);
}

}  // namespace
}  // namespace lnpu::serve
