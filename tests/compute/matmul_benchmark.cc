// Throughput of LNPU_OP_MATMUL through ExecuteCommand at LLM shapes
// (Qwen2.5-0.5B: dim 896, ffn 4864, vocabulary 151936; TinyLlama-1.1B: dim
// 2048, ffn 5632, vocabulary 32000):
//   GEMV (rows = 1, decode; rows = 2 and 4, batched decode): weight bytes
//   streamed per second (GB/s);
//   rows = 8 and 16 (batched decode of 8, short prefill chunks; GEMV
//   passes or GEMM, quant_matmul.h) and GEMM (rows = 64 and 256, prefill
//   chunks): GOP/s
//   (2 * rows * k * n per command).
// Benchmarks are named Matmul/<dtype>/<path>: F32 and F16 run the Highway
// kernels, Q8_0 and Q4_0 every quantized-matmul path this CPU supports
// (quant_matmul.h), the panel dtypes (Q8_0_P16, Q4_0_P16 and their _P16S
// forms, scales in the quant stream) the paths with panel loops;
// Read/threads:T is the read bandwidth to compare the GEMV with;
// Projections/<model>/<qkv|gate_up>/<dtype>/grouped:0|1 a layer's
// projections of one src as commands in turn and as one command group;
// DecodeMatmuls/<model>/<dtype>/one:0|1 all of a decode step's layer
// MATMULs in turn, and the same bytes as one MATMUL.
// Matmul arguments: {n, k, rows, threads, dram}. With dram = 1
// GEMV cycles through copies of the weights totalling >= 1 GiB, so that
// they stream from DRAM as in decoding (not from the large L3); dram = 0
// reuses one copy, which stays in cache: the kernel's compute rate (rows
// 1, 2 and 4 of the matrices up to 896 x 896, and of Q6_K 2048 x 2048:
// how much arithmetic each more batched row adds to the GEMV).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "base/huge_page_memory.h"
#include "base/quant_blocks.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/quant_matmul_q6_k.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu {
namespace {

// Device address == host address: every operand is its own host vector.
class IdentityMemory : public DeviceMemoryView {
 public:
  uint8_t* Translate(uint64_t addr) const override {
    return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(addr));
  }
};

uint64_t Address(const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

// `bytes` on transparent huge pages where the kernel grants them, as the
// device's buffer objects are, so that the streams do not also wait for
// 4 KiB page walks. 2 MiB-aligned.
HugePageMemory MapWeights(size_t bytes) {
  absl::StatusOr<HugePageMemory> memory = HugePageMemory::Map(bytes);
  if (!memory.ok()) {
    std::fprintf(stderr, "matmul_benchmark: %s\n", std::string(memory.status().message()).c_str());
    std::abort();
  }
  return *std::move(memory);
}

// Bytes of an n x k weight matrix of `dtype`.
size_t WeightBytes(uint32_t dtype, size_t n, size_t k) {
  switch (dtype) {
    case LNPU_DTYPE_F32: return n * k * 4;
    case LNPU_DTYPE_F16: return n * k * 2;
    case LNPU_DTYPE_Q8_0: return n * k / 32 * 34;
    case LNPU_DTYPE_Q8_0_P16:
    case LNPU_DTYPE_Q8_0_P16S: return P16MatrixBytes(kQ8_0BlockBytes, n, k / 32);
    case LNPU_DTYPE_Q4_0_P16:
    case LNPU_DTYPE_Q4_0_P16S: return P16MatrixBytes(kQ4_0BlockBytes, n, k / 32);
    case LNPU_DTYPE_Q6_K: return n * k / kQ6_KBlock * kQ6_KBlockBytes;
    default: return n * k / 32 * 18;
  }
}

// `bytes` of pseudo-random weights of `dtype` (not a panel dtype), each f16
// scale (and f16 / f32 element) made a small finite value by setting its
// exponent bits.
std::vector<uint8_t> PseudoRandomWeights(uint32_t dtype, size_t bytes) {
  std::vector<uint8_t> weights(bytes);
  for (size_t i = 0; i < weights.size(); ++i) {
    weights[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  }
  const size_t granule = dtype == LNPU_DTYPE_F32    ? 4
                         : dtype == LNPU_DTYPE_F16  ? 2
                         : dtype == LNPU_DTYPE_Q8_0 ? 34
                         : dtype == LNPU_DTYPE_Q6_K ? kQ6_KBlockBytes
                                                    : 18;
  for (size_t i = 0; i + granule <= weights.size(); i += granule) {
    // Top byte of an f16 (first two bytes; Q6_K: the last two) or of an
    // f32: 0x2c / 0x3c.
    const size_t top = dtype == LNPU_DTYPE_F32    ? i + 3
                       : dtype == LNPU_DTYPE_Q6_K ? i + kQ6_KDOffset + 1
                                                  : i + 1;
    weights[top] = static_cast<uint8_t>((weights[top] & 0x83) | 0x28);
  }
  return weights;
}

const char* DtypeName(uint32_t dtype) {
  switch (dtype) {
    case LNPU_DTYPE_F32: return "F32";
    case LNPU_DTYPE_F16: return "F16";
    case LNPU_DTYPE_Q8_0: return "Q8_0";
    case LNPU_DTYPE_Q8_0_P16: return "Q8_0_P16";
    case LNPU_DTYPE_Q4_0_P16: return "Q4_0_P16";
    case LNPU_DTYPE_Q8_0_P16S: return "Q8_0_P16S";
    case LNPU_DTYPE_Q4_0_P16S: return "Q4_0_P16S";
    case LNPU_DTYPE_Q6_K: return "Q6_K";
    default: return "Q4_0";
  }
}

bool IsPanelDtype(uint32_t dtype) {
  return dtype == LNPU_DTYPE_Q8_0_P16 || dtype == LNPU_DTYPE_Q4_0_P16 ||
         dtype == LNPU_DTYPE_Q8_0_P16S || dtype == LNPU_DTYPE_Q4_0_P16S;
}

// Writes pseudo-random n x k weights of panel `dtype` (IsPanelDtype; n a
// multiple of 16) to dst, WeightBytes(dtype, n, k) bytes.
void WritePanelWeights(uint32_t dtype, uint32_t n, uint32_t k, uint8_t* dst) {
  const bool q8 = dtype == LNPU_DTYPE_Q8_0_P16 || dtype == LNPU_DTYPE_Q8_0_P16S;
  const P16Scales scales = dtype == LNPU_DTYPE_Q8_0_P16S || dtype == LNPU_DTYPE_Q4_0_P16S
                               ? P16Scales::kAfterPair
                               : P16Scales::kAfterPanel;
  const uint32_t block_dtype = q8 ? LNPU_DTYPE_Q8_0 : LNPU_DTYPE_Q4_0;
  const std::vector<uint8_t> blocks =
      PseudoRandomWeights(block_dtype, WeightBytes(block_dtype, n, k));
  RepackToP16(q8 ? kQ8_0BlockBytes : kQ4_0BlockBytes, scales, blocks.data(), n, k / 32, dst);
}

// The MATMUL dst[rows][n] = src[rows][k] x weight.
lnpu_cmd_matmul MatmulCommand(uint32_t dtype, uint32_t rows, uint32_t n, uint32_t k,
                              const float* src, const uint8_t* weight, float* dst) {
  lnpu_cmd_matmul cmd;
  std::memset(&cmd, 0, sizeof(cmd));
  cmd.hdr.opcode = LNPU_OP_MATMUL;
  cmd.hdr.size = sizeof(cmd);
  cmd.src = Address(src);
  cmd.weight = Address(weight);
  cmd.dst = Address(dst);
  cmd.rows = rows;
  cmd.k = k;
  cmd.n = n;
  cmd.weight_dtype = dtype;
  return cmd;
}

// path: the quantized-matmul path to use (Q8_0 / Q4_0), nullptr otherwise.
void BM_Matmul(benchmark::State& state, uint32_t dtype,
               const compute::QuantMatmulPath* path) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  const uint32_t k = static_cast<uint32_t>(state.range(1));
  const uint32_t rows = static_cast<uint32_t>(state.range(2));
  const int threads = static_cast<int>(state.range(3));
  const bool dram = state.range(4) != 0;

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> src(size_t{rows} * k);
  for (float& x : src) x = dist(rng);
  const size_t bytes = WeightBytes(dtype, n, k);
  const size_t copies =
      dram ? std::max<size_t>(1, (size_t{1} << 30) / bytes) : 1;
  // Panel weights must start 64-byte aligned: the storage is 2 MiB-aligned
  // and the copies follow at multiples of 64 bytes for these shapes.
  const HugePageMemory storage = MapWeights(bytes * copies);
  uint8_t* const weights = storage.data();
  if (IsPanelDtype(dtype)) {
    // Blocks repacked (n a multiple of 16 here: no padding rows).
    WritePanelWeights(dtype, n, k, weights);
    for (size_t c = 1; c < copies; ++c) std::memcpy(weights + c * bytes, weights, bytes);
  } else {
    const std::vector<uint8_t> random = PseudoRandomWeights(dtype, bytes * copies);
    std::memcpy(weights, random.data(), random.size());
  }
  std::vector<float> dst(size_t{rows} * n);

  lnpu_cmd_matmul cmd = MatmulCommand(dtype, rows, n, k, src.data(), weights, dst.data());
  std::vector<OperandAccess> accesses;
  const auto valid = ValidateCommand(
      DRM_LNPU_ENGINE_COMPUTE,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&cmd), sizeof(cmd)),
      &accesses);
  if (!valid.ok()) {
    state.SkipWithError(std::string(valid.status().message()).c_str());
    return;
  }

  ComputeContext context(threads);
  IdentityMemory memory;
  compute::SetQuantMatmulPathForTest(path);
  size_t copy = 0;
  for (auto _ : state) {
    cmd.weight = Address(weights + copy * bytes);
    copy = (copy + 1) % copies;
    const absl::Status status = ExecuteCommand(cmd.hdr, memory, context);
    if (!status.ok()) state.SkipWithError("execute failed");
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  compute::SetQuantMatmulPathForTest(nullptr);
  const double ops = 2.0 * rows * k * n;
  if (rows <= compute::kQuantGemvMaxRows) {
    state.counters["GB/s"] = benchmark::Counter(
        static_cast<double>(bytes) * 1e-9,
        benchmark::Counter::kIsIterationInvariantRate);
  } else {
    state.counters["GOP/s"] = benchmark::Counter(
        ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
}

// One decode step's projections of a layer that read the same activations
// (Q, K and V; gate and up) on the default quantized path with 2 threads,
// streaming from DRAM: as commands run one after another (grouped = 0) and
// as one command group (grouped = 1, what the software NPU's engine runs,
// command_set.h). GB/s of weight bytes.
void BM_Projections(benchmark::State& state, uint32_t dtype, std::vector<uint32_t> ns, uint32_t k) {
  const bool grouped = state.range(0) != 0;
  std::vector<size_t> offsets;
  size_t set_bytes = 0;
  for (uint32_t n : ns) {
    offsets.push_back(set_bytes);
    set_bytes += WeightBytes(dtype, n, k);
  }
  const size_t copies = std::max<size_t>(1, (size_t{1} << 30) / set_bytes);
  const HugePageMemory storage = MapWeights(set_bytes * copies);
  uint8_t* const weights = storage.data();
  for (size_t m = 0; m < ns.size(); ++m) WritePanelWeights(dtype, ns[m], k, weights + offsets[m]);
  for (size_t c = 1; c < copies; ++c) std::memcpy(weights + c * set_bytes, weights, set_bytes);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> src(k);
  for (float& x : src) x = dist(rng);
  std::vector<std::vector<float>> dst(ns.size());
  std::vector<lnpu_cmd_matmul> cmds(ns.size());
  std::vector<const lnpu_cmd_header*> group;
  for (size_t m = 0; m < ns.size(); ++m) {
    dst[m].resize(ns[m]);
    cmds[m] = MatmulCommand(dtype, 1, ns[m], k, src.data(), weights + offsets[m], dst[m].data());
    group.push_back(&cmds[m].hdr);
  }
  ComputeContext context(2);
  IdentityMemory memory;
  size_t copy = 0;
  for (auto _ : state) {
    for (size_t m = 0; m < ns.size(); ++m) {
      cmds[m].weight = Address(weights + copy * set_bytes + offsets[m]);
    }
    copy = (copy + 1) % copies;
    absl::Status status;
    if (grouped) {
      status = ExecuteCommandGroup(group, memory, context);
    } else {
      for (const lnpu_cmd_header* cmd : group) status.Update(ExecuteCommand(*cmd, memory, context));
    }
    if (!status.ok()) state.SkipWithError("execute failed");
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(set_bytes) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// Shapes of a decoder layer's projections.
struct LayerShape {
  uint32_t dim, kv_dim, ffn, layers;
};

// Every MATMUL of one decode step's layers (not the output projection), on
// the default quantized path with 2 threads, streaming from DRAM (a step's
// weights, 380-545 MB here, are far beyond the last-level cache):
//   one = 0: per layer Q/K/V and gate/up as the command groups the engine
//            runs and O and down as single commands, each joined before
//            the next starts, as in a decode step;
//   one = 1: the same weight bytes (to within a panel) as one MATMUL of
//            k = dim, with no joins and no cold starts between commands.
// GB/s of weight bytes. one = 1 against npu-bench's read bandwidth is the
// GEMV's own streaming rate; one = 0 against one = 1 what the step's
// loop structure costs (docs/performance.md, "Where a decode step's
// MATMULs lose"). one = 0 also reports each projection kind's GB/s (qkv,
// o, gate_up, down: every layer's commands of that kind, timed one by one),
// which shows a kind that streams slower than the others ("Activation
// prefetches").
void BM_DecodeMatmuls(benchmark::State& state, uint32_t dtype, LayerShape shape) {
  const bool one = state.range(0) != 0;
  // A layer's projections in step order; with_previous: read the previous
  // one's src in the same command group (K and V with Q, up with gate).
  struct Projection {
    uint32_t n, k;
    bool with_previous;
  };
  const Projection layer[] = {{shape.dim, shape.dim, false},    {shape.kv_dim, shape.dim, true},
                              {shape.kv_dim, shape.dim, true},  {shape.dim, shape.dim, false},
                              {shape.ffn, shape.dim, false},    {shape.ffn, shape.dim, true},
                              {shape.dim, shape.ffn, false}};
  size_t layer_bytes = 0;
  for (const Projection& projection : layer) {
    layer_bytes += WeightBytes(dtype, projection.n, projection.k);
  }
  const size_t step_bytes = layer_bytes * shape.layers;
  const HugePageMemory storage = MapWeights(step_bytes);
  uint8_t* const weights = storage.data();
  // The first layer's weights written and copied into the others: their
  // values do not change the speed.
  for (size_t offset = 0; const Projection& projection : layer) {
    WritePanelWeights(dtype, projection.n, projection.k, weights + offset);
    offset += WeightBytes(dtype, projection.n, projection.k);
  }
  for (uint32_t l = 1; l < shape.layers; ++l) {
    std::memcpy(weights + l * layer_bytes, weights, layer_bytes);
  }
  const std::vector<float> src(std::max(shape.dim, shape.ffn), 0.5f);
  const uint32_t one_n =
      static_cast<uint32_t>(step_bytes / WeightBytes(dtype, kP16Rows, shape.dim) * kP16Rows);
  std::vector<float> dst(one ? one_n : shape.ffn);
  // Members after a group's first write outputs of their own (command_set.h:
  // no member's dst overlaps another member's operands).
  std::vector<std::vector<float>> member_dst(2, std::vector<float>(shape.ffn));
  std::vector<lnpu_cmd_matmul> cmds;
  if (one) {
    cmds.push_back(MatmulCommand(dtype, 1, one_n, shape.dim, src.data(), weights, dst.data()));
  } else {
    for (size_t offset = 0, l = 0; l < shape.layers; ++l) {
      for (const Projection& projection : layer) {
        cmds.push_back(MatmulCommand(dtype, 1, projection.n, projection.k, src.data(),
                                     weights + offset, dst.data()));
        offset += WeightBytes(dtype, projection.n, projection.k);
      }
    }
  }
  // The commands as the engine runs them: single commands and groups, each
  // with its projection kind (kKinds) and weight bytes.
  static constexpr const char* kKinds[] = {"qkv GB/s", "o GB/s", "gate_up GB/s", "down GB/s"};
  struct Step {
    std::vector<const lnpu_cmd_header*> commands;
    size_t kind;
    double bytes;
  };
  std::vector<Step> steps;
  for (size_t c = 0; c < cmds.size(); ++c) {
    const double bytes = static_cast<double>(WeightBytes(dtype, cmds[c].n, cmds[c].k));
    if (!one && layer[c % std::size(layer)].with_previous) {
      cmds[c].dst = Address(member_dst[steps.back().commands.size() - 1].data());
      steps.back().commands.push_back(&cmds[c].hdr);
      steps.back().bytes += bytes;
    } else {
      // A layer runs one step of each kind, in kKinds' order.
      steps.push_back(
          {.commands = {&cmds[c].hdr}, .kind = steps.size() % std::size(kKinds), .bytes = bytes});
    }
  }
  ComputeContext context(2);
  IdentityMemory memory;
  double kind_seconds[std::size(kKinds)] = {};
  for (auto _ : state) {
    absl::Status status;
    for (const Step& step : steps) {
      const auto start = std::chrono::steady_clock::now();
      status.Update(step.commands.size() == 1
                        ? ExecuteCommand(*step.commands[0], memory, context)
                        : ExecuteCommandGroup(step.commands, memory, context));
      kind_seconds[step.kind] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::ClobberMemory();
  }
  const double bytes = one ? static_cast<double>(WeightBytes(dtype, one_n, shape.dim))
                           : static_cast<double>(step_bytes);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["commands"] = static_cast<double>(cmds.size());
  if (!one && state.iterations() > 0) {
    double kind_bytes[std::size(kKinds)] = {};
    for (const Step& step : steps) kind_bytes[step.kind] += step.bytes;
    for (size_t kind = 0; kind < std::size(kKinds); ++kind) {
      state.counters[kKinds[kind]] =
          kind_bytes[kind] * static_cast<double>(state.iterations()) / kind_seconds[kind] * 1e-9;
    }
  }
}

// The machine's read bandwidth through the WorkerPool: each iteration
// streams the next 16 MiB of a 1 GiB buffer on huge pages, split into 8
// tasks on a WorkerPool of `threads` (XOR of every 64-bit word), one stream
// per task, each cache line prefetched 2 KiB ahead as npu-bench's probe
// does (without the prefetches the Intel (AMX) VM read 15% less).
void BM_Read(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr size_t kChunk = size_t{16} << 20;
  constexpr size_t kChunks = 64;
  constexpr size_t kTasks = 8;
  constexpr size_t kPrefetchWords = 2048 / sizeof(uint64_t);
  const HugePageMemory bytes = MapWeights(kChunk * kChunks);
  auto* const buffer = reinterpret_cast<uint64_t*>(bytes.data());
  for (size_t i = 0; i < kChunk * kChunks / sizeof(uint64_t); ++i) {
    buffer[i] = i * 0x9e3779b97f4a7c15u;
  }
  compute::WorkerPool pool(threads);
  std::vector<uint64_t> sums(kTasks);
  size_t chunk = 0;
  for (auto _ : state) {
    const uint64_t* base = buffer + chunk * (kChunk / sizeof(uint64_t));
    chunk = (chunk + 1) % kChunks;
    pool.ParallelFor(kTasks, [&](size_t task, int) {
      const size_t words = kChunk / sizeof(uint64_t) / kTasks;
      const uint64_t* p = base + task * words;
      uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      for (size_t i = 0; i < words; i += 8) {  // one cache line
        __builtin_prefetch(p + i + kPrefetchWords);
        a0 ^= p[i] ^ p[i + 4];
        a1 ^= p[i + 1] ^ p[i + 5];
        a2 ^= p[i + 2] ^ p[i + 6];
        a3 ^= p[i + 3] ^ p[i + 7];
      }
      sums[task] = a0 ^ a1 ^ a2 ^ a3;
    });
    benchmark::DoNotOptimize(sums.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(kChunk) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// {n, k}: Qwen2.5-0.5B (q/o 896x896, gate/up 4864x896, down 896x4864,
// lm_head 151936x896) and TinyLlama-1.1B (2048x2048, gate/up 5632x2048,
// down 2048x5632, lm_head 32000x2048). GEMM leaves out the lm_heads.
void RegisterBenchmarks() {
  const std::vector<std::vector<int64_t>> gemv_shapes = {
      {896, 896},   {4864, 896},   {896, 4864},   {151936, 896},
      {2048, 2048}, {5632, 2048},  {2048, 5632},  {32000, 2048}};
  const auto add = [&](uint32_t dtype, const compute::QuantMatmulPath* path) {
    // Q6_K has one loop per CPU (quant_matmul_q6_k.h), not one per path.
    const std::string loop = dtype != LNPU_DTYPE_Q6_K
                                 ? std::string(path != nullptr ? path->name : "highway")
                             : compute::Avx512Q6_KGemv() != nullptr ? "avx512vnni"
                             : compute::Avx2Q6_KGemv() != nullptr   ? "avx2"
                                                                    : "portable";
    const std::string name = std::string("Matmul/") + DtypeName(dtype) + "/" + loop;
    auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, dtype, path);
    b->ArgNames({"n", "k", "rows", "threads", "dram"});
    for (const auto& shape : gemv_shapes) {
      // Q6_K rows are whole 256-element blocks (not Qwen2.5-0.5B's 896).
      if (dtype == LNPU_DTYPE_Q6_K && shape[1] % kQ6_KBlock != 0) continue;
      for (int64_t threads : {1, 2}) {
        b->Args({shape[0], shape[1], 1, threads, 1});
        // Batched decode of 2 and 4 sequences (each weight read once), of 8
        // and short prefill chunks.
        if (shape[0] < 10000) {
          b->Args({shape[0], shape[1], 2, threads, 1});
          b->Args({shape[0], shape[1], 4, threads, 1});
          b->Args({shape[0], shape[1], 8, threads, 1});
          b->Args({shape[0], shape[1], 16, threads, 1});
        }
        // In cache: the small matrices only (L2 is 1-2 MiB per core); for
        // Q6_K, whose small shapes are left out, 2048 x 2048 (3.4 MB, in L3).
        if (shape[0] * shape[1] <= 896 * 896 ||
            (dtype == LNPU_DTYPE_Q6_K && shape[0] == 2048 && shape[1] == 2048)) {
          for (int64_t rows : {1, 2, 4}) b->Args({shape[0], shape[1], rows, threads, 0});
        }
        // Prefill chunks of 64 and 256 rows.
        if (shape[0] < 10000) {
          for (int64_t rows : {64, 256}) b->Args({shape[0], shape[1], rows, threads, 0});
        }
      }
    }
    b->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
  benchmark::RegisterBenchmark("Read", BM_Read)
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  add(LNPU_DTYPE_F32, nullptr);
  add(LNPU_DTYPE_F16, nullptr);
  for (uint32_t dtype : {LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0}) {
    for (const compute::QuantMatmulPath* path : compute::SupportedQuantMatmulPaths()) {
      add(dtype, path);
    }
  }
  // Panels on the paths with loops of their own (the others run the
  // portable C++ loop, quant_matmul.h).
  for (uint32_t dtype : {LNPU_DTYPE_Q8_0_P16, LNPU_DTYPE_Q8_0_P16S}) {
    for (const compute::QuantMatmulPath* path : compute::SupportedQuantMatmulPaths()) {
      if (path->q8_0_p16_kernels) add(dtype, path);
    }
  }
  for (uint32_t dtype : {LNPU_DTYPE_Q4_0_P16, LNPU_DTYPE_Q4_0_P16S}) {
    for (const compute::QuantMatmulPath* path : compute::SupportedQuantMatmulPaths()) {
      if (path->q4_0_p16_kernels) add(dtype, path);
    }
  }
  add(LNPU_DTYPE_Q6_K, nullptr);
  const struct {
    const char* name;
    uint32_t dtype;
    std::vector<uint32_t> ns;
    uint32_t k;
  } projections[] = {
      {"Projections/qwen2.5-0.5b/qkv/Q8_0_P16S", LNPU_DTYPE_Q8_0_P16S, {896, 128, 128}, 896},
      {"Projections/qwen2.5-0.5b/gate_up/Q8_0_P16S", LNPU_DTYPE_Q8_0_P16S, {4864, 4864}, 896},
      {"Projections/tinyllama-1.1b/qkv/Q4_0_P16S", LNPU_DTYPE_Q4_0_P16S, {2048, 256, 256},
       2048},
      {"Projections/tinyllama-1.1b/gate_up/Q4_0_P16S", LNPU_DTYPE_Q4_0_P16S, {5632, 5632},
       2048}};
  const struct {
    const char* name;
    uint32_t dtype;
    LayerShape shape;
  } steps[] = {
      {"DecodeMatmuls/qwen2.5-0.5b/Q8_0_P16", LNPU_DTYPE_Q8_0_P16, {896, 128, 4864, 24}},
      {"DecodeMatmuls/qwen2.5-0.5b/Q8_0_P16S", LNPU_DTYPE_Q8_0_P16S, {896, 128, 4864, 24}},
      {"DecodeMatmuls/tinyllama-1.1b/Q4_0_P16", LNPU_DTYPE_Q4_0_P16, {2048, 256, 5632, 22}},
      {"DecodeMatmuls/tinyllama-1.1b/Q4_0_P16S", LNPU_DTYPE_Q4_0_P16S, {2048, 256, 5632, 22}}};
  for (const auto& step : steps) {
    benchmark::RegisterBenchmark(step.name, BM_DecodeMatmuls, step.dtype, step.shape)
        ->ArgName("one")
        ->Arg(0)
        ->Arg(1)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (const auto& p : projections) {
    benchmark::RegisterBenchmark(p.name, BM_Projections, p.dtype, p.ns, p.k)
        ->ArgName("grouped")
        ->Arg(0)
        ->Arg(1)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace lnpu::softnpu

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  lnpu::softnpu::RegisterBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
