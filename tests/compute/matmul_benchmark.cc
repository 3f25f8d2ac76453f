// Throughput of LNPU_OP_MATMUL through ExecuteCommand at LLM shapes
// (Qwen2.5-0.5B: dim 896, ffn 4864; TinyLlama-1.1B: dim 2048, ffn 5632):
//   GEMV (rows = 1, decode): weight bytes streamed per second (GB/s);
//   GEMM (rows = 512, prefill): GOP/s (2 * rows * k * n per command).
// Arguments: {n, k, rows, dtype (0 = F32, 1 = F16, 2 = Q8_0, 3 = Q4_0),
// threads}. GEMV cycles through copies of the weights totalling >= 1 GiB,
// so that they stream from DRAM as in decoding (not from the large L3).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "kernel_iface/softnpu/compute/command_set.h"

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

// Bytes of an n x k weight matrix of `dtype`.
size_t WeightBytes(uint32_t dtype, size_t n, size_t k) {
  switch (dtype) {
    case LNPU_DTYPE_F32: return n * k * 4;
    case LNPU_DTYPE_F16: return n * k * 2;
    case LNPU_DTYPE_Q8_0: return n * k / 32 * 34;
    default: return n * k / 32 * 18;
  }
}

const char* DtypeName(uint32_t dtype) {
  switch (dtype) {
    case LNPU_DTYPE_F32: return "F32";
    case LNPU_DTYPE_F16: return "F16";
    case LNPU_DTYPE_Q8_0: return "Q8_0";
    default: return "Q4_0";
  }
}

void BM_Matmul(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  const uint32_t k = static_cast<uint32_t>(state.range(1));
  const uint32_t rows = static_cast<uint32_t>(state.range(2));
  constexpr uint32_t kDtypes[] = {LNPU_DTYPE_F32, LNPU_DTYPE_F16,
                                  LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0};
  const uint32_t dtype = kDtypes[state.range(3)];
  const int threads = static_cast<int>(state.range(4));

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> src(size_t{rows} * k);
  for (float& x : src) x = dist(rng);
  // Pseudo-random bytes are valid weights of every type once each f16
  // scale (and f16 / f32 element) is made a small finite value: set its
  // exponent bits.
  const size_t bytes = WeightBytes(dtype, n, k);
  const size_t copies =
      rows == 1 ? std::max<size_t>(1, (size_t{1} << 30) / bytes) : 1;
  std::vector<uint8_t> weights(bytes * copies);
  for (size_t i = 0; i < weights.size(); ++i) {
    weights[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  }
  const size_t granule = dtype == LNPU_DTYPE_F32   ? 4
                         : dtype == LNPU_DTYPE_F16 ? 2
                         : dtype == LNPU_DTYPE_Q8_0 ? 34
                                                    : 18;
  for (size_t i = 0; i + granule <= weights.size(); i += granule) {
    // Top byte of an f16 (first two bytes) or of an f32: 0x2c / 0x3c.
    const size_t top = dtype == LNPU_DTYPE_F32 ? i + 3 : i + 1;
    weights[top] = static_cast<uint8_t>((weights[top] & 0x83) | 0x28);
  }
  std::vector<float> dst(size_t{rows} * n);

  lnpu_cmd_matmul cmd;
  std::memset(&cmd, 0, sizeof(cmd));
  cmd.hdr.opcode = LNPU_OP_MATMUL;
  cmd.hdr.size = sizeof(cmd);
  cmd.src = Address(src.data());
  cmd.weight = Address(weights.data());
  cmd.dst = Address(dst.data());
  cmd.rows = rows;
  cmd.k = k;
  cmd.n = n;
  cmd.weight_dtype = dtype;
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
  size_t copy = 0;
  for (auto _ : state) {
    cmd.weight = Address(weights.data() + copy * bytes);
    copy = (copy + 1) % copies;
    const absl::Status status = ExecuteCommand(cmd.hdr, memory, context);
    if (!status.ok()) state.SkipWithError("execute failed");
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  const double ops = 2.0 * rows * k * n;
  if (rows == 1) {
    state.counters["GB/s"] = benchmark::Counter(
        static_cast<double>(bytes) * 1e-9,
        benchmark::Counter::kIsIterationInvariantRate);
  } else {
    state.counters["GOP/s"] = benchmark::Counter(
        ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
  state.SetLabel(DtypeName(dtype));
}

// {n, k}: Qwen2.5-0.5B (q/o 896x896, gate/up 4864x896, down 896x4864) and
// TinyLlama-1.1B (2048x2048, 5632x2048).
BENCHMARK(BM_Matmul)
    ->ArgNames({"n", "k", "rows", "dtype", "threads"})
    ->ArgsProduct({{896}, {896}, {1, 512}, {1, 2, 3}, {1, 2}})
    ->ArgsProduct({{4864}, {896}, {1, 512}, {1, 2, 3}, {1, 2}})
    ->ArgsProduct({{896}, {4864}, {1, 512}, {1, 2, 3}, {1, 2}})
    ->ArgsProduct({{2048}, {2048}, {1, 512}, {1, 2, 3}, {1, 2}})
    ->ArgsProduct({{5632}, {2048}, {1, 512}, {1, 2, 3}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lnpu::softnpu

BENCHMARK_MAIN();
