// npu-bench: its parts (command line, decode traffic, read bandwidth) and
// the program end to end on a tiny random model, with one repetition and
// short lengths so the whole suite takes a few seconds.
#include <sys/mman.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/tool_test_support.h"
#include "tools/npu-bench/batched_decode.h"
#include "tools/npu-bench/bench_report.h"
#include "tools/npu-bench/command_line.h"
#include "tools/npu-bench/decode_traffic.h"
#include "tools/npu-bench/cpu_contention.h"
#include "tools/npu-bench/cpu_steal.h"
#include "tools/npu-bench/model_benchmark.h"
#include "tools/npu-bench/peak_rss.h"
#include "tools/npu-bench/read_bandwidth.h"
#include "tools/npu-bench/step_profile.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "nlohmann/json.hpp"
#include "runtime/model.h"

namespace lnpu::bench {
namespace {

using ::testing::HasSubstr;

using tools::testing::TestDirectory;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("npu_bench_test"));

// The tiny model: 2 layers, dim 64, 8 heads of 8 (2 KV heads), untied;
// F16 weights, an F32 KV cache, a 48 + 16 slot cache.
constexpr uint32_t kCapacity = 64;

std::string CompileTinyModel() {
  static const std::string* const path = [] {
    synthetic::RandomLlamaSpec spec;  // the defaults are tiny
    const std::string gguf_path = TestDirectory::Path("tiny.gguf");
    const std::string artifact_path = TestDirectory::Path("tiny.lnpu");
    EXPECT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
    compiler::CompileOptions options;
    options.max_prompt_len = 48;
    options.min_response_len = kCapacity - 48;
    options.prefill_chunks = {4, 16};
    options.weights = compiler::CompileOptions::WeightType::kF16;
    options.kv_dtype = compiler::CompileOptions::KvType::kF32;
    const absl::Status status = compiler::CompileGguf(gguf_path, artifact_path, options);
    EXPECT_TRUE(status.ok()) << status;
    return new std::string(artifact_path);
  }();
  return *path;
}

// The tiny model with batched decode graphs of 2 and 4 lanes.
std::string CompileTinyBatchedModel() {
  static const std::string* const path = [] {
    const std::string gguf_path = TestDirectory::Path("tiny_batched.gguf");
    const std::string artifact_path = TestDirectory::Path("tiny_batched.lnpu");
    EXPECT_TRUE(synthetic::WriteRandomLlamaGguf(synthetic::RandomLlamaSpec(), gguf_path).ok());
    compiler::CompileOptions options;
    options.max_prompt_len = 48;
    options.min_response_len = kCapacity - 48;
    options.prefill_chunks = {4, 16};
    options.decode_batches = {2, 4};
    options.kv_dtype = compiler::CompileOptions::KvType::kF32;
    const absl::Status status = compiler::CompileGguf(gguf_path, artifact_path, options);
    EXPECT_TRUE(status.ok()) << status;
    return new std::string(artifact_path);
  }();
  return *path;
}

// `artifact` loaded on a fresh software NPU; nullptr (and a test failure)
// when it does not load.
std::unique_ptr<runtime::Model> LoadOnSoftNpu(const std::string& artifact) {
  absl::StatusOr<std::unique_ptr<Device>> device = Device::Open("soft");
  EXPECT_TRUE(device.ok()) << device.status();
  if (!device.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      runtime::Model::Load(*std::move(device), artifact);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

// A 4-token prefill and time to first token, then one warm-up and one
// timed repetition of 2 decode steps at each of `fills`.
ModelBenchmarkOptions ShortBenchmark(std::vector<uint32_t> fills) {
  ModelBenchmarkOptions options;
  options.prompt_lengths = {4};
  options.ttft_prompt_tokens = 4;
  options.fill_percents = std::move(fills);
  options.decode_steps = 2;
  options.reps = 1;
  options.warmups = 1;
  return options;
}

using tools::testing::ToolRun;

// Runs `command` through the shell, stdout and stderr captured.
ToolRun RunShell(const std::string& command) {
  const std::string out_path = TestDirectory::Path("stdout");
  const std::string err_path = TestDirectory::Path("stderr");
  const std::string full = command + " >'" + out_path + "' 2>'" + err_path + "'";
  const int status = std::system(full.c_str());
  ToolRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = tools::testing::ReadFileOrEmpty(out_path);
  run.err = tools::testing::ReadFileOrEmpty(err_path);
  return run;
}

// npu-bench with `args`.
ToolRun RunBench(const std::vector<std::string>& args) {
  return tools::testing::RunTool("LNPU_NPU_BENCH", args);
}

// Short settings that fit the tiny models' cache.
std::vector<std::string> QuickArgs(const std::string& model = CompileTinyModel()) {
  return {"-m", model, "--device", "soft", "--reps", "1", "--warmups", "0",
          "--prompt-lengths", "4,20", "--fills", "0,50", "--decode-steps", "2",
          "--ttft-prompt", "8", "--bandwidth-mib", "8", "--bandwidth-runs", "1"};
}

absl::StatusOr<std::optional<CommandLine>> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "npu-bench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(NpuBenchCommandLine, ParsesEveryOption) {
  absl::StatusOr<std::optional<CommandLine>> line =
      Parse({"--synthetic", "qwen2.5-0.5b", "--weights", "q4", "--reps", "3", "--warmups", "2",
             "--prompt-lengths", "16,512", "--fills", "0,90", "--decode-steps", "7",
             "--ttft-prompt", "32", "--bandwidth-mib", "64", "--bandwidth-runs", "2", "--seed",
             "9", "--device", "soft", "--placement", "import", "--json"});
  ASSERT_TRUE(line.ok()) << line.status();
  ASSERT_TRUE(line->has_value());
  const CommandLine& l = **line;
  EXPECT_EQ(l.preset, "qwen2.5-0.5b");
  EXPECT_EQ(l.weights, "q4");
  EXPECT_EQ(l.benchmark.reps, 3);
  EXPECT_EQ(l.benchmark.warmups, 2);
  EXPECT_EQ(l.benchmark.prompt_lengths, (std::vector<uint32_t>{16, 512}));
  EXPECT_EQ(l.benchmark.fill_percents, (std::vector<uint32_t>{0, 90}));
  EXPECT_EQ(l.benchmark.decode_steps, 7u);
  EXPECT_EQ(l.benchmark.ttft_prompt_tokens, 32u);
  EXPECT_EQ(l.bandwidth_bytes, uint64_t{64} << 20);
  EXPECT_EQ(l.bandwidth_runs, 2);
  EXPECT_EQ(l.benchmark.seed, 9u);
  EXPECT_EQ(l.device, "soft");
  EXPECT_EQ(l.placement, "import");
  EXPECT_TRUE(l.json);
}

TEST(NpuBenchCommandLine, PlacementDefaultsToAutoAndCopyWeightsMeansCopy) {
  absl::StatusOr<std::optional<CommandLine>> line = Parse({"-m", "a.lnpu"});
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
  EXPECT_EQ((*line)->placement, "auto");
  line = Parse({"-m", "a.lnpu", "--copy-weights"});
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
  EXPECT_EQ((*line)->placement, "copy");
}

TEST(NpuBenchCommandLine, WeightPanelsDefaultToOnAndTakeP16AndOff) {
  absl::StatusOr<std::optional<CommandLine>> line = Parse({"-m", "a.lnpu"});
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
  EXPECT_EQ((*line)->weight_panels, "on");
  for (const char* value : {"p16", "off", "on"}) {
    line = Parse({"-m", "a.lnpu", "--weight-panels", value});
    ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
    EXPECT_EQ((*line)->weight_panels, value);
  }
}

TEST(NpuBenchCommandLine, Q6kDefaultsToKeepAndTakesConvert) {
  absl::StatusOr<std::optional<CommandLine>> line = Parse({"-m", "a.lnpu"});
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
  EXPECT_EQ((*line)->q6k, "keep");
  line = Parse({"-m", "a.lnpu", "--q6k", "convert"});
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
  EXPECT_EQ((*line)->q6k, "convert");
}

TEST(NpuBenchCommandLine, RejectsBadArguments) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "exactly one model"},
      {{"-m", "a.lnpu", "--synthetic", "qwen2.5-0.5b"}, "exactly one model"},
      {{"-m", "a.lnpu", "--weights", "q8"}, "--synthetic only"},
      {{"--synthetic", "x", "--weights", "q5"}, "q8, q4 or f16"},
      {{"-m", "a.lnpu", "--fills", "0,100"}, "--fills expects an integer in [0, 99]"},
      {{"-m", "a.lnpu", "--prompt-lengths", "16,,32"}, "--prompt-lengths"},
      {{"-m", "a.lnpu", "--reps", "0"}, "--reps"},
      {{"-m", "a.lnpu", "--placement", "mmap"}, "--placement expects auto, copy or import"},
      {{"-m", "a.lnpu", "--weight-panels", "p16s"}, "--weight-panels expects on, p16 or off"},
      {{"-m", "a.lnpu", "--q6k", "q8"}, "--q6k expects keep or convert"},
      {{"-m", "a.lnpu", "--reps"}, "--reps needs a value"},
      {{"-m", "a.lnpu", "--frobnicate", "1"}, "unknown option --frobnicate"},
      {{"a.lnpu"}, "unexpected argument"},
      {{"-m", "a.lnpu", "--contention", "65"}, "--contention expects an integer in [0, 64]"},
      {{"-m", "a.lnpu", "--profile", "--json"}, "drop --json"},
      {{"-m", "a.lnpu", "--profile", "--contention", "1"}, "which --profile does not run"},
      {{"-m", "a.lnpu", "--batch-lanes", "1,,4"}, "--batch-lanes expects an integer in [1, 64]"},
      {{"-m", "a.lnpu", "--batch-lanes", "0"}, "--batch-lanes expects an integer in [1, 64]"},
      {{"-m", "a.lnpu", "--batch-lanes", "65"}, "--batch-lanes expects an integer in [1, 64]"},
      {{"-m", "a.lnpu", "--batch-lanes", "two"}, "got 'two'"},
  };
  for (const auto& [args, message] : cases) {
    absl::StatusOr<std::optional<CommandLine>> line = Parse(args);
    ASSERT_FALSE(line.ok()) << ::testing::PrintToString(args);
    EXPECT_EQ(line.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(line.status().message()), HasSubstr(message));
  }
}

TEST(NpuBenchDecodeTraffic, CountsStreamedWeightsAndKvSlots) {
  absl::StatusOr<DecodeTraffic> traffic = ReadDecodeTraffic(CompileTinyModel());
  ASSERT_TRUE(traffic.ok()) << traffic.status();
  // Untied: the 512 x 64 F16 embedding is only gathered.
  EXPECT_EQ(traffic->gathered_embedding_bytes, 512u * 64 * 2);
  // Per layer q, k, v, o (64x64, 16x64, 16x64, 64x64), gate, up, down
  // (3 x 160x64) in F16, two F32 norms of 64; the output norm; output.weight.
  const uint64_t per_layer = (64 * 64 * 2 + 16 * 64 * 2 + 3 * 160 * 64) * 2 + 2 * 64 * 4;
  const uint64_t expected = 2 * per_layer + 64 * 4 + 512 * 64 * 2;
  // Weights are 64-byte aligned in the data section, which is not traffic.
  EXPECT_EQ(traffic->weight_bytes, expected);
  // K and V of 2 layers x 2 KV heads x 8 dims, F32.
  EXPECT_EQ(traffic->kv_bytes_per_slot, 2u * 2 * 2 * 8 * 4);
  EXPECT_EQ(traffic->ring_slots, 0u);
  EXPECT_EQ(traffic->BytesPerToken(10), expected + 10 * traffic->kv_bytes_per_slot);
}

// A gemma3 model's sliding-window layers (five of every six) read at most
// their ring's slots; the global layer reads every visible slot.
TEST(NpuBenchDecodeTraffic, SlidingWindowLayersReadAtMostTheirRing) {
  synthetic::RandomLlamaSpec spec;
  spec.architecture = "gemma3";
  spec.n_layers = 6;
  spec.context_length = kCapacity;
  spec.sliding_window = 8;
  const std::string gguf_path = TestDirectory::Path("gemma3.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  compiler::CompileOptions options;
  options.max_prompt_len = 48;
  options.min_response_len = kCapacity - 48;
  options.prefill_chunks = {4};
  options.kv_dtype = compiler::CompileOptions::KvType::kF32;
  auto traffic_of = [&](bool window_ring) -> absl::StatusOr<DecodeTraffic> {
    options.window_ring = window_ring;
    const std::string artifact_path =
        TestDirectory::Path(window_ring ? "gemma3_ring.lnpu" : "gemma3_full.lnpu");
    LNPU_RETURN_IF_ERROR(compiler::CompileGguf(gguf_path, artifact_path, options));
    return ReadDecodeTraffic(artifact_path);
  };
  absl::StatusOr<DecodeTraffic> ring = traffic_of(true);
  ASSERT_TRUE(ring.ok()) << ring.status();
  absl::StatusOr<DecodeTraffic> full = traffic_of(false);
  ASSERT_TRUE(full.ok()) << full.status();

  const uint64_t layer_slot_bytes = full->kv_bytes_per_slot / 6;
  EXPECT_EQ(full->ring_slots, 0u);
  EXPECT_EQ(ring->kv_bytes_per_slot, layer_slot_bytes);
  EXPECT_EQ(ring->ring_kv_bytes_per_slot, 5 * layer_slot_bytes);
  EXPECT_GE(ring->ring_slots, 8u);
  EXPECT_LT(ring->ring_slots, kCapacity);
  EXPECT_EQ(ring->weight_bytes, full->weight_bytes);
  // Up to the ring's size both read the same; past it only the global
  // layer's reads grow.
  EXPECT_DOUBLE_EQ(ring->KvBytes(4), full->KvBytes(4));
  const double past = static_cast<double>(ring->ring_slots) + 100;
  EXPECT_DOUBLE_EQ(ring->KvBytes(past),
                   static_cast<double>(layer_slot_bytes) * past +
                       5.0 * layer_slot_bytes * ring->ring_slots);
  EXPECT_LT(ring->BytesPerToken(past), full->BytesPerToken(past));
}

TEST(NpuBenchDecodeTraffic, MissingArtifactIsAnError) {
  EXPECT_FALSE(ReadDecodeTraffic("/nonexistent/model.lnpu").ok());
}

TEST(NpuBenchReadBandwidth, MeasuresAPositiveRate) {
  ReadBandwidthOptions options;
  options.buffer_bytes = 4u << 20;
  options.threads = 2;
  options.runs = 2;
  absl::StatusOr<ReadBandwidth> bandwidth = MeasureReadBandwidth(options);
  ASSERT_TRUE(bandwidth.ok()) << bandwidth.status();
  // A plausibility floor, not a speed test: the figure is a finite rate that
  // counts the bytes read (a unit slip of 10^3 or more would fall below it),
  // measured here under sanitizers and on shared CI machines.
  EXPECT_TRUE(std::isfinite(bandwidth->bytes_per_second));
  EXPECT_GT(bandwidth->bytes_per_second, 1e6);
  EXPECT_EQ(bandwidth->buffer_bytes, options.buffer_bytes);
  EXPECT_EQ(bandwidth->threads, 2);
  EXPECT_THAT(bandwidth->pattern.streams, testing::AnyOf(1, 2, 4, 8));
  EXPECT_GE(DefaultBufferBytes(), uint64_t{1} << 30);
}

// Every pattern's loop reads each word exactly once: a word skipped (a
// stream's last pages, a partial chunk) or read twice (overlapping streams)
// changes the XOR. Sizes with page counts that no stream count divides.
TEST(NpuBenchReadBandwidth, EveryPatternReadsEveryWordOnce) {
  std::mt19937_64 random(7);
  for (const uint64_t pages : {1, 3, 7, 9, 37}) {
    const uint64_t bytes = pages * 4096;
    std::vector<uint64_t> storage(bytes / sizeof(uint64_t) + 512);
    // A 4096-aligned start inside the storage.
    auto* begin = reinterpret_cast<uint8_t*>(
        (reinterpret_cast<uintptr_t>(storage.data()) + 4095) / 4096 * 4096);
    auto* words = reinterpret_cast<uint64_t*>(begin);
    uint64_t expected = 0;
    for (uint64_t i = 0; i < bytes / sizeof(uint64_t); ++i) {
      words[i] = random();
      expected ^= words[i];
    }
    for (const ReadPattern pattern : kReadPatterns) {
      EXPECT_EQ(XorWords(begin, bytes, pattern), expected)
          << pages << " pages, " << pattern.streams << " streams, prefetch " << pattern.prefetch;
    }
  }
}

TEST(NpuBenchReadBandwidth, RejectsBadOptions) {
  for (const auto& [bytes, threads, runs] :
       std::vector<std::tuple<uint64_t, int, int>>{{4096, 1, 1},
                                                   {(1u << 20) + 1, 1, 1},
                                                   {1u << 20, 0, 1},
                                                   {1u << 20, 1, 0}}) {
    ReadBandwidthOptions options;
    options.buffer_bytes = bytes;
    options.threads = threads;
    options.runs = runs;
    EXPECT_EQ(MeasureReadBandwidth(options).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(NpuBenchPeakRss, ParsesTheHighWaterMarkOfAProcStatus) {
  absl::StatusOr<double> mib =
      ParsePeakRssMiB("Name:\tnpu-bench\nVmPeak:\t  999999 kB\nVmHWM:\t   20480 kB\n"
                      "VmRSS:\t   10240 kB\n");
  ASSERT_TRUE(mib.ok()) << mib.status();
  EXPECT_DOUBLE_EQ(*mib, 20.0);
  for (const char* bad : {"VmRSS:\t10240 kB\n", "VmHWM:\t20480\n", "VmHWM:\tmany kB\n",
                          "VmHWM:\t-5 kB\n", ""}) {
    EXPECT_EQ(ParsePeakRssMiB(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// Memory touched and freed raises the peak; a reset lowers it to what is
// resident now.
TEST(NpuBenchPeakRss, ResetForgetsMemoryFreedSince) {
  constexpr size_t kBytes = size_t{256} << 20;
  ASSERT_TRUE(ResetPeakRss().ok());
  absl::StatusOr<double> before = ReadPeakRssMiB();
  ASSERT_TRUE(before.ok()) << before.status();
  void* buffer = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(buffer, MAP_FAILED);
  std::memset(buffer, 1, kBytes);
  ASSERT_EQ(munmap(buffer, kBytes), 0);
  absl::StatusOr<double> raised = ReadPeakRssMiB();
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_GE(*raised, *before + 250);
  ASSERT_TRUE(ResetPeakRss().ok());
  absl::StatusOr<double> after = ReadPeakRssMiB();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_LT(*after, *raised - 200);
}

// Each decode fill is bracketed by two probe calls, before its warm-ups
// and after its last repetition, and keeps their figures in order; the
// report holds each fill against the mean of its two.
TEST(NpuBenchBracket, EachFillIsProbedBeforeAndAfter) {
  const std::unique_ptr<runtime::Model> model = LoadOnSoftNpu(CompileTinyModel());
  ASSERT_NE(model, nullptr);
  ModelBenchmarkOptions options = ShortBenchmark({0, 50});
  int probes = 0;
  options.bandwidth_probe = [&probes]() -> absl::StatusOr<double> { return ++probes * 1e9; };
  absl::StatusOr<ModelBenchmarkResult> result = RunModelBenchmark(*model, options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->decode.size(), 2u);
  EXPECT_EQ(probes, 4);
  EXPECT_EQ(result->decode[0].probe_before_bytes_per_second, 1e9);
  EXPECT_EQ(result->decode[0].probe_after_bytes_per_second, 2e9);
  EXPECT_EQ(result->decode[1].probe_before_bytes_per_second, 3e9);
  EXPECT_EQ(result->decode[1].probe_after_bytes_per_second, 4e9);

  BenchReport report;
  report.results = *result;
  report.bandwidth.bytes_per_second = 10e9;
  report.traffic.weight_bytes = 1000;
  report.bracket_probes.resize(4);
  EXPECT_EQ(report.DecodeBandwidth(result->decode[0]), 1.5e9);
  EXPECT_EQ(report.DecodeBandwidth(result->decode[1]), 3.5e9);
  EXPECT_NEAR(report.DecodeLimit(result->decode[1]),
              3.5e9 / report.DecodeBytesPerToken(result->decode[1]), 1e-6);
  DecodeResult unbracketed = result->decode[0];
  unbracketed.probe_before_bytes_per_second = unbracketed.probe_after_bytes_per_second = 0;
  EXPECT_EQ(report.DecodeBandwidth(unbracketed), 10e9);
  EXPECT_FALSE(report.ProbesSteady(unbracketed));
}

// A fill counts as measured at a steady bandwidth when its two probes are
// within 10% of their mean.
TEST(NpuBenchBracket, ProbesSteadyWithinTenPercentOfTheirMean) {
  BenchReport report;
  report.bracket_probes.resize(2);
  for (const auto& [before, after, steady] :
       std::vector<std::tuple<double, double, bool>>{{50e9, 50e9, true},
                                                     {50e9, 54.9e9, true},
                                                     {54.9e9, 50e9, true},
                                                     {50e9, 56e9, false},
                                                     {51.4e9, 71.4e9, false},
                                                     {0, 50e9, false}}) {
    DecodeResult decode;
    decode.probe_before_bytes_per_second = before;
    decode.probe_after_bytes_per_second = after;
    EXPECT_EQ(report.ProbesSteady(decode), steady) << before << " " << after;
  }
}

TEST(NpuBenchBracket, AProbeErrorEndsTheBenchmark) {
  const std::unique_ptr<runtime::Model> model = LoadOnSoftNpu(CompileTinyModel());
  ASSERT_NE(model, nullptr);
  ModelBenchmarkOptions options = ShortBenchmark({0});
  options.bandwidth_probe = []() -> absl::StatusOr<double> {
    return absl::ResourceExhaustedError("no memory for the probe");
  };
  EXPECT_EQ(RunModelBenchmark(*model, options).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(NpuBenchProgram, TextHasEverySection) {
  const ToolRun run = RunBench(QuickArgs());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* section :
       {"npu-bench: ", "device: ", "model: ", "weights: ", "\nprefill\n", "time to first token",
        "placement: ", "loaded in ", "\ndecode\n", "of limit", "decode speed 50% vs 0% fill", "peak RSS: ",
        "read bandwidth: ", "cpu steal: ", "probes GB/s",
        "limit: the mean of the read bandwidth probed right before and right after each fill",
        "* = the probes differ by more than 10%",
        "the fastest of 4 probes around the decode fills"}) {
    EXPECT_THAT(run.out, HasSubstr(section));
  }
  // One row per prefill length and per fill.
  EXPECT_THAT(run.out, ::testing::ContainsRegex("\n +4 +[0-9]+ +[0-9.]+ +[0-9.]+"));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("\n +20 +[0-9]+ +[0-9.]+ +[0-9.]+"));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("\n +0% +[0-9]+ "));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("\n +50% +[0-9]+ "));
}

TEST(NpuBenchProgram, ReportsThePlacementUsed) {
  for (const auto& [placement, expected] :
       {std::pair{"copy", "placement: copied into device memory (--placement copy)"},
        std::pair{"import",
                  "placement: the artifact's file mapping imported (not copied) "
                  "(--placement import)"}}) {
    std::vector<std::string> args = QuickArgs();
    args.insert(args.end(), {"--placement", placement});
    const ToolRun run = RunBench(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr(expected));
  }
}

TEST(NpuBenchProgram, JsonParsesAndHasEveryFigure) {
  std::vector<std::string> args = QuickArgs();
  args.push_back("--json");
  const ToolRun run = RunBench(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string json_path = TestDirectory::Path("bench.json");
  std::ofstream(json_path) << run.out;
  const ToolRun check = RunShell(
      "python3 -c '"
      "import json, sys\n"
      "d = json.load(sys.stdin)\n"
      "assert d[\"compute_units\"] >= 1\n"
      "assert d[\"placement\"][\"requested\"] == \"auto\"\n"
      "assert d[\"placement\"][\"weights_imported\"] in (True, False)\n"
      "assert d[\"placement\"][\"load_ms\"] > 0\n"
      "assert d[\"shape\"][\"kv_capacity\"] == 64\n"
      "assert d[\"decode_traffic\"][\"weight_bytes\"] > 0\n"
      "assert [p[\"tokens\"] for p in d[\"prefill\"]] == [4, 20]\n"
      "assert all(p[\"tokens_per_second\"] > 0 and p[\"graph_runs\"] >= 1 for p in d[\"prefill\"])\n"
      "assert d[\"time_to_first_token\"][\"prompt_tokens\"] == 8\n"
      "assert d[\"time_to_first_token\"][\"median_ms\"] > 0\n"
      "assert [x[\"fill_percent\"] for x in d[\"decode\"]] == [0, 50]\n"
      "assert d[\"decode\"][1][\"start_slots\"] == 32\n"
      "for x in d[\"decode\"]:\n"
      "  assert x[\"tokens_per_second\"] > 0 and x[\"limit_tokens_per_second\"] > 0\n"
      "  assert x[\"fraction_of_limit\"] > 0 and x[\"bytes_per_token\"] > 0\n"
      "  assert set(x[\"per_token\"]) == {\"host_us\", \"submit_us\", \"wait_us\"}\n"
      "assert \"batched_decode\" not in d\n"
      "assert d[\"decode_fill_ratio\"] > 0\n"
      "assert d[\"peak_rss_mib\"] > 0\n"
      "assert d[\"read_bandwidth\"][\"bytes_per_second\"] > 0\n"
      "assert d[\"read_bandwidth\"][\"buffer_bytes\"] == 8 << 20\n"
      "assert d[\"read_bandwidth\"][\"streams_per_thread\"] in (1, 2, 4, 8)\n"
      "assert d[\"read_bandwidth\"][\"prefetch\"] in (True, False)\n"
      "probes = d[\"read_bandwidth\"][\"bracket_probes\"]\n"
      "assert len(probes) == 4 and min(probes) > 0\n"
      "assert d[\"read_bandwidth\"][\"bytes_per_second\"] == max(probes)\n"
      "assert d[\"read_bandwidth\"][\"bracket_unavailable\"] is None\n"
      "for i, x in enumerate(d[\"decode\"]):\n"
      "  assert [x[\"probe_before_bytes_per_second\"], x[\"probe_after_bytes_per_second\"]] =="
      " probes[2 * i:2 * i + 2]\n"
      "  limit = (probes[2 * i] + probes[2 * i + 1]) / 2 / x[\"bytes_per_token\"]\n"
      "  assert abs(x[\"limit_tokens_per_second\"] - limit) <= 1e-4 * limit  # 6 digits each\n"
      "  steady = abs(probes[2 * i] - probes[2 * i + 1]) <= 0.05 * (probes[2 * i] + probes[2 * i + 1])\n"
      "  assert x[\"probes_steady\"] is steady\n"
      "assert 0 <= d[\"cpu_stolen_fraction\"] <= 1\n"
      "' <'" + json_path + "'");
  EXPECT_EQ(check.exit_code, 0) << check.err << "\n" << run.out;
}

TEST(NpuBenchCommandLine, ParsesBatchLanes) {
  absl::StatusOr<std::optional<CommandLine>> line = Parse({"-m", "a.lnpu"});
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
  EXPECT_TRUE((*line)->batch_lanes.empty());
  line = Parse({"-m", "a.lnpu", "--batch-lanes", "1,2,4,8"});
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status();
  EXPECT_EQ((*line)->batch_lanes, (std::vector<uint32_t>{1, 2, 4, 8}));
}

// Whether `lanes` (4-token prompts, 1 + 5 repetitions of 16 steps) may
// run on a model of `info`.
absl::Status CheckLanes(const runtime::ModelInfo& info, std::vector<uint32_t> lanes) {
  BatchedDecodeOptions options;
  options.lanes = std::move(lanes);
  return CheckBatchedDecode(info, options);
}

TEST(NpuBenchBatchedDecode, LaneCountsNeedACompiledGraph) {
  runtime::ModelInfo info;
  info.kv_capacity = 128;  // 4 + 6 x 16 slots fit
  EXPECT_TRUE(CheckLanes(info, {}).ok());
  EXPECT_TRUE(CheckLanes(info, {1}).ok());  // a sequence's own decode graph
  absl::Status none = CheckLanes(info, {1, 2});
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(none.message()), HasSubstr("no batched decode graphs"));
  EXPECT_THAT(std::string(none.message()), HasSubstr("npu-compile --decode-batch"));
  info.decode_batches = {2, 4};
  EXPECT_TRUE(CheckLanes(info, {4, 1, 2}).ok());
  absl::Status missing = CheckLanes(info, {1, 2, 3});
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.message()),
              HasSubstr("--batch-lanes 3: the model has batched decode graphs of 2, 4 lanes"));
  EXPECT_THAT(std::string(missing.message()), HasSubstr("npu-compile --decode-batch 1,2,3,4"));
}

TEST(NpuBenchBatchedDecode, RefusesStepsThatDoNotFitTheCache) {
  runtime::ModelInfo info;
  info.kv_capacity = kCapacity;
  info.decode_batches = {2};
  BatchedDecodeOptions options;
  options.steps = 20;
  options.reps = 3;  // 4 + (1 + 3) x 20 slots > 64
  EXPECT_TRUE(CheckBatchedDecode(info, options).ok());  // no lanes: nothing runs
  options.lanes = {2};
  const absl::Status status = CheckBatchedDecode(info, options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("needs 84 KV slots"));
  options.steps = 15;  // 4 + 4 x 15 = 64 fits
  EXPECT_TRUE(CheckBatchedDecode(info, options).ok());
}

TEST(NpuBenchBatchedDecode, EfficiencyIsTokensPerCpuSecondOverOneLane) {
  BatchedDecodeResult one{.lanes = 1, .steps = 4, .median_ms_per_step = 2,
                          .median_cpu_ms_per_step = 3};
  BatchedDecodeResult four{.lanes = 4, .steps = 4, .median_ms_per_step = 4,
                           .median_cpu_ms_per_step = 6};
  EXPECT_DOUBLE_EQ(four.tokens_per_second(), 1000);
  EXPECT_DOUBLE_EQ(four.cpu_ms_per_token(), 1.5);
  EXPECT_DOUBLE_EQ(four.tokens_per_cpu_second(), 1000 / 1.5);
  EXPECT_DOUBLE_EQ(CpuEfficiencyVsOneLane({one, four}, four), 2.0);
  EXPECT_DOUBLE_EQ(CpuEfficiencyVsOneLane({one, four}, one), 1.0);
  EXPECT_EQ(CpuEfficiencyVsOneLane({four}, four), 0);  // no 1-lane figure
}

TEST(NpuBenchProgram, BatchLanesWithoutBatchedGraphsAreRefused) {
  std::vector<std::string> args = QuickArgs();
  args.insert(args.end(), {"--batch-lanes", "1,2"});
  const ToolRun run = RunBench(args);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("--batch-lanes 2: the model has no batched decode graphs"));
  EXPECT_THAT(run.err, HasSubstr("npu-compile --decode-batch"));
  EXPECT_TRUE(run.out.empty());
}

TEST(NpuBenchProgram, UncompiledLaneCountIsRefusedNamingTheCompiledOnes) {
  std::vector<std::string> args = QuickArgs(CompileTinyBatchedModel());
  args.insert(args.end(), {"--batch-lanes", "1,8"});
  const ToolRun run = RunBench(args);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("--batch-lanes 8: the model has batched decode graphs of 2, 4"));
  EXPECT_THAT(run.err, HasSubstr("npu-compile --decode-batch 1,2,4,8"));
}

TEST(NpuBenchProgram, BatchedStepsThatDoNotFitAreRefusedBeforeMeasuring) {
  std::vector<std::string> args = QuickArgs(CompileTinyBatchedModel());
  args.insert(args.end(), {"--batch-lanes", "2", "--decode-steps", "20", "--reps", "4"});
  const ToolRun run = RunBench(args);
  EXPECT_EQ(run.exit_code, 1);
  // 4 + 4 x 20 slots; the decode fills would not fit either, but this check
  // comes first.
  EXPECT_THAT(run.err, HasSubstr("--batch-lanes: each lane needs 84 KV slots"));
  EXPECT_TRUE(run.out.empty());
}

// Finite and positive, as every figure of a measurement must be.
bool Sane(double value) { return std::isfinite(value) && value > 0; }

TEST(NpuBenchProgram, BatchedDecodeSectionInTextAndJson) {
  std::vector<std::string> args = QuickArgs(CompileTinyBatchedModel());
  args.insert(args.end(), {"--batch-lanes", "1,2,4", "--reps", "2", "--decode-steps", "4"});
  const ToolRun text = RunBench(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("\nbatched decode ("));
  EXPECT_THAT(text.out, HasSubstr("CPU ms/token"));
  // lanes, ms/step, tokens/s, CPU ms/step, CPU ms/token, ratio to 1 lane.
  const std::string figures = " +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +";
  EXPECT_THAT(text.out, ::testing::ContainsRegex("\n +1" + figures + "1.00x\n"));
  EXPECT_THAT(text.out, ::testing::ContainsRegex("\n +4" + figures + "[0-9.]+x\n"));
  // Without --batch-lanes the section is absent.
  const ToolRun plain = RunBench(QuickArgs());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.out, ::testing::Not(HasSubstr("batched decode")));

  args.push_back("--json");
  const ToolRun json = RunBench(args);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json report = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << json.out;
  ASSERT_TRUE(report.contains("batched_decode")) << json.out;
  const nlohmann::json& batched = report["batched_decode"];
  ASSERT_EQ(batched.size(), 3u);
  std::vector<int> lanes;
  for (const nlohmann::json& b : batched) {
    SCOPED_TRACE(b.dump());
    lanes.push_back(b["lanes"].get<int>());
    EXPECT_EQ(b["steps"], 4);
    for (const char* field : {"median_ms_per_step", "tokens_per_second", "cpu_ms_per_step",
                              "cpu_ms_per_token", "tokens_per_cpu_second",
                              "cpu_efficiency_vs_1_lane"}) {
      ASSERT_TRUE(b.contains(field) && b[field].is_number()) << field;
      EXPECT_TRUE(Sane(b[field].get<double>())) << field;
    }
    const double lane_count = b["lanes"].get<double>();
    EXPECT_NEAR(b["tokens_per_second"].get<double>(),
                lane_count * 1e3 / b["median_ms_per_step"].get<double>(),
                1e-4 * b["tokens_per_second"].get<double>());
    EXPECT_NEAR(b["cpu_ms_per_token"].get<double>(),
                b["cpu_ms_per_step"].get<double>() / lane_count,
                1e-4 * b["cpu_ms_per_token"].get<double>());
  }
  EXPECT_EQ(lanes, (std::vector<int>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(batched[0]["cpu_efficiency_vs_1_lane"].get<double>(), 1.0);
}

TEST(NpuBenchCommandLine, ParsesProfileTraceAndContention) {
  absl::StatusOr<std::optional<CommandLine>> line =
      Parse({"-m", "a.lnpu", "--profile", "--trace", "t.json"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_TRUE((*line)->profile);
  EXPECT_EQ((*line)->trace_path, "t.json");
  line = Parse({"-m", "a.lnpu", "--contention", "2"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ((*line)->benchmark.contention_processes, 2);
  EXPECT_FALSE((*line)->profile);
}

TEST(NpuBenchContention, BusyProcessesUseCpuUntilStopped) {
  absl::StatusOr<CpuContention> none = CpuContention::Start(0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->Stop(), 0.0);
  absl::StatusOr<CpuContention> two = CpuContention::Start(2);
  ASSERT_TRUE(two.ok()) << two.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double cores = two->Stop();
  EXPECT_GT(cores, 0.05);  // a loaded CI machine still gives them some time
  EXPECT_LE(cores, 2.05);
  EXPECT_EQ(two->Stop(), cores);  // idempotent
}

TEST(NpuBenchCpuSteal, ParsesTheCpuLineOfProcStat) {
  const absl::StatusOr<CpuTimes> times = ParseProcStat(
      "cpu  100 2 30 800 4 0 1 63 10 0\n"
      "cpu0 50 1 15 400 2 0 1 31 5 0\n"
      "intr 12345\n");
  ASSERT_TRUE(times.ok()) << times.status();
  EXPECT_EQ(times->total, 1000u);  // user..steal; guest is inside user
  EXPECT_EQ(times->steal, 63u);
  const CpuTimes later{.total = 1200, .steal = 113};
  EXPECT_DOUBLE_EQ(StolenFraction(*times, later), 0.25);
  EXPECT_EQ(StolenFraction(*times, *times), 0);
  EXPECT_TRUE(ReadCpuTimes().ok());  // this test runs on Linux
}

TEST(NpuBenchCpuSteal, RejectsAProcStatWithoutTheStealField) {
  EXPECT_THAT(ParseProcStat("cpu  1 2 3 4 5 6 7\n").status().message(),
              HasSubstr("7 counters, fewer than the 8 up to steal"));
  EXPECT_THAT(ParseProcStat("cpu  1 2 3 x 5 6 7 8\n").status().message(),
              HasSubstr("'x' where a count belongs"));
  EXPECT_THAT(ParseProcStat("intr 1\n").status().message(), HasSubstr("no 'cpu ' line"));
}

TEST(NpuBenchContention, CpuShareIsWhatTheCompetitorsLeave) {
  EXPECT_DOUBLE_EQ(AvailableCpuShare(0, 2, 2), 1.0);
  EXPECT_DOUBLE_EQ(AvailableCpuShare(1, 2, 2), 0.5);
  EXPECT_DOUBLE_EQ(AvailableCpuShare(2, 2, 2), 0.0);
  EXPECT_DOUBLE_EQ(AvailableCpuShare(1, 4, 2), 1.0);
}

// One profiled prefill and decode step: every command is timed once, the
// command times lie within their jobs and the step, and the groups add
// up to the commands.
TEST(NpuBenchProfile, AccountsForEveryCommandOfEachStep) {
  const std::unique_ptr<runtime::Model> model = LoadOnSoftNpu(CompileTinyModel());
  ASSERT_NE(model, nullptr);
  int observed = 0;
  absl::StatusOr<std::vector<StepProfile>> profiles =
      ProfileModel(*model, 16, 1, [&](const runtime::StepTimeline&) { ++observed; });
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 2u);  // one prefill_16 run, one decode step
  EXPECT_EQ(observed, 2);
  EXPECT_EQ((*profiles)[0].graph, "prefill_16");
  EXPECT_EQ((*profiles)[0].tokens, 16u);
  EXPECT_EQ((*profiles)[1].graph, "decode");
  EXPECT_EQ((*profiles)[1].tokens, 1u);
  const uint32_t layers = model->info().n_layers;
  for (const StepProfile& p : *profiles) {
    SCOPED_TRACE(p.graph);
    uint32_t in_graph = 0;
    for (const runtime::GraphSpec& g : model->program().graphs()) {
      if (g.name != p.graph) continue;
      for (const runtime::StreamSpec& s : g.streams) in_graph += s.commands.size();
    }
    EXPECT_EQ(p.command_count, in_graph);
    EXPECT_EQ(p.commands.size(), in_graph);
    EXPECT_GT(p.commands_ns, 0);
    EXPECT_LE(p.commands_ns, p.device_ns);
    EXPECT_LE(p.device_ns, p.step_ns);
    uint32_t grouped = 0;
    int64_t grouped_ns = 0;
    for (const ProfileGroup& g : p.by_opcode) {
      grouped += g.commands;
      grouped_ns += g.ns;
    }
    EXPECT_EQ(grouped, in_graph);
    EXPECT_EQ(grouped_ns, p.commands_ns);
    grouped = 0;
    for (const ProfileGroup& g : p.by_layer) grouped += g.commands;
    EXPECT_EQ(grouped, in_graph);
    // Layers 0..n-1, then the commands outside them.
    ASSERT_EQ(p.by_layer.size(), layers + 1);
    EXPECT_EQ(p.by_layer.front().name, "layer 0");
    EXPECT_EQ(p.by_layer.back().name, "other");
    for (const ProfiledCommand& c : p.commands) {
      EXPECT_GE(c.layer, -1);
      EXPECT_LT(c.layer, static_cast<int32_t>(layers));
      EXPECT_GE(c.ns, 0);
      if (c.opcode == LNPU_OP_MATMUL) {
        EXPECT_GT(c.cost.ops, 0u);
        EXPECT_GT(c.cost.bytes, 0u);
      }
    }
  }
  EXPECT_GT(BestMatmulRate(*profiles), 0);
}

// One profiled batched step per lane count: the batched graph of that
// many lanes (1 lane: the decode graph), its active lanes as tokens, every
// command timed; its MATMULs read the same weights as one lane's with 4
// times the operations.
TEST(NpuBenchProfile, ProfilesOneBatchedStepOfEachLaneCount) {
  const std::unique_ptr<runtime::Model> model = LoadOnSoftNpu(CompileTinyBatchedModel());
  ASSERT_NE(model, nullptr);
  BatchedDecodeOptions options;
  options.lanes = {1, 4};
  int observed = 0;
  absl::StatusOr<std::vector<StepProfile>> profiles = ProfileBatchedDecode(
      *model, options, [&](const runtime::StepTimeline&) { ++observed; });
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 2u);
  EXPECT_EQ(observed, 2);
  EXPECT_EQ((*profiles)[0].graph, "decode");
  EXPECT_EQ((*profiles)[0].tokens, 1u);
  EXPECT_EQ((*profiles)[1].graph, "decode_batch_4");
  EXPECT_EQ((*profiles)[1].tokens, 4u);
  uint32_t in_graph = 0;
  for (const runtime::GraphSpec& g : model->program().decode_batches()) {
    if (g.name != "decode_batch_4") continue;
    for (const runtime::StreamSpec& s : g.streams) in_graph += s.commands.size();
  }
  EXPECT_EQ((*profiles)[1].command_count, in_graph);
  EXPECT_EQ((*profiles)[1].commands.size(), in_graph);
  uint64_t ops[2] = {0, 0};
  for (size_t i = 0; i < 2; ++i) {
    const StepProfile& p = (*profiles)[i];
    EXPECT_GT(p.commands_ns, 0);
    EXPECT_LE(p.commands_ns, p.device_ns);
    for (const ProfiledCommand& c : p.commands) {
      if (c.opcode == LNPU_OP_MATMUL) ops[i] += c.cost.ops;
    }
  }
  EXPECT_EQ(ops[1], 4 * ops[0]);
}

TEST(NpuBenchProgram, ProfileWithBatchLanesPrintsTheBatchedStep) {
  const ToolRun run = RunBench({"-m", CompileTinyBatchedModel(), "--device", "soft",
                                "--profile", "--batch-lanes", "1,2", "--prompt-lengths", "16",
                                "--bandwidth-mib", "8", "--bandwidth-runs", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("graph decode_batch_2, 2 token(s)"));
}

TEST(NpuBenchProfile, CostCountsMatmulBytesAndOperations) {
  lnpu_cmd_matmul c{};
  c.hdr = {LNPU_OP_MATMUL, 0, sizeof c};
  c.src = 0;
  c.weight = 1 << 20;
  c.dst = 2 << 20;
  c.rows = 2;
  c.k = 64;
  c.n = 32;
  c.weight_dtype = LNPU_DTYPE_F16;
  absl::StatusOr<CommandCost> cost = CostOf(
      DRM_LNPU_ENGINE_COMPUTE,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&c), sizeof c), 0);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->ops, 2u * 2 * 64 * 32);
  EXPECT_EQ(cost->bytes, (2u * 64 + 2u * 32) * 4 + 64u * 32 * 2);
  c.k = 0;
  EXPECT_FALSE(CostOf(DRM_LNPU_ENGINE_COMPUTE,
                      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&c), sizeof c), 0)
                   .ok());
}

// Roofline 1 GB/s and 1 TOP/s: a MATMUL of 1 MB (bound 1 ms) that took
// 1.25 ms, an RMS_NORM of 1 kB (bound 1 us) that took 5 us, an ATTENTION
// of 10 GOP (compute-bound: 10 ms) that took 12 ms, and a MATMUL of 1 MB
// from cache that took 0.5 ms, faster than its bound, so it counts at its
// own time; the step 100 us longer than its commands.
TEST(NpuBenchProfile, BudgetSplitsTheStepAgainstTheRoofline) {
  StepProfile p;
  const auto add = [&](uint16_t opcode, int64_t ns, uint64_t bytes, uint64_t ops) {
    ProfiledCommand c;
    c.opcode = opcode;
    c.ns = ns;
    c.cost = {.bytes = bytes, .ops = ops};
    p.commands.push_back(c);
    p.commands_ns += ns;
  };
  add(LNPU_OP_MATMUL, 1'250'000, 1'000'000, 2'000'000);
  add(LNPU_OP_RMS_NORM, 5'000, 1'000, 250);
  add(LNPU_OP_ATTENTION, 12'000'000, 100'000, 10'000'000'000);
  add(LNPU_OP_MATMUL, 500'000, 1'000'000, 2'000'000);
  p.step_ns = p.commands_ns + 100'000;
  const Roofline roof{.bytes_per_second = 1e9, .ops_per_second = 1e12};

  const StepBudget b = BudgetOf(p, roof);
  EXPECT_EQ(b.roofline_ns, 1'000'000 + 1'000 + 10'000'000 + 500'000);
  EXPECT_EQ(b.matmul_excess_ns, 250'000);
  EXPECT_EQ(b.other_excess_ns, 4'000 + 2'000'000);
  EXPECT_EQ(b.outside_ns, 100'000);
  EXPECT_EQ(b.roofline_ns + b.matmul_excess_ns + b.other_excess_ns + b.outside_ns, p.step_ns);
  EXPECT_THAT(FormatStepProfile(p, roof),
              HasSubstr("the step against the roofline: 11501.0 us (83.0%) at the limits, "
                        "MATMUL +250.0 us (1.8%), other commands +2004.0 us (14.5%), outside "
                        "the commands 100.0 us (0.7%)"));

  // Without a measured roofline nothing counts as a limit.
  const StepBudget none = BudgetOf(p, Roofline{});
  EXPECT_EQ(none.roofline_ns, 0);
  EXPECT_EQ(none.matmul_excess_ns, 1'750'000);
  EXPECT_EQ(none.other_excess_ns, 12'005'000);
}

TEST(NpuBenchProgram, ProfilePrintsOpcodesLayersAndTheRoofline) {
  std::vector<std::string> args = {"-m", CompileTinyModel(), "--device", "soft", "--profile",
                                   "--prompt-lengths", "16", "--bandwidth-mib", "8",
                                   "--bandwidth-runs", "1"};
  const ToolRun run = RunBench(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* text : {"roofline: read bandwidth", "graph prefill_16, 16 token(s)",
                           "graph decode, 1 token(s)", "the step against the roofline: ",
                           "by opcode", "by layer",
                           "LNPU_OP_MATMUL", "LNPU_OP_ATTENTION", "layer 1", "other"}) {
    EXPECT_THAT(run.out, HasSubstr(text));
  }
}

// The trace parses and holds, for every job of the profiled decode step,
// one command event per command of the job, inside the job's time.
TEST(NpuBenchProgram, TraceHoldsOneEventPerCommandOfAStep) {
  const std::string trace_path = TestDirectory::Path("trace.json");
  const ToolRun run = RunBench({"-m", CompileTinyModel(), "--device", "soft", "--profile",
                                "--prompt-lengths", "16", "--bandwidth-mib", "8",
                                "--bandwidth-runs", "1", "--trace", trace_path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json trace =
      nlohmann::json::parse(tools::testing::ReadFileOrEmpty(trace_path), nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << "the trace is not JSON";
  ASSERT_TRUE(trace.contains("traceEvents"));
  const nlohmann::json& events = trace["traceEvents"];
  int decode_jobs = 0;
  int steps = 0;
  for (const nlohmann::json& job : events) {
    if (job.value("cat", "") == "runtime" && job["name"].get<std::string>().rfind("step ", 0) == 0) {
      ++steps;
    }
    if (job.value("cat", "") != "job") continue;
    const std::string graph = job["args"]["graph"];
    if (graph == "decode") ++decode_jobs;
    const double start = job["ts"], end = start + job["dur"].get<double>();
    int commands = 0;
    for (const nlohmann::json& c : events) {
      if (c.value("cat", "") != "command" || c["tid"] != job["tid"]) continue;
      const double ts = c["ts"];
      if (ts >= start && ts <= end && c["args"]["job"] == job["args"]["job"]) ++commands;
    }
    EXPECT_EQ(commands, job["args"]["commands"].get<int>()) << graph;
  }
  EXPECT_EQ(decode_jobs, 2);  // compute, then the DMA scatter
  EXPECT_EQ(steps, 2);        // the profiled prefill and decode runs
}

TEST(NpuBenchProgram, ContentionReportsTheCpuShare) {
  std::vector<std::string> args = QuickArgs();
  args.insert(args.end(), {"--contention", "1", "--json"});
  const ToolRun run = RunBench(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.out;
  for (const nlohmann::json& decode : report["decode"]) {
    EXPECT_EQ(decode["competing_processes"], 1);
    EXPECT_GT(decode["competitor_cores"].get<double>(), 0);
    EXPECT_GE(decode["cpu_share"].get<double>(), 0);
    EXPECT_LE(decode["cpu_share"].get<double>(), 1);
  }
}

TEST(NpuBenchProgram, BadFlagExitsWithAMessage) {
  const ToolRun run = RunBench({"-m", CompileTinyModel(), "--no-such-flag", "1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("unknown option --no-such-flag"));
  EXPECT_THAT(run.err, HasSubstr("--help"));
  EXPECT_TRUE(run.out.empty());
}

TEST(NpuBenchProgram, FillThatLeavesNoRoomForDecodeIsRefused) {
  std::vector<std::string> args = QuickArgs();
  args.insert(args.end(), {"--fills", "90", "--decode-steps", "16"});
  const ToolRun run = RunBench(args);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("--fills: a 90% fill of 64 slots"));
  EXPECT_THAT(run.err, HasSubstr("--min-response-len"));
}

TEST(NpuBenchProgram, MissingArtifactNamesThePath) {
  const ToolRun run = RunBench({"-m", "/nonexistent/model.lnpu"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("/nonexistent/model.lnpu"));
}

TEST(NpuBenchProgram, UnknownPresetListsTheKnownOnes) {
  const ToolRun run = RunBench({"--synthetic", "gpt-5"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("unknown synthetic preset 'gpt-5'"));
  EXPECT_THAT(run.err, HasSubstr("qwen2.5-0.5b"));
}

TEST(NpuBenchProgram, MissingVocabularyDirectorySaysHowToPointAtIt) {
  const ToolRun run =
      RunBench({"--synthetic", "qwen2.5-0.5b", "--models-dir", "/nonexistent/models"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("preset 'qwen2.5-0.5b' needs its vocabulary from "
                                 "/nonexistent/models/vocab"));
  EXPECT_THAT(run.err, HasSubstr("--models-dir or LNPU_MODELS_DIR"));
  EXPECT_THAT(run.err, HasSubstr("/nonexistent/models/vocab/ggml-vocab-qwen2.gguf"));
}

TEST(NpuBenchProgram, HelpExitsZero) {
  const ToolRun run = RunBench({"--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.out, HasSubstr("usage: npu-bench"));
}

}  // namespace
}  // namespace lnpu::bench
