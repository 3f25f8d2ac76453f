// Batched decode graphs (runtime::DecodeBatch) on the software NPU: every
// lane of a batch generates what the same sequence generates alone, with
// the same logits bit for bit (up to 4 rows MATMUL runs each row's GEMV:
// kernel_iface/softnpu/compute/matmul.h).
#include "runtime/decode_batch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_iface/driver/device.h"
#include "runtime/model.h"
#include "runtime/sequence.h"
#include "tests/runtime/runtime_test_util.h"

namespace lnpu::runtime {
namespace {

using ::lnpu::runtime::testing::Argmax;
using ::lnpu::runtime::testing::ModelsDir;
using ::lnpu::runtime::testing::NewTempDir;
using ::lnpu::runtime::testing::SuiteArtifact;
using ::lnpu::runtime::JobTimeline;
using ::lnpu::runtime::StepTimeline;
using ::lnpu::runtime::TimeSpan;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

bool SameLogits(absl::Span<const float> a, absl::Span<const float> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// A greedy generation: the tokens and each step's logits.
struct Greedy {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // logits[i] gave tokens[i]
};

// `steps` greedy tokens after `prompt` on a sequence of its own.
Greedy SoloGreedy(Model& model, const std::vector<int32_t>& prompt, size_t steps) {
  Greedy out;
  absl::StatusOr<std::unique_ptr<Sequence>> sequence = model.CreateSequence();
  EXPECT_TRUE(sequence.ok()) << sequence.status();
  if (!sequence.ok()) return out;
  absl::StatusOr<absl::Span<const float>> logits = (*sequence)->Forward(prompt);
  for (size_t i = 0; i < steps && logits.ok(); ++i) {
    out.logits.emplace_back(logits->begin(), logits->end());
    out.tokens.push_back(Argmax(*logits));
    if (i + 1 < steps) logits = (*sequence)->Forward(absl::MakeConstSpan(&out.tokens.back(), 1));
  }
  EXPECT_TRUE(logits.ok()) << logits.status();
  return out;
}

// Compiles `gguf` into `path` with batched decode graphs of 2 and 4 lanes.
void CompileWithBatches(const std::string& gguf, const std::string& path,
                        compiler::CompileOptions::WeightType weights) {
  compiler::CompileOptions options;
  options.max_prompt_len = 48;
  options.min_response_len = 16;
  options.prefill_chunks = {4, 16};
  options.decode_batches = {1, 4, 2, 4};
  options.weights = weights;
  // An F32 cache: the batched and solo rows then read the same values.
  options.kv_dtype = compiler::CompileOptions::KvType::kF32;
  const absl::Status compiled = compiler::CompileGguf(gguf, path, options);
  EXPECT_TRUE(compiled.ok()) << compiled;
}

class DecodeBatchTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kCapacity = 64;

  static void SetUpTestSuite() {
    stories_ = new SuiteArtifact("model.lnpu");
    CompileWithBatches(ModelsDir() + "/stories260K.gguf", stories_->path,
                       compiler::CompileOptions::WeightType::kAuto);
  }
  static void TearDownTestSuite() { delete stories_; }

  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Device>> device = Device::Open("soft");
    ASSERT_TRUE(device.ok()) << device.status();
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(*std::move(device), stories_->path);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    for (size_t i = 0; i < 4; ++i) {
      absl::StatusOr<std::unique_ptr<Sequence>> lane = model_->CreateSequence();
      ASSERT_TRUE(lane.ok()) << lane.status();
      lanes_.push_back(*std::move(lane));
    }
    std::vector<Sequence*> lanes;
    for (auto& lane : lanes_) lanes.push_back(lane.get());
    absl::StatusOr<std::unique_ptr<DecodeBatch>> batch = model_->CreateDecodeBatch(lanes);
    ASSERT_TRUE(batch.ok()) << batch.status();
    batch_ = *std::move(batch);
  }

  // Prompts of different lengths (the lanes' caches fill differently).
  static std::vector<std::vector<int32_t>> Prompts() {
    return {{1, 403, 407, 261, 378},
            {1, 285, 301},
            {1, 403, 407, 261, 378, 285, 301, 260, 270, 280, 290, 300, 310, 320, 330, 340, 350},
            {1, 450}};
  }

  static SuiteArtifact* stories_;
  std::unique_ptr<Model> model_;
  std::vector<std::unique_ptr<Sequence>> lanes_;
  std::unique_ptr<DecodeBatch> batch_;
};

SuiteArtifact* DecodeBatchTest::stories_ = nullptr;

// Runs greedy generation on the lanes of `batch`: lane i prefills
// prompts[i] alone, then all lanes decode together, lane i for steps[i]
// tokens (a lane that is done idles while the others go on).
std::vector<Greedy> BatchedGreedy(DecodeBatch& batch,
                                  const std::vector<std::vector<int32_t>>& prompts,
                                  const std::vector<size_t>& steps) {
  std::vector<Greedy> out(batch.lanes());
  std::vector<int32_t> next(batch.lanes(), DecodeBatch::kIdle);
  for (size_t i = 0; i < batch.lanes(); ++i) {
    if (steps[i] == 0) continue;
    absl::StatusOr<absl::Span<const float>> logits = batch.lane(i).Forward(prompts[i]);
    EXPECT_TRUE(logits.ok()) << logits.status();
    if (!logits.ok()) return out;
    out[i].logits.emplace_back(logits->begin(), logits->end());
    out[i].tokens.push_back(Argmax(*logits));
    if (steps[i] > 1) next[i] = out[i].tokens.back();
  }
  while (std::any_of(next.begin(), next.end(), [](int32_t t) { return t != DecodeBatch::kIdle; })) {
    const absl::Status step = batch.Step(next);
    EXPECT_TRUE(step.ok()) << step;
    if (!step.ok()) return out;
    for (size_t i = 0; i < batch.lanes(); ++i) {
      if (next[i] == DecodeBatch::kIdle) continue;
      const absl::Span<const float> logits = batch.logits(i);
      out[i].logits.emplace_back(logits.begin(), logits.end());
      out[i].tokens.push_back(Argmax(logits));
      next[i] = out[i].tokens.size() < steps[i] ? out[i].tokens.back() : DecodeBatch::kIdle;
    }
  }
  return out;
}

void ExpectSameAsSolo(Model& model, DecodeBatch& batch,
                      const std::vector<std::vector<int32_t>>& prompts,
                      const std::vector<size_t>& steps) {
  const std::vector<Greedy> batched = BatchedGreedy(batch, prompts, steps);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Greedy solo = SoloGreedy(model, prompts[i], steps[i]);
    EXPECT_EQ(batched[i].tokens, solo.tokens) << "lane " << i;
    ASSERT_EQ(batched[i].logits.size(), solo.logits.size()) << "lane " << i;
    for (size_t s = 0; s < solo.logits.size(); ++s) {
      EXPECT_EQ(batched[i].logits[s], solo.logits[s]) << "lane " << i << " step " << s;
    }
  }
}

TEST_F(DecodeBatchTest, TheModelListsItsBatches) {
  EXPECT_THAT(model_->info().decode_batches, ElementsAre(2, 4));
  EXPECT_EQ(batch_->lanes(), 4u);
  EXPECT_GT(batch_->device_memory_bytes(), 0u);
}

TEST_F(DecodeBatchTest, LanesGenerateWhatTheyGenerateAlone) {
  ExpectSameAsSolo(*model_, *batch_, Prompts(), {12, 12, 12, 12});
  EXPECT_GT(batch_->stats().batched_steps, 0u);
  EXPECT_EQ(lanes_[1]->stats().batched_steps, 11u);
  EXPECT_EQ(batch_->stats().padded_rows, 0u);
}

TEST_F(DecodeBatchTest, ABatchOfFewerLanesRecordsOnlyItsGraphs) {
  std::vector<Sequence*> two = {lanes_[2].get(), lanes_[3].get()};
  absl::StatusOr<std::unique_ptr<DecodeBatch>> batch = model_->CreateDecodeBatch(two);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ((*batch)->lanes(), 2u);
  ExpectSameAsSolo(*model_, **batch, {Prompts()[0], Prompts()[2]}, {9, 7});
  EXPECT_GT((*batch)->stats().batched_steps, 0u);
}

TEST_F(DecodeBatchTest, LanesFinishingEarlyLeaveTheOthersUnchanged) {
  // Lane 3 finishes first, then lane 0 (a padding row below active lanes),
  // lane 2 runs alone at the end (its own decode graph).
  ExpectSameAsSolo(*model_, *batch_, Prompts(), {6, 14, 20, 3});
  EXPECT_GT(batch_->stats().padded_rows, 0u);
  EXPECT_LT(batch_->stats().batched_steps, batch_->stats().steps);
}

// The batch's observer sees each batched step (the graph covering the
// highest active lane, its active lanes as tokens, every command timed on
// the device); a step with one active lane is its lane's, seen by the
// lane's observer; removing the observer stops the calls.
TEST_F(DecodeBatchTest, StepObserverSeesEveryBatchedStepWithDeviceTimes) {
  for (size_t i = 0; i < 4; ++i) ASSERT_TRUE(lanes_[i]->Forward(Prompts()[i]).ok());
  std::vector<StepTimeline> batched, lane_steps;
  ASSERT_TRUE(batch_->SetStepObserver([&](const StepTimeline& step) {
    batched.push_back(step);
  }).ok());
  ASSERT_TRUE(lanes_[1]->SetStepObserver([&](const StepTimeline& step) {
    lane_steps.push_back(step);
  }).ok());
  constexpr int32_t kIdle = DecodeBatch::kIdle;
  ASSERT_TRUE(batch_->Step(std::vector<int32_t>{300, 301, 302, 303}).ok());
  ASSERT_TRUE(batch_->Step(std::vector<int32_t>{300, kIdle, kIdle, kIdle}).ok());  // lane 0 alone
  ASSERT_TRUE(batch_->Step(std::vector<int32_t>{kIdle, 301, kIdle, kIdle}).ok());  // lane 1 alone
  ASSERT_TRUE(batch_->Step(std::vector<int32_t>{300, 301, kIdle, kIdle}).ok());
  ASSERT_EQ(batched.size(), 2u);
  EXPECT_EQ(batched[0].tokens, 4u);
  EXPECT_EQ(batched[0].graph_spec->rows, 4u);
  EXPECT_EQ(batched[1].tokens, 2u);
  EXPECT_EQ(batched[1].graph_spec->rows, 2u);
  for (const StepTimeline& step : batched) {
    EXPECT_TRUE(step.graph_spec->decode);
    ASSERT_TRUE(step.device_profiled);
    ASSERT_EQ(step.jobs.size(), step.graph_spec->streams.size());
    for (size_t j = 0; j < step.jobs.size(); ++j) {
      const JobTimeline& job = step.jobs[j];
      ASSERT_EQ(job.commands.size(), step.graph_spec->streams[j].commands.size());
      EXPECT_LE(step.step.start_ns, job.submit.start_ns);
      EXPECT_LE(job.submit.start_ns, job.device.start_ns);
      EXPECT_LE(job.device.end_ns, step.step.end_ns);
      for (const TimeSpan& command : job.commands) {
        EXPECT_LE(job.device.start_ns, command.start_ns);
        EXPECT_LE(command.start_ns, command.end_ns);
        EXPECT_LE(command.end_ns, job.device.end_ns);
      }
    }
  }
  ASSERT_EQ(lane_steps.size(), 1u);
  EXPECT_EQ(lane_steps[0].tokens, 1u);
  EXPECT_EQ(lane_steps[0].graph_spec->rows, 1u);
  ASSERT_TRUE(batch_->SetStepObserver(nullptr).ok());
  ASSERT_TRUE(batch_->Step(std::vector<int32_t>{300, 301, 302, 303}).ok());
  EXPECT_EQ(batched.size(), 2u);
}

TEST_F(DecodeBatchTest, ALaneDoesNotDependOnTheOtherLanesTokens) {
  for (size_t i = 0; i < 4; ++i) ASSERT_TRUE(lanes_[i]->Forward(Prompts()[i]).ok());
  // Lanes 0 and 3 with the other two as padding rows, on copies of the
  // caches; then all four.
  std::vector<std::unique_ptr<Sequence>> copies;
  for (size_t i = 0; i < 4; ++i) {
    copies.push_back(*model_->CreateSequence());
    ASSERT_TRUE(copies[i]->RestoreState(*lanes_[i]->SaveState()).ok());
  }
  std::vector<Sequence*> copy_lanes;
  for (auto& copy : copies) copy_lanes.push_back(copy.get());
  absl::StatusOr<std::unique_ptr<DecodeBatch>> copy_batch = model_->CreateDecodeBatch(copy_lanes);
  ASSERT_TRUE(copy_batch.ok()) << copy_batch.status();
  ASSERT_TRUE((*copy_batch)->Step({7, DecodeBatch::kIdle, DecodeBatch::kIdle, 9}).ok());
  ASSERT_TRUE(batch_->Step({7, 300, 301, 9}).ok());
  for (size_t lane : {0, 3}) {
    EXPECT_TRUE(SameLogits((*copy_batch)->logits(lane), batch_->logits(lane))) << "lane " << lane;
  }
  // The padding rows changed nothing in their lanes.
  for (size_t lane : {1, 2}) {
    const CacheSnapshot before = *lanes_[lane]->SaveState(Prompts()[lane].size());
    const CacheSnapshot padded = *copies[lane]->SaveState();
    EXPECT_EQ(padded.next_position, before.next_position) << "lane " << lane;
    EXPECT_EQ(padded.mask, before.mask) << "lane " << lane;
    EXPECT_EQ(padded.kv_rows, before.kv_rows) << "lane " << lane;
  }
  EXPECT_EQ((*copy_batch)->stats().padded_rows, 2u);
}

TEST_F(DecodeBatchTest, AFullLaneIsRefusedAndNothingRuns) {
  std::vector<int32_t> fill(kCapacity, 300);
  fill[0] = 1;
  ASSERT_TRUE(lanes_[2]->Forward(fill).ok());
  ASSERT_TRUE(lanes_[0]->Forward(Prompts()[0]).ok());
  ASSERT_TRUE(lanes_[1]->Forward(Prompts()[1]).ok());
  const absl::Status full = batch_->Step({5, 6, 7, DecodeBatch::kIdle});
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("lane 2"));
  EXPECT_EQ(lanes_[0]->cache().next_position(), 5);
  EXPECT_EQ(lanes_[1]->cache().next_position(), 3);
  EXPECT_EQ(batch_->stats().steps, 0u);
  // The other lanes go on without it.
  ASSERT_TRUE(batch_->Step({5, 6, DecodeBatch::kIdle, DecodeBatch::kIdle}).ok());
  EXPECT_EQ(lanes_[0]->cache().next_position(), 6);
  EXPECT_EQ(lanes_[2]->cache().next_position(), static_cast<int32_t>(kCapacity));
}

TEST_F(DecodeBatchTest, SavedLaneContinuesAloneAndRestoredLaneContinuesInTheBatch) {
  const std::vector<std::vector<int32_t>> prompts = Prompts();
  const std::vector<Greedy> first = BatchedGreedy(*batch_, prompts, {5, 5, 5, 5});
  // Lane 1's state after the batched steps, continued alone ...
  absl::StatusOr<CacheSnapshot> saved = lanes_[1]->SaveState();
  ASSERT_TRUE(saved.ok()) << saved.status();
  std::unique_ptr<Sequence> alone = *model_->CreateSequence();
  ASSERT_TRUE(alone->RestoreState(*saved).ok());
  // ... and restored into lane 3 of the batch, continued with lane 0.
  ASSERT_TRUE(lanes_[3]->RestoreState(*saved).ok());
  int32_t token = first[1].tokens.back();
  int32_t other = first[0].tokens.back();
  for (int step = 0; step < 6; ++step) {
    absl::StatusOr<absl::Span<const float>> expected =
        alone->Forward(absl::MakeConstSpan(&token, 1));
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(batch_->Step({other, DecodeBatch::kIdle, DecodeBatch::kIdle, token}).ok());
    EXPECT_TRUE(SameLogits(batch_->logits(3), *expected)) << "step " << step;
    EXPECT_EQ(Argmax(batch_->logits(3)), Argmax(*expected)) << "step " << step;
    token = Argmax(*expected);
    other = Argmax(batch_->logits(0));
  }
  EXPECT_EQ(lanes_[3]->cache().TokensInContext(), alone->cache().TokensInContext());
}

TEST_F(DecodeBatchTest, RingLanesEvictLikeSoloRuns) {
  const CacheFullPolicy ring = CacheFullPolicy::Ring(4);
  ASSERT_TRUE(lanes_[0]->SetCacheFullPolicy(ring).ok());
  ASSERT_TRUE(lanes_[1]->SetCacheFullPolicy(ring).ok());
  std::unique_ptr<Sequence> solo = *model_->CreateSequence();
  ASSERT_TRUE(solo->SetCacheFullPolicy(ring).ok());
  const std::vector<int32_t> prompt = Prompts()[2];
  ASSERT_TRUE(lanes_[1]->Forward(prompt).ok());
  absl::StatusOr<absl::Span<const float>> logits = solo->Forward(prompt);
  ASSERT_TRUE(logits.ok());
  int32_t token = Argmax(*logits);
  // Past the capacity: the ring overwrites lane 1's oldest slots.
  for (uint32_t step = 0; step < kCapacity; ++step) {
    ASSERT_TRUE(batch_->Step({static_cast<int32_t>(step % 100 + 3), token, DecodeBatch::kIdle,
                              DecodeBatch::kIdle}).ok());
    logits = solo->Forward(absl::MakeConstSpan(&token, 1));
    ASSERT_TRUE(logits.ok());
    ASSERT_EQ(Argmax(batch_->logits(1)), Argmax(*logits)) << "step " << step;
    EXPECT_TRUE(SameLogits(batch_->logits(1), *logits)) << "step " << step;
    token = Argmax(*logits);
  }
  EXPECT_TRUE(lanes_[1]->cache().wrapped());
  EXPECT_EQ(lanes_[1]->cache().TokensInContext(), solo->cache().TokensInContext());
  EXPECT_GT(lanes_[1]->stats().evicted_tokens, 0u);
}

TEST_F(DecodeBatchTest, BadStepsAreRefusedBeforeAnythingRuns) {
  EXPECT_EQ(batch_->Step({1, 2}).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<int32_t> idle(4, DecodeBatch::kIdle);
  EXPECT_THAT(batch_->Step(idle).message(), HasSubstr("without tokens"));
  const absl::Status bad = batch_->Step({1, 512, DecodeBatch::kIdle, 3});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("lane 1"));
  EXPECT_EQ(batch_->Step({1, -2, DecodeBatch::kIdle, 3}).code(),
            absl::StatusCode::kInvalidArgument);
  for (const auto& lane : lanes_) EXPECT_EQ(lane->cache().next_position(), 0);
  EXPECT_EQ(batch_->stats().steps, 0u);
}

TEST_F(DecodeBatchTest, OnlyCompiledLaneCountsOfDistinctLanesOfTheModel) {
  std::vector<Sequence*> three = {lanes_[0].get(), lanes_[1].get(), lanes_[2].get()};
  absl::StatusOr<std::unique_ptr<DecodeBatch>> odd = model_->CreateDecodeBatch(three);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(odd.status().message(), HasSubstr("2, 4 lanes"));
  std::vector<Sequence*> repeated = {lanes_[0].get(), lanes_[0].get()};
  EXPECT_THAT(model_->CreateDecodeBatch(repeated).status().message(), HasSubstr("repeats"));
  std::vector<Sequence*> missing = {lanes_[0].get(), nullptr};
  EXPECT_EQ(model_->CreateDecodeBatch(missing).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A sequence of another load of the model.
  absl::StatusOr<std::unique_ptr<Model>> other = Model::Load(
      std::shared_ptr<Device>(*Device::Open("soft")), stories_->path);
  ASSERT_TRUE(other.ok());
  std::unique_ptr<Sequence> foreign = *(*other)->CreateSequence();
  std::vector<Sequence*> mixed = {lanes_[0].get(), foreign.get()};
  EXPECT_THAT(model_->CreateDecodeBatch(mixed).status().message(),
              HasSubstr("not a sequence of this model"));
}

TEST(DecodeBatchWithoutGraphsTest, ArtifactsWithoutBatchesLoadAndRefuseBatches) {
  const std::string dir = NewTempDir();
  const std::string path = dir + "/plain.lnpu";
  compiler::CompileOptions options;
  options.max_prompt_len = 16;
  options.min_response_len = 8;
  options.prefill_chunks = {4};
  ASSERT_TRUE(compiler::CompileGguf(ModelsDir() + "/stories260K.gguf", path, options).ok());
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Load(std::shared_ptr<Device>(*Device::Open("soft")), path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->info().decode_batches.empty());
  std::unique_ptr<Sequence> a = *(*model)->CreateSequence();
  std::unique_ptr<Sequence> b = *(*model)->CreateSequence();
  std::vector<Sequence*> lanes = {a.get(), b.get()};
  absl::StatusOr<std::unique_ptr<DecodeBatch>> batch = (*model)->CreateDecodeBatch(lanes);
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(batch.status().message(), HasSubstr("--decode-batch"));
  std::remove(path.c_str());
  std::remove(dir.c_str());
}

TEST(DecodeBatchCompileTest, LaneCountsOutsideOneToSixtyFourAreRefused) {
  const std::string dir = NewTempDir();
  compiler::CompileOptions options;
  options.decode_batches = {2, 65};
  const absl::Status compiled =
      compiler::CompileGguf(ModelsDir() + "/stories260K.gguf", dir + "/x.lnpu", options);
  EXPECT_EQ(compiled.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(compiled.message(), HasSubstr("65 lanes"));
  options.decode_batches = {0};
  EXPECT_EQ(compiler::CompileGguf(ModelsDir() + "/stories260K.gguf", dir + "/x.lnpu", options)
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::remove(dir.c_str());
}

// Random models: F32 weights and Q8_0 weights (each row's activations are
// quantized per block of 32 on their own, so batching rows does not change
// the int8 rounding); GQA and a qwen2 model with biases.
struct RandomBatchCase {
  std::string name;
  synthetic::RandomLlamaSpec spec;
  compiler::CompileOptions::WeightType weights;
};

class RandomModelDecodeBatchTest : public ::testing::TestWithParam<RandomBatchCase> {};

TEST_P(RandomModelDecodeBatchTest, LanesGenerateWhatTheyGenerateAlone) {
  const RandomBatchCase& param = GetParam();
  const std::string dir = NewTempDir();
  const std::string gguf = dir + "/model.gguf";
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(param.spec, gguf).ok());
  const std::string path = dir + "/model.lnpu";
  CompileWithBatches(gguf, path, param.weights);
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Load(std::shared_ptr<Device>(*Device::Open("soft")), path);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::unique_ptr<Sequence>> owned;
  std::vector<Sequence*> lanes;
  for (int i = 0; i < 4; ++i) {
    owned.push_back(*(*model)->CreateSequence());
    lanes.push_back(owned.back().get());
  }
  absl::StatusOr<std::unique_ptr<DecodeBatch>> batch = (*model)->CreateDecodeBatch(lanes);
  ASSERT_TRUE(batch.ok()) << batch.status();
  std::vector<std::vector<int32_t>> prompts = {{1, 5, 9, 200}, {1, 7}, {1, 300, 11, 12, 13, 14, 15, 16, 17}, {1}};
  ExpectSameAsSolo(**model, **batch, prompts, {10, 16, 8, 12});
  batch->reset();
  owned.clear();
  model->reset();
  std::remove(path.c_str());
  std::remove(gguf.c_str());
  std::remove(dir.c_str());
}

std::vector<RandomBatchCase> RandomBatchCases() {
  std::vector<RandomBatchCase> cases;
  {
    RandomBatchCase c{"llama_gqa_f32", {}, compiler::CompileOptions::WeightType::kF32};
    c.spec.seed = 5;
    cases.push_back(c);
  }
  {
    RandomBatchCase c{"qwen2_q8", {}, compiler::CompileOptions::WeightType::kQ8};
    c.spec.architecture = "qwen2";
    c.spec.seed = 6;
    cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, RandomModelDecodeBatchTest, ::testing::ValuesIn(RandomBatchCases()),
                         [](const ::testing::TestParamInfo<RandomBatchCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace lnpu::runtime
