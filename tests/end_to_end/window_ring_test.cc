// The window ring of Gemma's sliding-window layers (model.fbs
// KvCache.window_ring_slots, runtime/window_ring.h): random gemma2 and
// gemma3 models with a window of 8 positions, whose local layers keep 8 +
// verify_rows - 1 slots instead of the cache's 96, against the independent
// reference (a plain growing cache) and against the same model compiled
// without the ring, across prompts and prefill chunks longer than the
// ring, the ring wrapping many times, saved and restored sessions, copied
// prefixes, speculative truncation, batched decoding and the ring policy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "compiler_artifacts/synthetic/synthetic_presets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_iface/driver/device.h"
#include "runtime/cache_snapshot.h"
#include "runtime/decode_batch.h"
#include "runtime/model.h"
#include "runtime/sequence.h"
#include "tests/end_to_end/equivalence_harness.h"
#include "tests/reference/reference_llama.h"
#include "tests/test_device.h"
#include "tests/test_temp_dir.h"

namespace lnpu::end_to_end {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kWindow = 8;
constexpr uint32_t kVerifyRows = 4;
constexpr uint32_t kRingSlots = kWindow + kVerifyRows - 1;
constexpr uint32_t kMaxPromptLen = 48;
constexpr uint32_t kMinResponseLen = 48;
constexpr uint32_t kCapacity = kMaxPromptLen + kMinResponseLen;
constexpr int kPromptLen = 40;

struct RingCase {
  std::string name;
  std::string architecture;
  uint32_t n_layers;  // gemma2: even layers local; gemma3: five of six
  compiler::CompileOptions::KvType kv_dtype;
};

void PrintTo(const RingCase& c, std::ostream* os) { *os << c.name; }

int32_t Argmax(absl::Span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

double MaxDifference(absl::Span<const float> a, absl::Span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(double{a[i]} - b[i]));
  }
  return diff;
}

// Runs `token`, then `steps` - 1 greedy tokens of `b`, through both
// sequences; fails at the first step whose logits differ by more than
// `tolerance`.
::testing::AssertionResult ContinueAlike(runtime::Sequence& a, runtime::Sequence& b,
                                         int32_t token, int steps, double tolerance) {
  for (int step = 0; step < steps; ++step) {
    const absl::StatusOr<absl::Span<const float>> la = a.Forward(absl::MakeConstSpan(&token, 1));
    const absl::StatusOr<absl::Span<const float>> lb = b.Forward(absl::MakeConstSpan(&token, 1));
    if (!la.ok() || !lb.ok()) {
      return ::testing::AssertionFailure()
             << "step " << step << ": " << la.status() << " / " << lb.status();
    }
    const double difference = MaxDifference(*la, *lb);
    if (difference > tolerance) {
      return ::testing::AssertionFailure()
             << "step " << step << ": logits differ by " << difference << " > " << tolerance;
    }
    token = Argmax(*lb);
  }
  return ::testing::AssertionSuccess();
}

class WindowRingTest : public ::testing::TestWithParam<RingCase> {
 protected:
  void SetUp() override {
    const RingCase& c = GetParam();
    synthetic::RandomLlamaSpec spec;
    spec.architecture = c.architecture;
    spec.vocab_size = 320;
    spec.dim = 64;
    spec.n_layers = c.n_layers;
    spec.n_heads = 4;
    spec.n_kv_heads = 2;
    spec.ffn_dim = 96;
    spec.context_length = kCapacity;
    spec.sliding_window = kWindow;
    spec.seed = 77;
    absl::StatusOr<std::string> gguf = WriteRandomLlamaToTempDir(spec, c.name);
    ASSERT_TRUE(gguf.ok()) << gguf.status();
    gguf_ = *gguf;
    absl::StatusOr<std::unique_ptr<Device>> device = Device::Open(lnpu::testing::TestDevice());
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *std::move(device);
  }

  // The model compiled with prefill chunks `chunks`, with or without the
  // window ring, and loaded.
  std::unique_ptr<runtime::Model> Compile(std::vector<uint32_t> chunks, bool window_ring,
                                          std::string* artifact_path = nullptr) {
    compiler::CompileOptions options;
    options.max_prompt_len = kMaxPromptLen;
    options.min_response_len = kMinResponseLen;
    options.prefill_chunks = std::move(chunks);
    options.weights = compiler::CompileOptions::WeightType::kF32;
    options.kv_dtype = GetParam().kv_dtype;
    options.verify_rows = kVerifyRows;
    options.decode_batches = {2};
    options.window_ring = window_ring;
    const std::string name = absl::StrCat(GetParam().name, window_ring ? "_ring" : "_full",
                                          options.prefill_chunks.front());
    absl::StatusOr<std::string> artifact = CompileToTempDir(gguf_, name, options);
    EXPECT_TRUE(artifact.ok()) << artifact.status();
    if (!artifact.ok()) return nullptr;
    if (artifact_path != nullptr) *artifact_path = *artifact;
    absl::StatusOr<std::unique_ptr<runtime::Model>> model =
        runtime::Model::Load(device_, *artifact);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? *std::move(model) : nullptr;
  }

  static std::unique_ptr<runtime::Sequence> NewSequence(runtime::Model& model) {
    absl::StatusOr<std::unique_ptr<runtime::Sequence>> sequence = model.CreateSequence();
    EXPECT_TRUE(sequence.ok()) << sequence.status();
    return sequence.ok() ? *std::move(sequence) : nullptr;
  }

  // Runs `prompt` and then greedy tokens until the cache holds `until`
  // positions; returns the generated tokens.
  static std::vector<int32_t> RunGreedy(runtime::Sequence& sequence,
                                        absl::Span<const int32_t> prompt, int until) {
    absl::StatusOr<absl::Span<const float>> logits = sequence.Forward(prompt);
    std::vector<int32_t> generated;
    while (logits.ok() && sequence.cache().next_position() < until) {
      generated.push_back(Argmax(*logits));
      logits = sequence.Forward(absl::MakeConstSpan(&generated.back(), 1));
    }
    EXPECT_TRUE(logits.ok()) << logits.status();
    if (logits.ok()) generated.push_back(Argmax(*logits));
    return generated;
  }

  std::vector<int32_t> Prompt() const { return SeededPrompt(kPromptLen, 320, /*seed=*/5); }

  std::string gguf_;
  std::shared_ptr<Device> device_;
};

TEST_P(WindowRingTest, LocalLayersKeepOnlyTheRing) {
  std::string ring_path, full_path;
  ASSERT_NE(Compile({16}, true, &ring_path), nullptr);
  ASSERT_NE(Compile({16}, false, &full_path), nullptr);
  absl::StatusOr<std::unique_ptr<artifact::Artifact>> ring = artifact::Artifact::Open(ring_path);
  absl::StatusOr<std::unique_ptr<artifact::Artifact>> full = artifact::Artifact::Open(full_path);
  ASSERT_TRUE(ring.ok() && full.ok());
  const artifact::fb::KvCache& kv = *(*ring)->model().kv_cache();
  EXPECT_EQ(kv.window_ring_slots(), kRingSlots);
  EXPECT_EQ(kv.window(), kWindow);
  ASSERT_NE(kv.layer_slots(), nullptr);
  const uint32_t layers = GetParam().n_layers;
  const uint32_t period = GetParam().architecture == "gemma2" ? 2 : 6;
  uint32_t ring_layers = 0;
  for (uint32_t l = 0; l < layers; ++l) {
    const bool local = l % period != period - 1;
    EXPECT_EQ(kv.layer_slots()->Get(l), local ? kRingSlots : kCapacity) << "layer " << l;
    ring_layers += local;
  }
  EXPECT_EQ((*full)->model().kv_cache()->window_ring_slots(), 0u);
  auto kv_buffer_bytes = [](const artifact::Artifact& a) {
    return a.model().buffers()->Get(a.model().kv_cache()->buffer())->size();
  };
  const uint64_t row = artifact::KvRowBytes(kv.dtype(), 2, 16);
  EXPECT_EQ(kv_buffer_bytes(**full) - kv_buffer_bytes(**ring),
            2ull * ring_layers * (kCapacity - kRingSlots) * row);
}

// A 40-token prompt in chunks of 16 (twice the window, longer than the
// ring), then greedy decoding until the cache is full: the ring wraps
// about eight times.
TEST_P(WindowRingTest, MatchesTheReferenceUntilTheCacheIsFull) {
  std::string artifact;
  std::unique_ptr<runtime::Model> model = Compile({16}, true, &artifact);
  ASSERT_NE(model, nullptr);
  std::unique_ptr<runtime::Sequence> sequence = NewSequence(*model);
  ASSERT_NE(sequence, nullptr);
  const std::vector<int32_t> prompt = Prompt();
  std::vector<int32_t> generated = RunGreedy(*sequence, prompt, kCapacity);
  ASSERT_EQ(sequence->cache().next_position(), static_cast<int32_t>(kCapacity));
  absl::StatusOr<std::unique_ptr<reference::ReferenceLlama>> reference =
      LoadReferenceForArtifact(gguf_, artifact);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_TRUE(MatchesReferenceGreedy(**reference, prompt, generated));
}

// Chunks of 4 (shorter than the window) and of 16, with and without the
// ring: the same logits at every step (up to summation order).
TEST_P(WindowRingTest, RingAndFullCacheGiveTheSameLogits) {
  std::unique_ptr<runtime::Model> ring = Compile({4, 16}, true);
  std::unique_ptr<runtime::Model> full = Compile({16}, false);
  ASSERT_NE(ring, nullptr);
  ASSERT_NE(full, nullptr);
  std::unique_ptr<runtime::Sequence> a = NewSequence(*ring);
  std::unique_ptr<runtime::Sequence> b = NewSequence(*full);
  const std::vector<int32_t> prompt = Prompt();
  // 40 = 16 + 16 + 4 + 4 in the ring's chunks, 16 + 16 + 8 x 1 in the other's.
  const absl::StatusOr<absl::Span<const float>> la = a->Forward(prompt);
  const absl::StatusOr<absl::Span<const float>> lb = b->Forward(prompt);
  ASSERT_TRUE(la.ok() && lb.ok()) << la.status() << lb.status();
  ASSERT_LT(MaxDifference(*la, *lb), 1e-4);
  EXPECT_TRUE(ContinueAlike(*a, *b, Argmax(*lb), 30, 1e-4));
}

// A session saved after the ring wrapped, written to a file, read back and
// restored into another session continues exactly; a prefix can be saved
// while the ring still holds its last window, not after.
TEST_P(WindowRingTest, SavedStateContinuesAcrossTheWrap) {
  std::unique_ptr<runtime::Model> model = Compile({16}, true);
  ASSERT_NE(model, nullptr);
  std::unique_ptr<runtime::Sequence> original = NewSequence(*model);
  const std::vector<int32_t> generated = RunGreedy(*original, Prompt(), kPromptLen + 10);
  absl::StatusOr<runtime::CacheSnapshot> state = original->SaveState();
  ASSERT_TRUE(state.ok()) << state.status();
  const std::string path = lnpu::testing::TestTempPath("state.session");
  ASSERT_TRUE(runtime::WriteCacheSnapshotFile(*state, path).ok());
  absl::StatusOr<runtime::CacheSnapshot> read = runtime::ReadCacheSnapshotFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(read.ok()) << read.status();
  std::unique_ptr<runtime::Sequence> restored = NewSequence(*model);
  ASSERT_TRUE(restored->Forward(Prompt()).ok());  // overwritten by the restore
  ASSERT_TRUE(restored->RestoreState(*read).ok());

  EXPECT_TRUE(ContinueAlike(*original, *restored, generated.back(), 30, 0.0));

  const int32_t next = original->cache().next_position();
  const uint32_t droppable = kRingSlots - kWindow + 1;
  EXPECT_TRUE(original->SaveState(static_cast<uint32_t>(next) - droppable).ok());
  const absl::StatusOr<runtime::CacheSnapshot> too_old =
      original->SaveState(static_cast<uint32_t>(next) - droppable - 1);
  EXPECT_EQ(too_old.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(too_old.status().message(), HasSubstr("sliding-window"));
}

// Speculative decoding: a verify run of 4 rows cut back to its first row
// continues exactly as if only that row had run; cutting back further than
// the ring allows is refused and changes nothing.
TEST_P(WindowRingTest, TruncateWithinTheRingContinuesExactly) {
  std::unique_ptr<runtime::Model> model = Compile({16}, true);
  ASSERT_NE(model, nullptr);
  std::unique_ptr<runtime::Sequence> speculative = NewSequence(*model);
  std::unique_ptr<runtime::Sequence> plain = NewSequence(*model);
  const std::vector<int32_t> generated = RunGreedy(*speculative, Prompt(), kPromptLen + 12);
  RunGreedy(*plain, Prompt(), kPromptLen + 12);
  const int32_t next = speculative->cache().next_position();
  const std::vector<int32_t> rows = {generated.back(), 11, 12, 13};
  ASSERT_TRUE(speculative->ForwardAllRows(rows).ok());
  // Dropping the 4 verify rows and one more needs 12 slots.
  const absl::Status too_far = speculative->Truncate(static_cast<uint32_t>(next) - 1);
  EXPECT_EQ(too_far.code(), absl::StatusCode::kFailedPrecondition) << too_far;
  EXPECT_EQ(speculative->cache().next_position(), next + 4);
  ASSERT_TRUE(speculative->Truncate(static_cast<uint32_t>(next) + 1).ok());
  ASSERT_TRUE(plain->Forward(absl::MakeConstSpan(&rows[0], 1)).ok());

  EXPECT_TRUE(ContinueAlike(*speculative, *plain, 21, 20, 1e-5));
}

// A prefix copied out of a wrapped session continues as a session that ran
// only the prefix; a prefix the ring no longer holds is refused.
TEST_P(WindowRingTest, CopiedPrefixContinuesAsTheShorterSession) {
  std::unique_ptr<runtime::Model> model = Compile({16}, true);
  ASSERT_NE(model, nullptr);
  std::unique_ptr<runtime::Sequence> source = NewSequence(*model);
  std::unique_ptr<runtime::Sequence> copy = NewSequence(*model);
  std::unique_ptr<runtime::Sequence> shorter = NewSequence(*model);
  RunGreedy(*source, Prompt(), kPromptLen + 6);
  const std::vector<int32_t> generated = RunGreedy(*shorter, Prompt(), kPromptLen + 3);
  const uint32_t prefix = kPromptLen + 3;
  const absl::Status too_old = copy->CopyPrefixFrom(*source, prefix - 2);
  EXPECT_EQ(too_old.code(), absl::StatusCode::kFailedPrecondition) << too_old;
  ASSERT_TRUE(copy->CopyPrefixFrom(*source, prefix).ok());
  EXPECT_TRUE(ContinueAlike(*copy, *shorter, generated.back(), 20, 0.0));
}

// Two sessions decoding in one batched step match their own decode steps.
TEST_P(WindowRingTest, BatchedDecodingMatchesSingleSteps) {
  std::unique_ptr<runtime::Model> model = Compile({16}, true);
  ASSERT_NE(model, nullptr);
  std::unique_ptr<runtime::Sequence> lane0 = NewSequence(*model);
  std::unique_ptr<runtime::Sequence> lane1 = NewSequence(*model);
  std::unique_ptr<runtime::Sequence> single = NewSequence(*model);
  const std::vector<int32_t> first = RunGreedy(*lane0, Prompt(), kPromptLen + 5);
  const std::vector<int32_t> second = RunGreedy(*lane1, SeededPrompt(20, 320, 9), 20);
  RunGreedy(*single, Prompt(), kPromptLen + 5);
  runtime::Sequence* lanes[] = {lane0.get(), lane1.get()};
  absl::StatusOr<std::unique_ptr<runtime::DecodeBatch>> batch = model->CreateDecodeBatch(lanes);
  ASSERT_TRUE(batch.ok()) << batch.status();
  std::vector<int32_t> tokens = {first.back(), second.back()};
  for (int step = 0; step < 20; ++step) {
    ASSERT_TRUE((*batch)->Step(tokens).ok());
    absl::StatusOr<absl::Span<const float>> alone =
        single->Forward(absl::MakeConstSpan(&tokens[0], 1));
    ASSERT_TRUE(alone.ok());
    ASSERT_LT(MaxDifference((*batch)->logits(0), *alone), 1e-5) << "step " << step;
    tokens = {Argmax(*alone), Argmax((*batch)->logits(1))};
  }
}

// Under the ring policy (4 sink slots) the cache wraps too: the local
// layers see their window in the ring either way, and a policy whose ring
// is shorter than the window is refused when the prefill chunks allow it.
TEST_P(WindowRingTest, RingPolicyMatchesTheFullCache) {
  std::unique_ptr<runtime::Model> ring = Compile({4}, true);
  std::unique_ptr<runtime::Model> full = Compile({4}, false);
  ASSERT_NE(ring, nullptr);
  ASSERT_NE(full, nullptr);
  std::unique_ptr<runtime::Sequence> a = NewSequence(*ring);
  std::unique_ptr<runtime::Sequence> b = NewSequence(*full);
  const runtime::CacheFullPolicy policy = runtime::CacheFullPolicy::Ring(4);
  ASSERT_TRUE(a->SetCacheFullPolicy(policy).ok());
  ASSERT_TRUE(b->SetCacheFullPolicy(policy).ok());
  const absl::Status short_ring =
      a->SetCacheFullPolicy(runtime::CacheFullPolicy::Ring(kCapacity - 5));
  EXPECT_EQ(short_ring.code(), absl::StatusCode::kInvalidArgument) << short_ring;
  EXPECT_THAT(short_ring.message(), HasSubstr("sliding window"));

  const absl::StatusOr<absl::Span<const float>> la = a->Forward(Prompt());
  const absl::StatusOr<absl::Span<const float>> lb = b->Forward(Prompt());
  ASSERT_TRUE(la.ok() && lb.ok()) << la.status() << lb.status();
  ASSERT_LT(MaxDifference(*la, *lb), 1e-4);
  EXPECT_TRUE(ContinueAlike(*a, *b, Argmax(*lb), kCapacity, 1e-4));
  EXPECT_TRUE(a->cache().wrapped());
}

// The KV bytes per session of docs/models.md: the Gemma presets'
// attention shapes (layers, KV heads, head size, window) with tiny
// embedding and feed-forward widths, F16 cache of 1152 slots, no verify
// graph (ring = window).
TEST(WindowRingPresetTest, GemmaPresetsSaveTheDocumentedBytes) {
  for (const auto& [preset, bytes] : {std::pair<std::string, uint64_t>{"gemma-3-1b", 16252928},
                                      {"gemma-3-270m", 11403264},
                                      {"gemma-2-2b", 122683392}}) {
    absl::StatusOr<synthetic::RandomLlamaSpec> spec =
        synthetic::SyntheticPresetSpec(preset, "models", gguf::GgmlType::kF32, /*seed=*/1);
    ASSERT_TRUE(spec.ok()) << spec.status();
    spec->vocab_size = 320;
    spec->dim = 64;
    spec->ffn_dim = 64;
    absl::StatusOr<std::string> gguf = WriteRandomLlamaToTempDir(*spec, preset);
    ASSERT_TRUE(gguf.ok()) << gguf.status();
    compiler::CompileOptions options;
    options.max_prompt_len = 1024;
    options.min_response_len = 128;
    options.prefill_chunks = {16};
    absl::StatusOr<std::string> path = CompileToTempDir(*gguf, preset, options);
    ASSERT_TRUE(path.ok()) << path.status();
    absl::StatusOr<std::unique_ptr<artifact::Artifact>> artifact = artifact::Artifact::Open(*path);
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    const artifact::fb::Model& model = (*artifact)->model();
    EXPECT_EQ(model.buffers()->Get(model.kv_cache()->buffer())->size(), bytes) << preset;
    std::remove(gguf->c_str());
    std::remove(path->c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, WindowRingTest,
    ::testing::Values(RingCase{"gemma2_f32kv", "gemma2", 4, compiler::CompileOptions::KvType::kF32},
                      RingCase{"gemma3_f16kv", "gemma3", 7, compiler::CompileOptions::KvType::kF16},
                      RingCase{"gemma3_q8kv", "gemma3", 7, compiler::CompileOptions::KvType::kQ8}),
    [](const ::testing::TestParamInfo<RingCase>& info) { return info.param.name; });

}  // namespace
}  // namespace lnpu::end_to_end
