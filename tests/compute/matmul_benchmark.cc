// Throughput of LNPU_OP_MATMUL through ExecuteCommand at LLM-like shapes
// (qwen2-0.5B: dim 896, ffn 4864), on all hardware threads:
//   GEMV (rows = 1, decode): weight bytes streamed per second (GB/s);
//   GEMM (rows = 256, prefill): GFLOP/s (2 * rows * k * n per command).
// Arguments: {n, k, rows, weight dtype (0 = F32, 1 = F16)}.
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

void BM_Matmul(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  const uint32_t k = static_cast<uint32_t>(state.range(1));
  const uint32_t rows = static_cast<uint32_t>(state.range(2));
  const bool f16 = state.range(3) == 1;

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> src(size_t{rows} * k);
  for (float& x : src) x = dist(rng);
  std::vector<float> weight_f32(f16 ? 0 : size_t{n} * k);
  for (float& x : weight_f32) x = dist(rng);
  // 0x3c00 = 1.0 in binary16; values do not affect the timing.
  std::vector<uint16_t> weight_f16(f16 ? size_t{n} * k : 0, 0x3c00);
  std::vector<float> dst(size_t{rows} * n);

  lnpu_cmd_matmul cmd;
  std::memset(&cmd, 0, sizeof(cmd));
  cmd.hdr.opcode = LNPU_OP_MATMUL;
  cmd.hdr.size = sizeof(cmd);
  cmd.src = Address(src.data());
  cmd.weight = f16 ? Address(weight_f16.data()) : Address(weight_f32.data());
  cmd.dst = Address(dst.data());
  cmd.rows = rows;
  cmd.k = k;
  cmd.n = n;
  cmd.weight_dtype = f16 ? LNPU_DTYPE_F16 : LNPU_DTYPE_F32;
  std::vector<OperandAccess> accesses;
  const auto valid = ValidateCommand(
      DRM_LNPU_ENGINE_COMPUTE,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&cmd), sizeof(cmd)),
      &accesses);
  if (!valid.ok()) {
    state.SkipWithError(std::string(valid.status().message()).c_str());
    return;
  }

  const int threads =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ComputeContext context(threads);
  IdentityMemory memory;
  for (auto _ : state) {
    const absl::Status status = ExecuteCommand(cmd.hdr, memory, context);
    if (!status.ok()) state.SkipWithError("execute failed");
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  const double weight_bytes = static_cast<double>(n) * k * (f16 ? 2 : 4);
  const double flops = 2.0 * rows * k * n;
  state.counters["GB/s"] = benchmark::Counter(
      weight_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
  state.SetLabel(f16 ? "F16 weights" : "F32 weights");
}

BENCHMARK(BM_Matmul)
    ->ArgNames({"n", "k", "rows", "f16"})
    ->ArgsProduct({{896}, {896}, {1, 256}, {0, 1}})
    ->ArgsProduct({{4864}, {896}, {1, 256}, {0, 1}})
    ->ArgsProduct({{896}, {4864}, {1, 256}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lnpu::softnpu

BENCHMARK_MAIN();
