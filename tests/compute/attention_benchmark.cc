// Throughput of the ATTENTION kernel (attention.h) at LLM shapes with an F16
// cache: Qwen2.5-0.5B (14 heads, 2 KV heads, head_dim 64),
// TinyLlama-1.1B (32 heads, 4 KV heads, head_dim 64) and stories260K (8
// heads, 4 KV heads, head_dim 8: a step's fixed costs).
//   Decode: 1 new row over `slots` visible cache slots (flash-decoding
//   splits).
//   Prefill: `rows` new rows (causal among themselves) over `slots`
//   visible cache slots, as a prompt chunk after earlier chunks.
// GOP/s counts 4 * heads * head_dim operations per (row, visible key):
// the multiply-adds of q.k and of the weighted sum of values. Arguments:
// {heads, kv_heads, rows, slots, threads, caches, head_dim}: successive calls cycle
// through `caches` copies of the KV cache, so that with 256 copies (over
// 150 MB) each call reads its cache from DRAM as a decode step does after
// streaming the weights, and with 1 from the CPU's caches. Run by hand,
// not part of the test suite.
#include <cstdint>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "kernel_iface/softnpu/compute/attention.h"
#include "kernel_iface/softnpu/compute/dtype_conversion.h"
#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {
namespace {

constexpr size_t kCapacity = 1152;

void BM_Attention(benchmark::State& state) {
  const size_t heads = static_cast<size_t>(state.range(0));
  const size_t kv_heads = static_cast<size_t>(state.range(1));
  const size_t rows = static_cast<size_t>(state.range(2));
  const size_t slots = static_cast<size_t>(state.range(3));
  const int threads = static_cast<int>(state.range(4));
  const size_t caches = static_cast<size_t>(state.range(5));
  const size_t head_dim = static_cast<size_t>(state.range(6));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto random_floats = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
  };
  const std::vector<float> q = random_floats(rows * heads * head_dim);
  const std::vector<float> k_new = random_floats(rows * kv_heads * head_dim);
  const std::vector<float> v_new = random_floats(rows * kv_heads * head_dim);
  // Per copy: the K cache, then the V cache.
  const size_t cache_elements = kCapacity * kv_heads * head_dim;
  std::vector<uint16_t> kv_caches(2 * cache_elements * caches);
  const std::vector<float> values = random_floats(2 * cache_elements);
  for (size_t c = 0; c < caches; ++c) {
    ConvertF32ToF16(values.data(), kv_caches.data() + 2 * c * cache_elements,
                    2 * cache_elements);
  }
  std::vector<uint8_t> mask(kCapacity, 0);
  for (size_t s = 0; s < slots; ++s) mask[s] = 1;
  std::vector<float> dst(rows * heads * head_dim);
  AttentionArgs args;
  args.q = q.data();
  args.k_new = k_new.data();
  args.v_new = v_new.data();
  args.kv_type = WeightType::kF16;
  args.mask = mask.data();
  args.dst = dst.data();
  args.rows = rows;
  args.capacity = kCapacity;
  args.heads = heads;
  args.kv_heads = kv_heads;
  args.head_dim = head_dim;
  args.scale = 0.125f;
  WorkerPool pool(threads);
  KernelScratch scratch;
  size_t copy = 0;
  for (auto _ : state) {
    args.k_cache = kv_caches.data() + 2 * copy * cache_elements;
    args.v_cache = kv_caches.data() + (2 * copy + 1) * cache_elements;
    copy = (copy + 1) % caches;
    Attention(args, pool, &scratch);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  // Row r sees the slots and new rows 0..r.
  const double keys = static_cast<double>(rows) * slots + rows * (rows + 1) / 2.0;
  state.counters["GOP/s"] =
      benchmark::Counter(4.0 * heads * head_dim * keys * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

BENCHMARK(BM_Attention)
    ->ArgNames({"heads", "kv_heads", "rows", "slots", "threads", "caches", "head_dim"})
    ->Args({14, 2, 1, 1024, 2, 1, 64})
    ->Args({14, 2, 1, 1024, 2, 256, 64})
    ->Args({14, 2, 256, 256, 2, 1, 64})
    ->Args({14, 2, 16, 512, 2, 1, 64})
    // Verify runs of speculative decoding: 2, 4 and 8 rows.
    ->Args({14, 2, 2, 128, 2, 1, 64})
    ->Args({14, 2, 4, 128, 2, 1, 64})
    ->Args({14, 2, 8, 128, 2, 1, 64})
    ->Args({14, 2, 4, 512, 2, 1, 64})
    ->Args({14, 2, 16, 128, 2, 1, 64})
    ->Args({32, 4, 4, 512, 2, 1, 64})
    ->Args({32, 4, 16, 512, 2, 1, 64})
    ->Args({32, 4, 1, 1024, 2, 1, 64})
    ->Args({32, 4, 1, 1024, 2, 128, 64})
    // One thread, in cache: against the FMA bound (docs/performance.md,
    // "Decode at depth").
    ->Args({32, 4, 1, 1024, 1, 1, 64})
    ->Args({32, 4, 256, 256, 2, 1, 64})
    ->Args({14, 2, 256, 256, 1, 1, 64})
    // stories260K's decode at the depths of llama-bench's tg64 and beyond.
    ->Args({8, 4, 1, 16, 2, 1, 8})
    ->Args({8, 4, 1, 64, 2, 1, 8})
    ->Args({8, 4, 1, 128, 2, 1, 8})
    ->UseRealTime();

}  // namespace
}  // namespace lnpu::softnpu::compute

BENCHMARK_MAIN();
