// The runtime on the software NPU with artifacts compiled from the bundled
// stories260K model and from random llama models.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/driver/kernel_file.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "runtime/model.h"
#include "runtime/sequence.h"
#include "runtime/step_timeline.h"
#include "tests/runtime/runtime_test_util.h"
#include "runtime/cache_snapshot.h"
#include "tests/test_device.h"

namespace lnpu::runtime {
namespace {

using ::lnpu::runtime::testing::Argmax;
using ::lnpu::runtime::testing::ModelsDir;
using ::lnpu::runtime::testing::NewTempDir;
using ::lnpu::runtime::testing::RelativeDifference;
using ::lnpu::runtime::testing::SuiteArtifact;
using ::testing::ElementsAre;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// "Once upon a time" with BOS.
const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378};

std::vector<float> Copy(absl::Span<const float> logits) {
  return std::vector<float>(logits.begin(), logits.end());
}

uint64_t Param(const Device& device, uint32_t param) {
  absl::StatusOr<uint64_t> value = device.GetParam(param);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.value_or(0);
}

uint64_t MemoryUsed(const Device& device) {
  absl::StatusOr<uint64_t> used = device.GetParam(DRM_LNPU_PARAM_MEMORY_USED);
  EXPECT_TRUE(used.ok()) << used.status();
  return used.value_or(0);
}

// Feeds `tokens` in runs of the given lengths (the last one takes the
// rest) and returns the logits after each run.
std::vector<std::vector<float>> FeedInRuns(Sequence& session, const std::vector<int32_t>& tokens,
                                           const std::vector<size_t>& runs) {
  std::vector<std::vector<float>> out;
  size_t done = 0;
  for (size_t i = 0; done < tokens.size(); ++i) {
    const size_t n = i < runs.size() ? std::min(runs[i], tokens.size() - done)
                                     : tokens.size() - done;
    absl::StatusOr<absl::Span<const float>> logits =
        session.Forward(absl::MakeConstSpan(tokens).subspan(done, n));
    EXPECT_TRUE(logits.ok()) << logits.status();
    if (!logits.ok()) return out;
    out.push_back(Copy(*logits));
    done += n;
  }
  return out;
}

// The logits of `tokens` fed three ways on new sequences of `new_sequence`:
// at once, one by one, and in the runs `split` (FeedInRuns: four runs),
// each followed by one decode step of `next`. Expects the logits of the
// last prompt token and of the decoded token to agree within 1e-4.
struct ChunkedLogits {
  std::vector<std::vector<float>> at_once, one_by_one, split;
};
ChunkedLogits FeedThreeWays(const std::function<std::unique_ptr<Sequence>()>& new_sequence,
                            const std::vector<int32_t>& tokens, const std::vector<size_t>& split,
                            int32_t next) {
  auto run = [&](const std::vector<size_t>& runs) {
    std::unique_ptr<Sequence> session = new_sequence();
    if (session == nullptr) return std::vector<std::vector<float>>();
    std::vector<std::vector<float>> out = FeedInRuns(*session, tokens, runs);
    absl::StatusOr<absl::Span<const float>> after = session->Forward(absl::MakeConstSpan(&next, 1));
    EXPECT_TRUE(after.ok()) << after.status();
    out.push_back(after.ok() ? Copy(*after) : std::vector<float>());
    return out;
  };
  ChunkedLogits logits{run({tokens.size()}), run(std::vector<size_t>(tokens.size(), 1)),
                       run(split)};
  EXPECT_EQ(logits.at_once.size(), 2u);
  EXPECT_EQ(logits.one_by_one.size(), tokens.size() + 1);
  EXPECT_EQ(logits.split.size(), 5u);
  if (logits.at_once.size() != 2u || logits.one_by_one.size() != tokens.size() + 1 ||
      logits.split.size() != 5u) {
    return {};
  }
  // Logits of the last prompt token, then of the decoded token.
  EXPECT_LE(RelativeDifference(logits.one_by_one[tokens.size() - 1], logits.at_once[0]), 1e-4);
  EXPECT_LE(RelativeDifference(logits.split[3], logits.at_once[0]), 1e-4);
  EXPECT_LE(RelativeDifference(logits.one_by_one.back(), logits.at_once.back()), 1e-4);
  EXPECT_LE(RelativeDifference(logits.split.back(), logits.at_once.back()), 1e-4);
  return logits;
}

class RuntimeTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kMaxPromptLen = 48;
  static constexpr uint32_t kMinResponseLen = 16;

  static void SetUpTestSuite() {
    stories_ = new SuiteArtifact("stories260K.lnpu");
    compiler::CompileOptions options;
    options.max_prompt_len = kMaxPromptLen;
    options.min_response_len = kMinResponseLen;
    options.prefill_chunks = {4, 16};
    // An F32 cache. (With an F16 one ATTENTION reads a chunk's own rows
    // rounded as stored, so chunking does not change the values it reads;
    // tests/end_to_end covers that cache.)
    options.kv_dtype = compiler::CompileOptions::KvType::kF32;
    const absl::Status compiled =
        compiler::CompileGguf(ModelsDir() + "/stories260K.gguf", stories_->path, options);
    ASSERT_TRUE(compiled.ok()) << compiled;
  }

  static void TearDownTestSuite() { delete stories_; }

  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Device>> device = Device::Open(lnpu::testing::TestDevice());
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *std::move(device);
    absl::StatusOr<std::unique_ptr<Model>> model =
        Model::Load(device_, stories_->path, {.weights = WeightPlacement::kImport});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
  }

  std::unique_ptr<Sequence> NewSession() {
    absl::StatusOr<std::unique_ptr<Sequence>> session = model_->CreateSequence();
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  // The suite's model compiled again with verify graphs of up to 5 rows
  // (2, 4 and 5).
  absl::StatusOr<std::unique_ptr<Model>> LoadVerifyModel() {
    const std::string path = stories_->dir + "/stories_verify.lnpu";
    compiler::CompileOptions options;
    options.max_prompt_len = kMaxPromptLen;
    options.min_response_len = kMinResponseLen;
    options.prefill_chunks = {4, 16};
    options.kv_dtype = compiler::CompileOptions::KvType::kF32;
    options.verify_rows = 5;
    LNPU_RETURN_IF_ERROR(compiler::CompileGguf(ModelsDir() + "/stories260K.gguf", path, options));
    absl::StatusOr<std::unique_ptr<Model>> model =
        Model::Load(device_, path, {.weights = WeightPlacement::kImport});
    std::remove(path.c_str());
    return model;
  }

  // Pieces of a SentencePiece vocabulary joined into text.
  std::string Detokenize(const std::vector<int32_t>& tokens) const {
    std::string text;
    for (int32_t t : tokens) text += model_->info().vocabulary.tokens[t];
    return absl::StrReplaceAll(text, {{"\xE2\x96\x81", " "}});
  }

  static SuiteArtifact* stories_;
  std::shared_ptr<Device> device_;
  std::unique_ptr<Model> model_;
};

SuiteArtifact* RuntimeTest::stories_ = nullptr;

TEST_F(RuntimeTest, LoadCopiesTheModelInfo) {
  const ModelInfo& info = model_->info();
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.vocab_size, 512u);
  EXPECT_EQ(info.dim, 64u);
  EXPECT_EQ(info.n_layers, 5u);
  EXPECT_EQ(info.n_heads, 8u);
  EXPECT_EQ(info.n_kv_heads, 4u);
  EXPECT_EQ(info.head_dim, 8u);
  EXPECT_EQ(info.ffn_dim, 172u);
  EXPECT_EQ(info.kv_capacity, kMaxPromptLen + kMinResponseLen);
  EXPECT_EQ(info.max_prompt_len, kMaxPromptLen);
  EXPECT_EQ(info.min_response_len, kMinResponseLen);
  EXPECT_THAT(info.prefill_chunks, ElementsAre(4, 16));
  EXPECT_EQ(info.vocabulary.type, TokenizerType::kSentencePiece);
  EXPECT_EQ(info.vocabulary.tokens.size(), 512u);
  EXPECT_EQ(info.vocabulary.scores.size(), 512u);
  EXPECT_EQ(info.vocabulary.bos_id, 1);
  EXPECT_EQ(info.vocabulary.eos_id, 2);
  EXPECT_GT(info.weight_bytes, 0u);
  EXPECT_GE(model_->device_memory_bytes(), info.weight_bytes);
}

TEST_F(RuntimeTest, LoadRejectsMissingAndCorruptFiles) {
  absl::StatusOr<std::unique_ptr<Model>> missing =
      Model::Load(device_, stories_->dir + "/does-not-exist.lnpu");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);

  const std::string corrupt = stories_->dir + "/corrupt.lnpu";
  {
    std::ifstream in(stories_->path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes[bytes.size() / 3] ^= 0x5a;  // inside the flatbuffer or the data
    bytes.resize(bytes.size() - 100);
    std::ofstream(corrupt, std::ios::binary) << bytes;
  }
  absl::StatusOr<std::unique_ptr<Model>> bad = Model::Load(device_, corrupt);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(corrupt));

  // One flipped bit in the weights: the checksums catch it at load, unless
  // verification is turned off.
  {
    std::ifstream in(stories_->path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes[bytes.size() - 1000] ^= 0x01;  // in the last weight's data
    std::ofstream(corrupt, std::ios::binary | std::ios::trunc) << bytes;
  }
  bad = Model::Load(device_, corrupt);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr("the weights are corrupt"));
  EXPECT_TRUE(Model::Load(device_, corrupt, {.verify_weights = false}).ok());
  std::remove(corrupt.c_str());
}

TEST_F(RuntimeTest, GreedyDecodingTellsTheStory) {
  std::unique_ptr<Sequence> session = NewSession();
  absl::StatusOr<absl::Span<const float>> logits = session->Forward(kPrompt);
  ASSERT_TRUE(logits.ok()) << logits.status();
  ASSERT_EQ(logits->size(), 512u);
  std::vector<int32_t> generated;
  for (int i = 0; i < 20; ++i) {
    const int32_t next = Argmax(*logits);
    generated.push_back(next);
    logits = session->Forward(absl::MakeConstSpan(&next, 1));
    ASSERT_TRUE(logits.ok()) << logits.status();
  }
  EXPECT_THAT(Detokenize(generated), StartsWith(", there was a little girl named Lily."));
  EXPECT_EQ(session->cache().used(), kPrompt.size() + 20);
}

TEST_F(RuntimeTest, ChunkingDoesNotChangeTheLogits) {
  // 29 tokens: a story prompt extended by the model's own continuation.
  std::vector<int32_t> tokens = kPrompt;
  {
    std::unique_ptr<Sequence> session = NewSession();
    absl::StatusOr<absl::Span<const float>> logits = session->Forward(tokens);
    while (logits.ok() && tokens.size() < 29) {
      tokens.push_back(Argmax(*logits));
      logits = session->Forward(absl::MakeConstSpan(&tokens.back(), 1));
    }
    ASSERT_TRUE(logits.ok()) << logits.status();
  }
  const ChunkedLogits logits =
      FeedThreeWays([this] { return NewSession(); }, tokens, {5, 17, 3}, /*next=*/300);
  ASSERT_FALSE(logits.split.empty());
  // Intermediate: after the first 5 tokens.
  EXPECT_LE(RelativeDifference(logits.one_by_one[4], logits.split[0]), 1e-4);
}

TEST_F(RuntimeTest, StatsCountRunsPaddingAndTime) {
  std::unique_ptr<Sequence> session = NewSession();
  std::vector<int32_t> prompt(23, 300);
  prompt[0] = 1;
  ASSERT_TRUE(session->Forward(prompt).ok());  // 16 + 4 + (3 in 4)
  const int32_t token = 42;
  ASSERT_TRUE(session->Forward(absl::MakeConstSpan(&token, 1)).ok());

  const SequenceStats& stats = session->stats();
  EXPECT_EQ(stats.forward_calls, 2u);
  EXPECT_EQ(stats.steps, 4u);
  EXPECT_EQ(stats.tokens, 24u);
  EXPECT_EQ(stats.padded_rows, 1u);
  EXPECT_GT(stats.wait_time, absl::ZeroDuration());
  EXPECT_GT(stats.submit_time, absl::ZeroDuration());
  EXPECT_GE(stats.host_time, absl::ZeroDuration());
  uint64_t decode_runs = 0, runs_of_4 = 0, runs_of_16 = 0;
  for (const GraphStats& graph : stats.graphs) {
    EXPECT_FALSE(graph.name.empty());
    if (graph.rows == 16) runs_of_16 += graph.runs;
    if (graph.rows == 4) runs_of_4 += graph.runs;
    if (graph.rows == 1) decode_runs += graph.runs;
  }
  EXPECT_EQ(runs_of_16, 1u);
  EXPECT_EQ(runs_of_4, 2u);
  EXPECT_EQ(decode_runs, 1u);
}

// An observer sees every graph run with host and device times in order:
// submits and waits inside the step, each job's commands (with their
// layers from the artifact) inside the job; removing it stops the calls.
TEST_F(RuntimeTest, StepObserverSeesEveryRunWithDeviceTimes) {
  std::unique_ptr<Sequence> session = NewSession();
  std::vector<StepTimeline> steps;
  ASSERT_TRUE(session->SetStepObserver([&](const StepTimeline& step) {
    steps.push_back(step);
  }).ok());
  std::vector<int32_t> prompt(20, 300);
  ASSERT_TRUE(session->Forward(prompt).ok());  // 16 + 4
  const int32_t token = 42;
  ASSERT_TRUE(session->Forward(absl::MakeConstSpan(&token, 1)).ok());
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].tokens, 16u);
  EXPECT_EQ(steps[1].tokens, 4u);
  EXPECT_EQ(steps[2].tokens, 1u);
  EXPECT_TRUE(steps[2].graph_spec->decode);
  for (const StepTimeline& step : steps) {
    ASSERT_TRUE(step.device_profiled);
    ASSERT_EQ(step.jobs.size(), step.graph_spec->streams.size());
    EXPECT_LE(step.step.start_ns, step.jobs.front().submit.start_ns);
    for (const TimeSpan& wait : step.waits) {
      EXPECT_LE(step.step.start_ns, wait.start_ns);
      EXPECT_LE(wait.end_ns, step.step.end_ns);
    }
    std::vector<int32_t> layers;
    for (size_t j = 0; j < step.jobs.size(); ++j) {
      const JobTimeline& job = step.jobs[j];
      const StreamSpec& stream = step.graph_spec->streams[j];
      EXPECT_EQ(job.engine, stream.engine);
      EXPECT_LE(job.submit.start_ns, job.submit.end_ns);
      EXPECT_LE(job.submit.start_ns, job.device.start_ns);
      EXPECT_LE(job.device.end_ns, step.step.end_ns);
      ASSERT_EQ(job.commands.size(), stream.commands.size());
      int64_t previous_end = job.device.start_ns;
      for (size_t c = 0; c < job.commands.size(); ++c) {
        EXPECT_GE(job.commands[c].start_ns, previous_end) << c;
        EXPECT_GE(job.commands[c].end_ns, job.commands[c].start_ns) << c;
        previous_end = job.commands[c].end_ns;
        if (stream.engine == DRM_LNPU_ENGINE_COMPUTE) layers.push_back(stream.commands[c].layer);
      }
      EXPECT_LE(previous_end, job.device.end_ns);
    }
    // The compute commands run the embedding (-1), layers 0..4 in order,
    // then the head (-1).
    ASSERT_FALSE(layers.empty());
    EXPECT_EQ(layers.front(), -1);
    EXPECT_EQ(layers.back(), -1);
    const auto first = std::find_if(layers.begin(), layers.end(), [](int32_t l) { return l >= 0; });
    const auto last = std::find_if(layers.rbegin(), layers.rend(), [](int32_t l) { return l >= 0; });
    ASSERT_NE(first, layers.end());
    const std::vector<int32_t> in_layers(first, last.base());
    EXPECT_TRUE(std::is_sorted(in_layers.begin(), in_layers.end()));
    EXPECT_EQ(in_layers.front(), 0);
    EXPECT_EQ(in_layers.back(), static_cast<int32_t>(model_->info().n_layers) - 1);
  }
  ASSERT_TRUE(session->SetStepObserver(nullptr).ok());
  ASSERT_TRUE(session->Forward(absl::MakeConstSpan(&token, 1)).ok());
  EXPECT_EQ(steps.size(), 3u);
}

TEST_F(RuntimeTest, SessionsAreIndependent) {
  std::unique_ptr<Sequence> a = NewSession();
  std::unique_ptr<Sequence> b = NewSession();
  std::unique_ptr<Sequence> reference = NewSession();
  const std::vector<int32_t> other = {1, 100, 200, 300, 400, 500, 7};

  ASSERT_TRUE(a->Forward(kPrompt).ok());
  ASSERT_TRUE(b->Forward(other).ok());
  EXPECT_EQ(a->cache().used(), kPrompt.size());
  EXPECT_EQ(b->cache().used(), other.size());

  const int32_t next = 42;
  absl::StatusOr<absl::Span<const float>> a_next = a->Forward(absl::MakeConstSpan(&next, 1));
  ASSERT_TRUE(a_next.ok());
  const std::vector<float> a_logits = Copy(*a_next);

  ASSERT_TRUE(reference->Forward(kPrompt).ok());
  absl::StatusOr<absl::Span<const float>> expected =
      reference->Forward(absl::MakeConstSpan(&next, 1));
  ASSERT_TRUE(expected.ok());
  EXPECT_LE(RelativeDifference(a_logits, Copy(*expected)), 1e-6);
}

TEST_F(RuntimeTest, SessionsRunConcurrentlyOnThreads) {
  const std::vector<std::vector<int32_t>> prompts = {kPrompt, {1, 100, 200, 300}};
  std::vector<std::vector<float>> sequential;
  for (const auto& prompt : prompts) {
    std::unique_ptr<Sequence> session = NewSession();
    sequential.push_back(FeedInRuns(*session, prompt, std::vector<size_t>(prompt.size(), 1)).back());
  }
  std::vector<std::unique_ptr<Sequence>> sessions;
  for (size_t i = 0; i < prompts.size(); ++i) sessions.push_back(NewSession());
  std::vector<std::vector<float>> threaded(prompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      threaded[i] =
          FeedInRuns(*sessions[i], prompts[i], std::vector<size_t>(prompts[i].size(), 1)).back();
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_LE(RelativeDifference(threaded[i], sequential[i]), 1e-6) << "session " << i;
  }
}

TEST_F(RuntimeTest, FullCacheIsResourceExhaustedAndChangesNothing) {
  std::unique_ptr<Sequence> session = NewSession();
  const uint32_t capacity = session->cache().capacity();
  std::vector<int32_t> tokens(capacity - 2, 300);
  ASSERT_TRUE(session->Forward(tokens).ok());
  const std::vector<uint8_t> mask(session->cache().mask().begin(), session->cache().mask().end());
  const uint64_t steps = session->stats().steps;

  const std::vector<int32_t> five(5, 300);
  absl::StatusOr<absl::Span<const float>> overflow = session->Forward(five);
  ASSERT_EQ(overflow.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(overflow.status().message(),
              HasSubstr(absl::StrCat(capacity - 2, " of ", capacity, " slots used, 5 more")));
  EXPECT_EQ(session->cache().used(), capacity - 2);
  EXPECT_EQ(std::vector<uint8_t>(session->cache().mask().begin(), session->cache().mask().end()),
            mask);
  EXPECT_EQ(session->stats().steps, steps);

  // The last two slots still work; then nothing fits.
  ASSERT_TRUE(session->Forward(absl::MakeConstSpan(five).subspan(0, 2)).ok());
  EXPECT_EQ(session->cache().free_slots(), 0u);
  EXPECT_THAT(session->cache().mask(), Each(1));
  EXPECT_EQ(session->Forward(absl::MakeConstSpan(five).subspan(0, 1)).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(RuntimeTest, InvalidTokensAreRejectedBeforeAnythingRuns) {
  std::unique_ptr<Sequence> session = NewSession();
  ASSERT_TRUE(session->Forward(kPrompt).ok());
  for (const std::vector<int32_t>& bad :
       {std::vector<int32_t>{}, std::vector<int32_t>{-1}, std::vector<int32_t>{512},
        std::vector<int32_t>{5, 6, 100000}}) {
    absl::StatusOr<absl::Span<const float>> result = session->Forward(bad);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_THAT(session->Forward(std::vector<int32_t>{5, 512}).status().message(),
              HasSubstr("token id 512 at index 1 is outside the vocabulary [0, 512)"));
  EXPECT_EQ(session->cache().used(), kPrompt.size());
  EXPECT_EQ(session->stats().forward_calls, 1u);
}

TEST_F(RuntimeTest, ResetEmptiesTheCache) {
  std::unique_ptr<Sequence> session = NewSession();
  absl::StatusOr<absl::Span<const float>> first = session->Forward(kPrompt);
  ASSERT_TRUE(first.ok());
  const std::vector<float> expected = Copy(*first);
  const int32_t token = 42;
  ASSERT_TRUE(session->Forward(absl::MakeConstSpan(&token, 1)).ok());

  session->Reset();
  EXPECT_EQ(session->cache().used(), 0u);
  EXPECT_EQ(session->cache().next_position(), 0);
  EXPECT_THAT(session->cache().mask(), Each(0));
  absl::StatusOr<absl::Span<const float>> again = session->Forward(kPrompt);
  ASSERT_TRUE(again.ok());
  EXPECT_LE(RelativeDifference(Copy(*again), expected), 1e-6);
}

TEST_F(RuntimeTest, DeviceMemoryReturnsWhenSessionsAndModelsAreDestroyed) {
  model_.reset();
  const uint64_t initial = MemoryUsed(*device_);
  const uint64_t initial_imported = Param(*device_, DRM_LNPU_PARAM_MEMORY_IMPORTED);
  {
    absl::StatusOr<std::unique_ptr<Model>> model =
        Model::Load(device_, stories_->path, {.weights = WeightPlacement::kImport});
    ASSERT_TRUE(model.ok()) << model.status();
    // The software NPU imports the weights from the artifact mapping: they
    // count as imported memory, not device memory.
    ASSERT_TRUE((*model)->weights_imported());
    const uint64_t weights = (*model)->device_memory_bytes();
    EXPECT_GE(weights, (*model)->info().weight_bytes);
    EXPECT_EQ(Param(*device_, DRM_LNPU_PARAM_MEMORY_IMPORTED), initial_imported + weights);
    EXPECT_EQ(MemoryUsed(*device_), initial);
    absl::StatusOr<std::unique_ptr<Sequence>> a = (*model)->CreateSequence();
    absl::StatusOr<std::unique_ptr<Sequence>> b = (*model)->CreateSequence();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_GT((*a)->device_memory_bytes(), 0u);
    EXPECT_EQ(MemoryUsed(*device_),
              initial + (*a)->device_memory_bytes() + (*b)->device_memory_bytes());
    ASSERT_TRUE((*a)->Forward(kPrompt).ok());
    a->reset();
    EXPECT_EQ(MemoryUsed(*device_), initial + (*b)->device_memory_bytes());
    // A session keeps working after its model is gone: it shares the
    // weights, and with them the artifact mapping they were imported from.
    std::unique_ptr<Sequence> survivor = *std::move(b);
    model->reset();
    ASSERT_TRUE(survivor->Forward(kPrompt).ok());
    EXPECT_GT(MemoryUsed(*device_), initial);
    EXPECT_EQ(Param(*device_, DRM_LNPU_PARAM_MEMORY_IMPORTED), initial_imported + weights);
  }
  EXPECT_EQ(MemoryUsed(*device_), initial);
  EXPECT_EQ(Param(*device_, DRM_LNPU_PARAM_MEMORY_IMPORTED), initial_imported);
}

// A software-NPU file that reports other values for some device params.
class ParamOverridingFile : public KernelFile {
 public:
  ParamOverridingFile(std::unique_ptr<KernelFile> file, uint32_t param, uint64_t value)
      : file_(std::move(file)), param_(param), value_(value) {}

  int Ioctl(unsigned long request, void* arg) override {
    const int err = file_->Ioctl(request, arg);
    if (err == 0 && request == DRM_IOCTL_LNPU_GET_PARAM) {
      auto* get = static_cast<drm_lnpu_get_param*>(arg);
      if (get->param == param_) get->value = value_;
    }
    return err;
  }
  int Mmap(uint64_t length, uint64_t offset, void** addr) override {
    return file_->Mmap(length, offset, addr);
  }
  int Munmap(void* addr, uint64_t length) override { return file_->Munmap(addr, length); }
  std::string Describe() const override { return file_->Describe(); }

 private:
  std::unique_ptr<KernelFile> file_;
  uint32_t param_;
  uint64_t value_;
};

TEST_F(RuntimeTest, AutoPlacementCopiesWhenMemoryAllowsElseImports) {
  // Plenty of device memory: the weights are copied (huge pages on the
  // software NPU). In the artifact's layout the logits equal the imported
  // model's bit for bit; as Q8_0_P16 panels (by default where the device
  // prefers them) up to the order of the f32 sums.
  absl::StatusOr<std::unique_ptr<Model>> copied = Model::Load(device_, stories_->path);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_FALSE((*copied)->weights_imported());
  absl::StatusOr<std::unique_ptr<Model>> same_layout =
      Model::Load(device_, stories_->path, {.panel_weights = false});
  ASSERT_TRUE(same_layout.ok()) << same_layout.status();
  EXPECT_FALSE((*same_layout)->weights_imported());
  std::unique_ptr<Sequence> a = *(*copied)->CreateSequence();
  std::unique_ptr<Sequence> b = NewSession();  // model_: imported
  std::unique_ptr<Sequence> c = *(*same_layout)->CreateSequence();
  const std::vector<float> imported_logits = Copy(*b->Forward(kPrompt));
  EXPECT_LE(RelativeDifference(Copy(*a->Forward(kPrompt)), imported_logits), 1e-4);
  EXPECT_EQ(Copy(*c->Forward(kPrompt)), imported_logits);

  // Memory for one sequence but not for the weights besides two: imported.
  const uint64_t sequence_bytes = a->device_memory_bytes();
  softnpu::SoftNpuOptions options;
  options.memory_bytes = (2 * sequence_bytes + 4095) / 4096 * 4096;
  std::shared_ptr<softnpu::SoftNpu> npu = softnpu::SoftNpu::Create(options);
  absl::StatusOr<std::unique_ptr<Model>> imported =
      Model::Load(std::make_shared<Device>(npu->Open()), stories_->path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_TRUE((*imported)->weights_imported());
  EXPECT_TRUE((*imported)->CreateSequence().ok());
}

TEST_F(RuntimeTest, LoadRejectsStreamsBeyondTheDeviceLimits) {
  auto small = std::make_shared<Device>(std::make_unique<ParamOverridingFile>(softnpu::SoftNpu::Default()->Open(),
                                                     DRM_LNPU_PARAM_MAX_CMD_SIZE, 64));
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(small, stories_->path);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("at most 64 bytes per job"));
  EXPECT_THAT(model.status().message(), HasSubstr(stories_->path));
}

TEST_F(RuntimeTest, DevicesWithoutInFencesRunStreamsOneAfterTheOther) {
  auto no_fences = std::make_shared<Device>(std::make_unique<ParamOverridingFile>(softnpu::SoftNpu::Default()->Open(),
                                                         DRM_LNPU_PARAM_CAPABILITIES, 0));
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(no_fences, stories_->path);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::unique_ptr<Sequence>> session = (*model)->CreateSequence();
  ASSERT_TRUE(session.ok()) << session.status();
  std::unique_ptr<Sequence> chained = NewSession();
  for (Sequence* s : {session->get(), chained.get()}) {
    ASSERT_TRUE(s->Forward(kPrompt).ok());
  }
  const int32_t next = 42;
  absl::StatusOr<absl::Span<const float>> sequential =
      (*session)->Forward(absl::MakeConstSpan(&next, 1));
  ASSERT_TRUE(sequential.ok()) << sequential.status();
  const std::vector<float> expected = Copy(*sequential);
  absl::StatusOr<absl::Span<const float>> with_fences =
      chained->Forward(absl::MakeConstSpan(&next, 1));
  ASSERT_TRUE(with_fences.ok()) << with_fences.status();
  EXPECT_LE(RelativeDifference(expected, Copy(*with_fences)), 1e-6);
}

TEST_F(RuntimeTest, OutOfDeviceMemoryFailsCleanly) {
  // Room for a session on an empty device, but another buffer takes some
  // of it: the session fails part way through its buffers (the weights
  // are imported and take no device memory).
  const uint64_t session_bytes = NewSession()->device_memory_bytes();
  softnpu::SoftNpuOptions options;
  options.memory_bytes = (session_bytes + 4095) / 4096 * 4096;
  std::shared_ptr<softnpu::SoftNpu> npu = softnpu::SoftNpu::Create(options);
  auto device = std::make_shared<Device>(npu->Open());
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(device, stories_->path);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<Buffer> other = device->CreateBuffer(16384);
  ASSERT_TRUE(other.ok()) << other.status();
  const uint64_t loaded = npu->memory_used();
  absl::StatusOr<std::unique_ptr<Sequence>> session = (*model)->CreateSequence();
  EXPECT_EQ(session.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(session.status().message(), HasSubstr("free buffers"));
  EXPECT_EQ(npu->memory_used(), loaded);  // nothing of the failed session is left
}

TEST_F(RuntimeTest, ASessionLargerThanTheDeviceNamesTheCompileOptions) {
  softnpu::SoftNpuOptions options;
  options.memory_bytes = NewSession()->device_memory_bytes() / 2 / 4096 * 4096;
  std::shared_ptr<softnpu::SoftNpu> npu = softnpu::SoftNpu::Create(options);
  auto device = std::make_shared<Device>(npu->Open());
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(device, stories_->path);
  ASSERT_TRUE(model.ok()) << model.status();
  const uint64_t loaded = npu->memory_used();
  absl::StatusOr<std::unique_ptr<Sequence>> session = (*model)->CreateSequence();
  EXPECT_EQ(session.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(session.status().message(),
              HasSubstr("more than the device's " + std::to_string(options.memory_bytes)));
  EXPECT_THAT(session.status().message(), HasSubstr("--max-prompt-len"));
  EXPECT_EQ(npu->memory_used(), loaded);
}

TEST_F(RuntimeTest, AFaultingComputeJobIsReportedAsTheCauseNotTheCancelledDmaJob) {
  std::shared_ptr<softnpu::SoftNpu> npu = softnpu::SoftNpu::Create({});
  auto device = std::make_shared<Device>(npu->Open());
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(device, stories_->path);
  ASSERT_TRUE(model.ok()) << model.status();
  std::unique_ptr<Sequence> session = *(*model)->CreateSequence();
  ASSERT_TRUE(npu->InjectFault({softnpu::FaultInjection::Kind::kFault, DRM_LNPU_ENGINE_COMPUTE, 1})
                  .ok());
  const absl::StatusOr<absl::Span<const float>> failed = session->Forward({1});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("compute job 1 of"));
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("a job faulted"));
  EXPECT_THAT(std::string(failed.status().message()), Not(HasSubstr("timeout")));
  // The file keeps working after a fault.
  EXPECT_TRUE(session->Forward({1}).ok());
}

TEST_F(RuntimeTest, WeightsAreCopiedOnDevicesWithoutUserptr) {
  auto file = std::make_unique<ParamOverridingFile>(
      softnpu::SoftNpu::Default()->Open(), DRM_LNPU_PARAM_CAPABILITIES,
      Param(*device_, DRM_LNPU_PARAM_CAPABILITIES) & ~DRM_LNPU_CAP_USERPTR);
  auto device = std::make_shared<Device>(std::move(file));
  const uint64_t initial = MemoryUsed(*device);
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(device, stories_->path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->weights_imported());
  EXPECT_EQ(MemoryUsed(*device), initial + (*model)->device_memory_bytes());
  std::unique_ptr<Sequence> session = *(*model)->CreateSequence();
  absl::StatusOr<absl::Span<const float>> copied = session->Forward(kPrompt);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(Argmax(*copied), 432);  // ", there ...": the same model
}

// Greedy continuation of `prompt` (prefilled in chunks) in `session`, one
// token at a time, until the session holds `length` tokens: the tokens;
// with `logits`, each step's logits appended to it.
std::vector<int32_t> GreedyTokens(Sequence& session, std::vector<int32_t> prompt, size_t length,
                                  std::vector<std::vector<float>>* logits = nullptr) {
  std::vector<int32_t> tokens = std::move(prompt);
  absl::StatusOr<absl::Span<const float>> out = session.Forward(tokens);
  while (out.ok() && tokens.size() < length) {
    if (logits != nullptr) logits->push_back(Copy(*out));
    tokens.push_back(Argmax(*out));
    out = session.Forward(absl::MakeConstSpan(&tokens.back(), 1));
  }
  EXPECT_TRUE(out.ok()) << out.status();
  return tokens;
}

// Greedy continuation of kPrompt until the session holds `length` tokens.
std::vector<int32_t> FillGreedy(Sequence& session, size_t length) {
  return GreedyTokens(session, kPrompt, length);
}

// Logits after feeding `token` (empty on error).
std::vector<float> LogitsAfter(Sequence& session, int32_t token) {
  absl::StatusOr<absl::Span<const float>> logits = session.Forward(absl::MakeConstSpan(&token, 1));
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.ok() ? Copy(*logits) : std::vector<float>();
}

// Overwrites every byte of `slot`'s K and V rows in `state` with 0xFF
// (NaN in F32 and in F16).
void PoisonSlot(CacheSnapshot& state, uint32_t slot) {
  const uint64_t row = state.model.kv_row_bytes, written = state.written_slots();
  for (uint64_t b = 0; b < state.model.kv_blocks; ++b) {
    std::memset(state.kv_rows.data() + (b * written + slot) * row, 0xFF, row);
  }
}

bool AllFinite(const std::vector<float>& logits) {
  return !logits.empty() &&
         std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); });
}

TEST_F(RuntimeTest, SavedStateContinuesIdentically) {
  std::unique_ptr<Sequence> original = NewSession();
  const std::vector<int32_t> tokens = FillGreedy(*original, 20);
  absl::StatusOr<CacheSnapshot> state = original->SaveState();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->next_position, 20);
  EXPECT_EQ(state->written_slots(), 20u);
  EXPECT_EQ(state->slot_tokens, tokens);
  EXPECT_EQ(state->model, model_->info().identity);

  const std::string path = stories_->dir + "/saved.session";
  ASSERT_TRUE(WriteCacheSnapshotFile(*state, path).ok());
  absl::StatusOr<CacheSnapshot> read = ReadCacheSnapshotFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  std::remove(path.c_str());

  std::unique_ptr<Sequence> restored = NewSession();
  FillGreedy(*restored, 9);  // replaced entirely by the restore
  ASSERT_TRUE(restored->RestoreState(*read).ok());
  EXPECT_EQ(restored->cache().next_position(), 20);
  EXPECT_EQ(restored->cache().TokensInContext(), tokens);
  // Same K/V, same kernels: bit-identical logits, step after step.
  for (int32_t token : {300, 17, 42}) {
    EXPECT_EQ(LogitsAfter(*restored, token), LogitsAfter(*original, token));
  }
}

TEST_F(RuntimeTest, CopiedPrefixEqualsRecomputingIt) {
  std::unique_ptr<Sequence> source = NewSession();
  const std::vector<int32_t> tokens = FillGreedy(*source, 24);
  std::unique_ptr<Sequence> copy = NewSession();
  ASSERT_TRUE(copy->CopyPrefixFrom(*source, 5).ok());
  EXPECT_EQ(copy->cache().TokensInContext(), kPrompt);

  std::unique_ptr<Sequence> recomputed = NewSession();
  ASSERT_TRUE(recomputed->Forward(kPrompt).ok());
  EXPECT_EQ(LogitsAfter(*copy, 300), LogitsAfter(*recomputed, 300));

  EXPECT_EQ(copy->CopyPrefixFrom(*source, 25).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(copy->CopyPrefixFrom(*copy, 1).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RuntimeTest, ForwardAllRowsNeedsAVerifyGraph) {
  std::unique_ptr<Sequence> session = NewSession();
  EXPECT_EQ(model_->info().verify_rows, 0u);
  const absl::StatusOr<absl::Span<const float>> rows = session->ForwardAllRows(kPrompt);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(rows.status().message(), HasSubstr("--verify-rows"));
  EXPECT_EQ(session->cache().next_position(), 0);
}

// A verify graph gives every row's logits, as running the tokens one by
// one does, and dropping its last rows leaves the cache as if they had
// never run.
TEST_F(RuntimeTest, VerifyRowsMatchDecodingAndTruncateDropsRowsCleanly) {
  absl::StatusOr<std::unique_ptr<Model>> model = LoadVerifyModel();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->info().verify_rows, 5u);
  EXPECT_EQ((*model)->info().prefill_chunks, (std::vector<uint32_t>{4, 16}));
  const uint32_t vocab = (*model)->info().vocab_size;

  // tokens[0..12): a prompt and the model's greedy continuation.
  const std::vector<int32_t> tokens = FillGreedy(**(*model)->CreateSequence(), 12);
  std::unique_ptr<Sequence> verified = *(*model)->CreateSequence();
  ASSERT_TRUE(verified->Forward(absl::MakeConstSpan(tokens).first(7)).ok());
  std::vector<int32_t> rows(tokens.begin() + 7, tokens.begin() + 11);
  rows.push_back(300);  // a proposal the model rejects
  absl::StatusOr<absl::Span<const float>> logits = verified->ForwardAllRows(rows);
  ASSERT_TRUE(logits.ok()) << logits.status();
  ASSERT_EQ(logits->size(), rows.size() * vocab);
  EXPECT_EQ(verified->cache().next_position(), 12);
  std::unique_ptr<Sequence> reference = *(*model)->CreateSequence();
  ASSERT_TRUE(reference->Forward(absl::MakeConstSpan(tokens).first(7)).ok());
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<float> expected = LogitsAfter(*reference, rows[i]);
    const std::vector<float> row = Copy(logits->subspan(i * vocab, vocab));
    EXPECT_LE(RelativeDifference(row, expected), 1e-4) << "row " << i;
    if (i < 4) {
      EXPECT_EQ(Argmax(row), tokens[8 + i]) << "row " << i;
    }
  }

  // Drop the rejected proposal: the cache equals that of a session that
  // ran tokens[0..11) and continues as it does.
  ASSERT_TRUE(verified->Truncate(11).ok());
  std::unique_ptr<Sequence> expected = *(*model)->CreateSequence();
  ASSERT_TRUE(expected->Forward(absl::MakeConstSpan(tokens).first(11)).ok());
  const CacheSnapshot a = verified->SaveState().value();
  const CacheSnapshot b = expected->SaveState().value();
  EXPECT_EQ(a.next_position, 11);
  EXPECT_EQ(a.next_position, b.next_position);
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_EQ(a.slot_tokens, b.slot_tokens);
  EXPECT_EQ(a.kv_rows.size(), b.kv_rows.size());
  EXPECT_LE(
      RelativeDifference(LogitsAfter(*verified, tokens[11]), LogitsAfter(*expected, tokens[11])),
      1e-4);

  EXPECT_EQ(verified->Truncate(13).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(verified->ForwardAllRows(std::vector<int32_t>(6, 5)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(verified->cache().next_position(), 12);
}

// With verify graphs of 2, 4 and 5 rows, each run takes the smallest that
// holds its tokens; the padding rows change nothing: every row count gives
// the logits of decoding its tokens one by one and commits only them.
TEST_F(RuntimeTest, VerifyRunsTakeTheSmallestVerifyGraph) {
  absl::StatusOr<std::unique_ptr<Model>> model = LoadVerifyModel();
  ASSERT_TRUE(model.ok()) << model.status();
  const uint32_t vocab = (*model)->info().vocab_size;
  const std::vector<int32_t> tokens = FillGreedy(**(*model)->CreateSequence(), 12);
  const std::map<size_t, std::string> graph_of = {
      {1, "verify_2"}, {2, "verify_2"}, {3, "verify_4"}, {4, "verify_4"}, {5, "verify_5"}};
  for (const auto& [n, graph] : graph_of) {
    SCOPED_TRACE(n);
    std::unique_ptr<Sequence> verified = *(*model)->CreateSequence();
    ASSERT_TRUE(verified->Forward(absl::MakeConstSpan(tokens).first(6)).ok());
    std::string ran;
    ASSERT_TRUE(verified
                    ->SetStepObserver([&](const StepTimeline& timeline) {
                      ran = timeline.graph_spec->name;
                    })
                    .ok());
    const absl::Span<const int32_t> rows = absl::MakeConstSpan(tokens).subspan(6, n);
    absl::StatusOr<absl::Span<const float>> logits = verified->ForwardAllRows(rows);
    ASSERT_TRUE(logits.ok()) << logits.status();
    EXPECT_EQ(ran, graph);
    ASSERT_EQ(logits->size(), n * vocab);
    EXPECT_EQ(verified->cache().next_position(), static_cast<int32_t>(6 + n));
    std::unique_ptr<Sequence> reference = *(*model)->CreateSequence();
    ASSERT_TRUE(reference->Forward(absl::MakeConstSpan(tokens).first(6)).ok());
    for (size_t i = 0; i < n; ++i) {
      const std::vector<float> expected = LogitsAfter(*reference, rows[i]);
      EXPECT_LE(RelativeDifference(Copy(logits->subspan(i * vocab, vocab)), expected), 1e-4)
          << "row " << i;
    }
    // The next step continues from the committed rows only.
    ASSERT_TRUE(verified->SetStepObserver(nullptr).ok());
    EXPECT_LE(RelativeDifference(LogitsAfter(*verified, tokens[6 + n]),
                                 LogitsAfter(*reference, tokens[6 + n])),
              1e-4);
  }
}

TEST_F(RuntimeTest, StatesOfOtherModelsAndCapacitiesAreRefused) {
  std::unique_ptr<Sequence> session = NewSession();
  FillGreedy(*session, 8);
  const CacheSnapshot good = *session->SaveState();

  // Another capacity: the same model compiled for a smaller cache.
  const std::string small = stories_->dir + "/stories_small.lnpu";
  compiler::CompileOptions options;
  options.max_prompt_len = 32;
  options.min_response_len = 16;
  options.prefill_chunks = {4, 16};
  options.kv_dtype = compiler::CompileOptions::KvType::kF32;
  ASSERT_TRUE(compiler::CompileGguf(ModelsDir() + "/stories260K.gguf", small, options).ok());
  absl::StatusOr<std::unique_ptr<Model>> small_model = Model::Load(device_, small);
  ASSERT_TRUE(small_model.ok()) << small_model.status();
  std::unique_ptr<Sequence> small_session = *(*small_model)->CreateSequence();
  absl::Status refused = small_session->RestoreState(good);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("has 64 slots but this model was compiled for 48"));
  EXPECT_EQ(small_session->cache().next_position(), 0);
  std::remove(small.c_str());

  // Another model of the same shape (identity differs in the metadata).
  CacheSnapshot other = good;
  other.model.metadata_crc32 ^= 1;
  refused = session->RestoreState(other);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("belongs to another model"));

  // Token ids outside the vocabulary, in a visible slot or pending.
  for (int32_t id : {99999, 512, -7}) {
    CacheSnapshot bad_slot = good;
    bad_slot.slot_tokens[3] = id;
    refused = session->RestoreState(bad_slot);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_THAT(std::string(refused.message()),
                HasSubstr(absl::StrCat("slot 3 holds token ", id, ", outside")));
    CacheSnapshot bad_pending = good;
    bad_pending.pending_tokens = {5, id};
    refused = session->RestoreState(bad_pending);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_THAT(std::string(refused.message()), HasSubstr("pending token 1 holds token"));
  }
  EXPECT_EQ(session->cache().next_position(), 8);  // unchanged

  // Inconsistent sizes.
  CacheSnapshot short_rows = good;
  short_rows.kv_rows.pop_back();
  EXPECT_EQ(session->RestoreState(short_rows).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(session->cache().next_position(), 8);  // unchanged
}

TEST_F(RuntimeTest, CorruptAndTruncatedStateFilesAreRefused) {
  std::unique_ptr<Sequence> session = NewSession();
  FillGreedy(*session, 8);
  const std::string path = stories_->dir + "/corrupt.session";
  ASSERT_TRUE(WriteCacheSnapshotFile(*session->SaveState(), path).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto error_of = [&](const std::string& content) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    return ReadCacheSnapshotFile(path).status();
  };
  std::string flipped = bytes;
  flipped[bytes.size() - 3] ^= 0x10;
  EXPECT_THAT(std::string(error_of(flipped).message()), HasSubstr("payload checksum mismatch"));
  EXPECT_THAT(std::string(error_of(bytes.substr(0, bytes.size() - 7)).message()),
              HasSubstr("truncated"));
  EXPECT_THAT(std::string(error_of(bytes.substr(0, 40)).message()), HasSubstr("header"));
  std::string header = bytes;
  header[50] ^= 1;
  EXPECT_THAT(std::string(error_of(header).message()), HasSubstr("header checksum"));
  EXPECT_THAT(std::string(error_of("LNPUART1" + bytes.substr(8)).message()),
              HasSubstr("not a session file"));
  EXPECT_EQ(error_of(flipped).code(), absl::StatusCode::kInvalidArgument);
  std::remove(path.c_str());
  // A directory is not a session file (and not "shorter than its header").
  const absl::Status directory = ReadCacheSnapshotFile(stories_->dir).status();
  EXPECT_EQ(directory.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(directory.message()), HasSubstr("is a directory"));
  EXPECT_EQ(ReadCacheSnapshotFile(path).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RuntimeTest, RingMustHoldTheLargestChunk) {
  std::unique_ptr<Sequence> session = NewSession();
  // Capacity 64, largest chunk 16: at most 48 sinks.
  absl::Status refused = session->SetCacheFullPolicy(CacheFullPolicy::Ring(49));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("use at most 48 sink slots"));
  EXPECT_TRUE(session->SetCacheFullPolicy(CacheFullPolicy::Ring(48)).ok());
}

TEST_F(RuntimeTest, RingRunsFourTimesTheCapacity) {
  std::unique_ptr<Sequence> session = NewSession();
  ASSERT_TRUE(session->SetCacheFullPolicy(CacheFullPolicy::Ring(4)).ok());
  const uint32_t capacity = session->cache().capacity();
  // A prompt longer than the cache wraps inside one Forward (runs of 16).
  std::vector<int32_t> prompt(capacity + 37, 300);
  prompt[0] = 1;
  absl::StatusOr<absl::Span<const float>> logits = session->Forward(prompt);
  ASSERT_TRUE(logits.ok()) << logits.status();
  while (session->cache().next_position() < static_cast<int32_t>(4 * capacity)) {
    const int32_t next = Argmax(*logits);
    logits = session->Forward(absl::MakeConstSpan(&next, 1));
    ASSERT_TRUE(logits.ok()) << logits.status();
    ASSERT_TRUE(AllFinite(Copy(*logits)));
    ASSERT_EQ(session->cache().used(), capacity);
  }
  EXPECT_EQ(session->stats().evicted_tokens, 3 * capacity);
  EXPECT_THAT(session->cache().mask(), Each(1));
  // The sinks still hold the first tokens.
  EXPECT_EQ(session->cache().TokensInContext()[0], 1);
  EXPECT_EQ(session->cache().TokensInContext().size(), capacity);
}

TEST_F(RuntimeTest, EvictedSlotsAreNeverAttended) {
  // A full ring cache: the next token overwrites slot 4 (the oldest
  // non-sink slot).
  std::unique_ptr<Sequence> session = NewSession();
  ASSERT_TRUE(session->SetCacheFullPolicy(CacheFullPolicy::Ring(4)).ok());
  FillGreedy(*session, session->cache().capacity());
  const CacheSnapshot clean = *session->SaveState();
  ASSERT_EQ(SlotOf(clean.next_position, clean.model.kv_capacity, clean.policy), 4);

  // Control: NaN K/V in a slot that is attended poison the logits.
  CacheSnapshot poisoned_visible = clean;
  PoisonSlot(poisoned_visible, 5);
  std::unique_ptr<Sequence> control = NewSession();
  ASSERT_TRUE(control->RestoreState(poisoned_visible).ok());
  EXPECT_FALSE(AllFinite(LogitsAfter(*control, 300)));

  // NaN K/V in the slot being evicted change nothing: the step that
  // overwrites it does not attend it, and neither does any later one.
  CacheSnapshot poisoned_evicted = clean;
  PoisonSlot(poisoned_evicted, 4);
  std::unique_ptr<Sequence> poisoned = NewSession();
  ASSERT_TRUE(poisoned->RestoreState(poisoned_evicted).ok());
  for (int32_t token : {300, 301, 302}) {
    const std::vector<float> expected = LogitsAfter(*session, token);
    EXPECT_TRUE(AllFinite(expected));
    EXPECT_EQ(LogitsAfter(*poisoned, token), expected);
  }
}

// Random llama models of other shapes and chunkings: the static pipeline
// gives the same logits however the tokens are split into Forward() calls.
struct RandomCase {
  std::string name;
  synthetic::RandomLlamaSpec spec;
  std::vector<uint32_t> prefill_chunks;
};

std::vector<RandomCase> RandomCases() {
  std::vector<RandomCase> cases;
  {
    RandomCase c{"gqa_chunks_1_8", {}, {1, 8}};
    c.spec.dim = 64;
    c.spec.n_heads = 8;
    c.spec.n_kv_heads = 2;
    c.spec.n_layers = 2;
    c.spec.seed = 11;
    cases.push_back(c);
  }
  {
    RandomCase c{"mha_tied_f16_partial_rope_chunks_3_7", {}, {3, 7}};
    c.spec.dim = 32;
    c.spec.n_heads = 4;
    c.spec.n_kv_heads = 4;
    c.spec.n_layers = 3;
    c.spec.ffn_dim = 96;
    c.spec.rope_dim = 4;
    c.spec.tied_embeddings = true;
    c.spec.weight_type = gguf::GgmlType::kF16;
    c.spec.seed = 22;
    cases.push_back(c);
  }
  {
    RandomCase c{"one_chunk_32", {}, {32}};
    c.spec.vocab_size = 300;
    c.spec.n_kv_heads = 1;
    c.spec.seed = 33;
    cases.push_back(c);
  }
  return cases;
}

class RandomModelTest : public ::testing::TestWithParam<RandomCase> {};

TEST_P(RandomModelTest, ChunkingDoesNotChangeTheLogits) {
  const RandomCase& param = GetParam();
  const std::string dir = NewTempDir();
  const std::string gguf_path = dir + "/model.gguf";
  const std::string artifact_path = dir + "/model.lnpu";
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(param.spec, gguf_path).ok());
  compiler::CompileOptions options;
  options.max_prompt_len = 40;
  options.min_response_len = 8;
  options.prefill_chunks = param.prefill_chunks;
  options.kv_dtype = compiler::CompileOptions::KvType::kF32;  // see RuntimeTest
  const absl::Status compiled = compiler::CompileGguf(gguf_path, artifact_path, options);
  ASSERT_TRUE(compiled.ok()) << compiled;

  absl::StatusOr<std::unique_ptr<Device>> device = Device::Open(lnpu::testing::TestDevice());
  ASSERT_TRUE(device.ok()) << device.status();
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(*std::move(device), artifact_path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->info().vocab_size, param.spec.vocab_size);
  EXPECT_EQ((*model)->info().kv_capacity, 48u);

  std::vector<int32_t> tokens(37);
  uint32_t state = static_cast<uint32_t>(param.spec.seed);
  for (int32_t& t : tokens) {
    state = state * 1664525u + 1013904223u;
    t = static_cast<int32_t>((state >> 8) % param.spec.vocab_size);
  }
  auto new_sequence = [&]() -> std::unique_ptr<Sequence> {
    absl::StatusOr<std::unique_ptr<Sequence>> session = (*model)->CreateSequence();
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  };
  const ChunkedLogits logits = FeedThreeWays(new_sequence, tokens, {7, 13, 2, 15}, /*next=*/5);
  ASSERT_FALSE(logits.split.empty());
  EXPECT_LE(RelativeDifference(logits.one_by_one[6], logits.split[0]), 1e-4);
  EXPECT_LE(RelativeDifference(logits.one_by_one[19], logits.split[1]), 1e-4);

  model->reset();
  std::remove(artifact_path.c_str());
  std::remove(gguf_path.c_str());
  std::remove(dir.c_str());
}

// Copied Q8_0 / Q4_0 weights on a device that prefers a panel layout
// (LNPU_DTYPE_*_P16S or *_P16) are stored as panels: every matrix with whole panels of rows
// (here all of them, the tied embedding gathered and multiplied alike), and
// the model decodes what the artifact's layout decodes (the f32 sums differ
// only in their order). Imported weights and panel_weights = false keep the
// layout.
// A random model of `spec` compiled small (prompts of up to 40 tokens,
// prefill chunks of 8, a 2-lane batched decode graph) with `weights`, into
// `dir`: the GGUF's and the artifact's paths.
struct SmallModel {
  std::string gguf_path, artifact_path;
};
absl::StatusOr<SmallModel> CompileSmallModel(const synthetic::RandomLlamaSpec& spec,
                                             compiler::CompileOptions::WeightType weights,
                                             const std::string& dir) {
  SmallModel model{dir + "/model.gguf", dir + "/model.lnpu"};
  LNPU_RETURN_IF_ERROR(synthetic::WriteRandomLlamaGguf(spec, model.gguf_path));
  compiler::CompileOptions options;
  options.weights = weights;
  options.max_prompt_len = 40;
  options.min_response_len = 8;
  options.prefill_chunks = {8};
  options.decode_batches = {2};
  LNPU_RETURN_IF_ERROR(compiler::CompileGguf(model.gguf_path, model.artifact_path, options));
  return model;
}

// A 2-lane batched step of `model` (a SmallModel) gives each lane's logits
// of its solo step bit for bit.
void ExpectBatchedLanesEqualEachAlone(Model& model) {
  std::unique_ptr<Sequence> a = *model.CreateSequence();
  std::unique_ptr<Sequence> b = *model.CreateSequence();
  ASSERT_TRUE(a->Forward(std::vector<int32_t>{5, 77, 300}).ok());
  ASSERT_TRUE(b->Forward(std::vector<int32_t>{9, 140}).ok());
  std::unique_ptr<Sequence> a_alone = *model.CreateSequence();
  std::unique_ptr<Sequence> b_alone = *model.CreateSequence();
  ASSERT_TRUE(a_alone->Forward(std::vector<int32_t>{5, 77, 300}).ok());
  ASSERT_TRUE(b_alone->Forward(std::vector<int32_t>{9, 140}).ok());
  Sequence* const lanes[] = {a.get(), b.get()};
  absl::StatusOr<std::unique_ptr<DecodeBatch>> batch = model.CreateDecodeBatch(lanes);
  ASSERT_TRUE(batch.ok()) << batch.status();
  const int32_t next[] = {61, 18};
  const absl::Status stepped = (*batch)->Step(next);
  ASSERT_TRUE(stepped.ok()) << stepped;
  EXPECT_EQ(Copy((*batch)->logits(0)), LogitsAfter(*a_alone, 61));
  EXPECT_EQ(Copy((*batch)->logits(1)), LogitsAfter(*b_alone, 18));
}

class PanelWeightsTest : public ::testing::TestWithParam<gguf::GgmlType> {};

TEST_P(PanelWeightsTest, CopiedMatricesRunAsPanelsWithTheSameResults) {
  const bool q4 = GetParam() == gguf::GgmlType::kQ4_0;
  synthetic::RandomLlamaSpec spec;
  spec.architecture = "qwen2";  // QKV biases: MATMUL with LNPU_MATMUL_BIAS
  spec.weight_type = GetParam();
  spec.tied_embeddings = true;
  spec.vocab_size = 320;
  spec.seed = 44;
  const std::string dir = NewTempDir();
  absl::StatusOr<SmallModel> compiled =
      CompileSmallModel(spec, compiler::CompileOptions::WeightType::kAuto, dir);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::string& gguf_path = compiled->gguf_path;
  const std::string& artifact_path = compiled->artifact_path;

  absl::StatusOr<std::unique_ptr<Device>> opened = Device::Open(lnpu::testing::TestDevice());
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<Device> device = *std::move(opened);
  const uint64_t capabilities = *device->GetParam(DRM_LNPU_PARAM_CAPABILITIES);
  const uint64_t preferred_caps =
      q4 ? DRM_LNPU_CAP_Q4_0_P16_PREFERRED | DRM_LNPU_CAP_Q4_0_P16S_PREFERRED
         : DRM_LNPU_CAP_Q8_0_P16_PREFERRED | DRM_LNPU_CAP_Q8_0_P16S_PREFERRED;
  const bool preferred = (capabilities & preferred_caps) != 0;
  const auto load = [&](LoadOptions load_options) {
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(device, artifact_path, load_options);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? *std::move(model) : nullptr;
  };
  std::unique_ptr<Model> panels = load({.weights = WeightPlacement::kCopy});
  std::unique_ptr<Model> layout =
      load({.weights = WeightPlacement::kCopy, .panel_weights = false});
  std::unique_ptr<Model> p16_only =
      load({.weights = WeightPlacement::kCopy, .panel_scales_in_stream = false});
  std::unique_ptr<Model> imported = load({.weights = WeightPlacement::kImport});
  ASSERT_TRUE(panels && layout && imported);
  // 7 matrices per layer and the tied embedding / output matrix.
  EXPECT_EQ(panels->panel_matrices(), preferred ? 2u * 7 + 1 : 0u);
  EXPECT_EQ(layout->panel_matrices(), 0u);
  EXPECT_EQ(imported->panel_matrices(), 0u);
  // The layout the device prefers: the _P16S one where it prefers both.
  const bool p16s_preferred =
      (capabilities & (q4 ? DRM_LNPU_CAP_Q4_0_P16S_PREFERRED : DRM_LNPU_CAP_Q8_0_P16S_PREFERRED)) !=
      0;
  const uint32_t p16s = q4 ? LNPU_DTYPE_Q4_0_P16S : LNPU_DTYPE_Q8_0_P16S;
  const uint32_t p16 = q4 ? LNPU_DTYPE_Q4_0_P16 : LNPU_DTYPE_Q8_0_P16;
  EXPECT_EQ(panels->program().ReadsWeightDtype(p16s), p16s_preferred);
  EXPECT_EQ(panels->program().ReadsWeightDtype(p16), preferred && !p16s_preferred);
  EXPECT_FALSE(layout->program().ReadsWeightDtype(p16s));
  // Without panel_scales_in_stream, the _P16 layout where the device
  // prefers it, with the same decisions as to which matrices.
  ASSERT_TRUE(p16_only);
  EXPECT_EQ(p16_only->panel_matrices(), panels->panel_matrices());
  EXPECT_FALSE(p16_only->program().ReadsWeightDtype(p16s));
  EXPECT_EQ(p16_only->program().ReadsWeightDtype(p16), preferred);

  const auto run = [](Model& model, std::vector<std::vector<float>>* logits) {
    return GreedyTokens(**model.CreateSequence(), {5, 77, 300, 12, 9, 140, 33, 2, 250, 61, 18}, 30,
                        logits);
  };
  std::vector<std::vector<float>> panel_logits, layout_logits;
  EXPECT_EQ(run(*panels, &panel_logits), run(*layout, &layout_logits));
  ASSERT_EQ(panel_logits.size(), layout_logits.size());
  for (size_t i = 0; i < panel_logits.size(); ++i) {
    EXPECT_LE(RelativeDifference(panel_logits[i], layout_logits[i]), 1e-4) << "step " << i;
  }
  // Both panel layouts compute in one order (quant_matmul.h): the same
  // tokens and logits bit for bit.
  std::vector<std::vector<float>> p16_logits, p16s_logits;
  EXPECT_EQ(run(*p16_only, &p16_logits), run(*panels, &p16s_logits));
  EXPECT_EQ(p16_logits, p16s_logits);

  // The batched decode graphs read the panels too: two lanes give what
  // each gives alone.
  ExpectBatchedLanesEqualEachAlone(*panels);

  panels.reset();
  p16_only.reset();
  layout.reset();
  imported.reset();
  std::remove(artifact_path.c_str());
  std::remove(gguf_path.c_str());
  std::remove(dir.c_str());
}

INSTANTIATE_TEST_SUITE_P(BlockTypes, PanelWeightsTest,
                         ::testing::Values(gguf::GgmlType::kQ8_0, gguf::GgmlType::kQ4_0),
                         [](const ::testing::TestParamInfo<gguf::GgmlType>& info) {
                           return info.param == gguf::GgmlType::kQ4_0 ? "Q4_0" : "Q8_0";
                         });

// Weights of many pieces of the load's copy (runtime/model.cc CopyWeights:
// 4 MiB plain pieces and 1 MiB repacked ones, read on all CPUs): in the
// artifact's layout the copy gives the imported model's logits bit for
// bit, and as panels (the 4096-row embedding and output projection three
// pieces each) the tokens of the artifact's layout.
TEST(CopiedWeightsTest, MatricesOfManyPiecesArriveWhole) {
  for (const gguf::GgmlType type : {gguf::GgmlType::kF16, gguf::GgmlType::kQ8_0}) {
    SCOPED_TRACE(type == gguf::GgmlType::kF16 ? "F16" : "Q8_0");
    synthetic::RandomLlamaSpec spec;
    spec.weight_type = type;
    spec.vocab_size = 4096;
    spec.dim = 512;
    spec.ffn_dim = 1536;
    spec.n_layers = 1;
    spec.seed = 45;
    const std::string dir = NewTempDir();
    absl::StatusOr<SmallModel> compiled =
        CompileSmallModel(spec, compiler::CompileOptions::WeightType::kKeep, dir);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    absl::StatusOr<std::unique_ptr<Device>> opened = Device::Open(lnpu::testing::TestDevice());
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::shared_ptr<Device> device = *std::move(opened);
    const auto load = [&](LoadOptions load_options) {
      absl::StatusOr<std::unique_ptr<Model>> model =
          Model::Load(device, compiled->artifact_path, load_options);
      EXPECT_TRUE(model.ok()) << model.status();
      return model.ok() ? *std::move(model) : nullptr;
    };
    std::unique_ptr<Model> copied = load({.weights = WeightPlacement::kCopy, .panel_weights = false});
    std::unique_ptr<Model> panels = load({.weights = WeightPlacement::kCopy});
    std::unique_ptr<Model> imported = load({.weights = WeightPlacement::kImport});
    ASSERT_TRUE(copied && panels && imported);
    ASSERT_GT(copied->device_memory_bytes(), uint64_t{6} << 20);
    ASSERT_FALSE(copied->weights_imported());
    ASSERT_TRUE(imported->weights_imported());
    const auto run = [](Model& model, std::vector<std::vector<float>>* logits) {
      return GreedyTokens(**model.CreateSequence(), {5, 77, 3000, 12, 9, 140, 4000, 2}, 16, logits);
    };
    std::vector<std::vector<float>> copied_logits, imported_logits, panel_logits;
    const std::vector<int32_t> tokens = run(*copied, &copied_logits);
    EXPECT_EQ(run(*imported, &imported_logits), tokens);
    EXPECT_EQ(copied_logits, imported_logits);
    EXPECT_EQ(run(*panels, &panel_logits), tokens);
    ASSERT_EQ(panel_logits.size(), copied_logits.size());
    for (size_t i = 0; i < panel_logits.size(); ++i) {
      EXPECT_LE(RelativeDifference(panel_logits[i], copied_logits[i]), 1e-4) << "step " << i;
    }
    copied.reset();
    panels.reset();
    imported.reset();
    std::remove(compiled->artifact_path.c_str());
    std::remove(compiled->gguf_path.c_str());
    std::remove(dir.c_str());
  }
}


// A Q6_K output projection (UAPI 1.6) beside Q8_0 matrices, kept: it runs
// as copied (the Q8_0 ones then in panels) and as imported weights with the
// same tokens, and a batched step's lanes give what each gives alone.
// Converted to Q8_0 as a copy loads it (LoadOptions::keep_q6_k false, a
// device without DRM_LNPU_CAP_Q6_K_PREFERRED, one without
// DRM_LNPU_CAP_DTYPE_Q6_K even when asked to import): the logits of the
// artifact npu-compile --weights q8 writes from the same GGUF (which auto
// gives Q8_0 layers, F16 where rows are not Q6_K blocks), bit for bit,
// with and without panels, in the same device memory (the last weight is
// converted in place).
TEST(Q6_KWeightsTest, OutputProjectionKeptOrConvertedAtLoad) {
  synthetic::RandomLlamaSpec spec;
  spec.weight_type = gguf::GgmlType::kQ6_K;
  spec.dim = 256;
  spec.n_layers = 2;
  spec.vocab_size = 320;
  spec.seed = 45;
  const std::string dir = NewTempDir();
  absl::StatusOr<SmallModel> q6_k =
      CompileSmallModel(spec, compiler::CompileOptions::WeightType::kAuto, dir);
  ASSERT_TRUE(q6_k.ok()) << q6_k.status();
  const std::string q8_0_dir = NewTempDir();
  absl::StatusOr<SmallModel> q8_0 =
      CompileSmallModel(spec, compiler::CompileOptions::WeightType::kQ8, q8_0_dir);
  ASSERT_TRUE(q8_0.ok()) << q8_0.status();

  absl::StatusOr<std::unique_ptr<Device>> opened = Device::Open(lnpu::testing::TestDevice());
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<Device> device = *std::move(opened);
  const uint64_t capabilities = Param(*device, DRM_LNPU_PARAM_CAPABILITIES);
  const auto load = [](std::shared_ptr<Device> on, const std::string& path,
                       LoadOptions options) -> std::unique_ptr<Model> {
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(std::move(on), path, options);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? *std::move(model) : nullptr;
  };
  const std::vector<int32_t> prompt = {5, 77, 300, 12, 9, 140, 33, 2, 250, 61, 18};
  const auto greedy = [&prompt](Model& model, std::vector<std::vector<float>>* logits = nullptr) {
    return GreedyTokens(**model.CreateSequence(), prompt, 30, logits);
  };

  std::unique_ptr<Model> copied =
      load(device, q6_k->artifact_path, {.weights = WeightPlacement::kCopy});
  std::unique_ptr<Model> imported =
      load(device, q6_k->artifact_path, {.weights = WeightPlacement::kImport});
  ASSERT_TRUE(copied && imported);
  EXPECT_EQ(copied->q6_k_conversions(),
            (capabilities & DRM_LNPU_CAP_Q6_K_PREFERRED) != 0 ? 0u : 1u);
  EXPECT_EQ(imported->q6_k_conversions(), 0u);
  EXPECT_TRUE(imported->weights_imported());
  EXPECT_EQ(greedy(*copied), greedy(*imported));
  ExpectBatchedLanesEqualEachAlone(*imported);

  for (const bool panels : {true, false}) {
    SCOPED_TRACE(panels ? "panels" : "artifact layout");
    std::unique_ptr<Model> reference = load(
        device, q8_0->artifact_path, {.weights = WeightPlacement::kCopy, .panel_weights = panels});
    std::unique_ptr<Model> converted =
        load(device, q6_k->artifact_path,
             {.weights = WeightPlacement::kCopy, .panel_weights = panels, .keep_q6_k = false});
    ASSERT_TRUE(reference && converted);
    EXPECT_EQ(converted->q6_k_conversions(), 1u);
    EXPECT_EQ(converted->panel_matrices(), reference->panel_matrices());
    EXPECT_EQ(converted->device_memory_bytes(), reference->device_memory_bytes());
    std::vector<std::vector<float>> reference_logits, converted_logits;
    EXPECT_EQ(greedy(*converted, &converted_logits), greedy(*reference, &reference_logits));
    EXPECT_TRUE(converted_logits == reference_logits);
    if (panels) ExpectBatchedLanesEqualEachAlone(*converted);
  }

  std::unique_ptr<Model> reference = load(device, q8_0->artifact_path, {});
  ASSERT_TRUE(reference);
  std::vector<std::vector<float>> reference_logits;
  const std::vector<int32_t> reference_tokens = greedy(*reference, &reference_logits);
  const auto device_with = [&](uint64_t caps) {
    return std::make_shared<Device>(std::make_unique<ParamOverridingFile>(
        softnpu::SoftNpu::Default()->Open(), DRM_LNPU_PARAM_CAPABILITIES, caps));
  };
  // Not preferred: a copy converts, an import keeps the file's Q6_K.
  const std::shared_ptr<Device> slow_q6_k =
      device_with((capabilities | DRM_LNPU_CAP_DTYPE_Q6_K) & ~DRM_LNPU_CAP_Q6_K_PREFERRED);
  std::unique_ptr<Model> slow_copied = load(slow_q6_k, q6_k->artifact_path, {});
  std::unique_ptr<Model> slow_imported =
      load(slow_q6_k, q6_k->artifact_path, {.weights = WeightPlacement::kImport});
  ASSERT_TRUE(slow_copied && slow_imported);
  EXPECT_EQ(slow_copied->q6_k_conversions(), 1u);
  EXPECT_EQ(slow_imported->q6_k_conversions(), 0u);
  EXPECT_TRUE(slow_imported->weights_imported());
  std::vector<std::vector<float>> logits;
  EXPECT_EQ(greedy(*slow_copied, &logits), reference_tokens);
  EXPECT_TRUE(logits == reference_logits);
  // No Q6_K at all: even an import is a converted copy.
  std::unique_ptr<Model> without = load(device_with(capabilities & ~DRM_LNPU_CAP_DTYPE_Q6_K &
                                                    ~DRM_LNPU_CAP_Q6_K_PREFERRED),
                                        q6_k->artifact_path, {.weights = WeightPlacement::kImport});
  ASSERT_TRUE(without);
  EXPECT_EQ(without->q6_k_conversions(), 1u);
  EXPECT_FALSE(without->weights_imported());
  logits.clear();
  EXPECT_EQ(greedy(*without, &logits), reference_tokens);
  EXPECT_TRUE(logits == reference_logits);

  for (const SmallModel* m : {&*q6_k, &*q8_0}) {
    std::remove(m->artifact_path.c_str());
    std::remove(m->gguf_path.c_str());
  }
  std::remove(dir.c_str());
  std::remove(q8_0_dir.c_str());
}

INSTANTIATE_TEST_SUITE_P(Shapes, RandomModelTest, ::testing::ValuesIn(RandomCases()),
                         [](const ::testing::TestParamInfo<RandomCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace lnpu::runtime
