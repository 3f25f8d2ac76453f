// Cost of one WorkerPool loop: the round trip of an empty 2-task loop, and
// a decode-shaped burst (loops of 8 tasks of a few microseconds each, back
// to back, with a short single-threaded stretch between them, as between a
// step's GEMVs). Run by hand:
//   build/tests/compute/worker_pool_benchmark
#include <atomic>
#include <chrono>
#include <cstddef>

#include "base/cpu_relax.h"
#include "benchmark/benchmark.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {
namespace {

// Busy work of about `us` microseconds on the calling thread.
void Busy(std::chrono::microseconds us) {
  const auto end = std::chrono::steady_clock::now() + us;
  while (std::chrono::steady_clock::now() < end) CpuRelax();
}

void BM_EmptyLoop(benchmark::State& state) {
  WorkerPool pool(static_cast<int>(state.range(0)));
  std::atomic<size_t> ran{0};
  for (auto _ : state) {
    pool.ParallelFor(2, [&](size_t, int) { ran.fetch_add(1, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(ran.load());
}
BENCHMARK(BM_EmptyLoop)->Arg(2)->UseRealTime();

// One "layer": 4 loops of 8 tasks of 5 us, each after `gap` us on the
// caller alone. Ideal time with 2 threads: 4 x (gap + 20 us).
void BM_DecodeShapedLoops(benchmark::State& state) {
  WorkerPool pool(2);
  const std::chrono::microseconds gap(state.range(0));
  for (auto _ : state) {
    for (int loop = 0; loop < 4; ++loop) {
      Busy(gap);
      pool.ParallelFor(8, [](size_t, int) { Busy(std::chrono::microseconds(5)); });
    }
  }
}
BENCHMARK(BM_DecodeShapedLoops)->Arg(1)->Arg(5)->Arg(15)->Arg(30)->UseRealTime();

}  // namespace
}  // namespace lnpu::softnpu::compute

BENCHMARK_MAIN();
