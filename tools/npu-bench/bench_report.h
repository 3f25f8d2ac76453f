// Everything one npu-bench run measured, and its two renderings: aligned
// text tables for people and one JSON object for scripts. Derived figures
// (decode limit and fraction of it, 90%-vs-0% fill ratio) are computed here
// so both renderings agree.
#ifndef TOOLS_NPU_BENCH_BENCH_REPORT_H_
#define TOOLS_NPU_BENCH_BENCH_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model_info.h"
#include "tools/npu-bench/batched_decode.h"
#include "tools/npu-bench/decode_traffic.h"
#include "tools/npu-bench/model_benchmark.h"
#include "tools/npu-bench/read_bandwidth.h"

namespace lnpu::bench {

// The shape of the measured model (from runtime::ModelInfo).
struct ModelShape {
  std::string architecture;
  std::string name;
  uint32_t vocab_size = 0;
  uint32_t dim = 0;
  uint32_t n_layers = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t ffn_dim = 0;
  uint32_t kv_capacity = 0;
  uint64_t weight_bytes = 0;  // the artifact's data section

  static ModelShape Of(const runtime::ModelInfo& info);
};

// How far a fill's two bracket probes may differ, as a fraction of their
// mean, for the fill to count as measured at a steady bandwidth.
inline constexpr double kSteadyProbeTolerance = 0.10;

struct BenchReport {
  std::string model;    // the artifact path or "synthetic PRESET (WEIGHTS)"
  std::string device;   // Device::Describe()
  std::string placement_requested;  // auto, copy or import
  bool weights_imported = false;    // the placement Model::Load chose
  size_t panel_matrices = 0;        // matrices stored as panels (Model::Load)
  size_t q6_k_conversions = 0;      // Q6_K matrices converted to Q8_0 (Model::Load)
  double load_ms = 0;               // Model::Load, weights placed and checked
  uint64_t compute_units = 0;
  ModelShape shape;
  int reps = 0;
  int warmups = 0;
  DecodeTraffic traffic;
  ModelBenchmarkResult results;
  std::vector<BatchedDecodeResult> batched_decode;  // empty without --batch-lanes
  // The process's peak resident set (peak_rss.h) through the decode
  // measurements, the bandwidth probes' buffers excluded.
  double peak_rss_mib = 0;
  int contention_processes = 0;  // --contention
  int online_cores = 0;          // of the host, for the CPU share
  // The fastest of bracket_probes, or one probe after the measurements
  // when they were not bracketed.
  ReadBandwidth bandwidth;
  // The probes taken before and after each decode fill
  // (ModelBenchmarkOptions::bandwidth_probe), in order; empty when not
  // bracketed, and then bracket_unavailable says why.
  std::vector<ReadBandwidth> bracket_probes;
  std::string bracket_unavailable;
  // The share of this (virtual) machine's CPU time the hypervisor gave to
  // other guests, from the first measurement to the end of the bandwidth's
  // (cpu_steal.h); < 0 when /proc/stat could not be read.
  double cpu_stolen_fraction = -1;

  // Bytes one step of `decode` streams: the weights and its mean visible
  // KV slots.
  double DecodeBytesPerToken(const DecodeResult& decode) const;
  // The read bandwidth `decode` is held against: the mean of its two
  // bracket probes, else `bandwidth`.
  double DecodeBandwidth(const DecodeResult& decode) const;
  // Whether `decode`'s two bracket probes agree within
  // kSteadyProbeTolerance of their mean (false when not bracketed): when
  // they do not, the bandwidth moved during the fill and its share of the
  // limit is not a judgement of the decode loop.
  bool ProbesSteady(const DecodeResult& decode) const;
  // Decode tokens/s that DecodeBandwidth allows for one of results.decode.
  double DecodeLimit(const DecodeResult& decode) const;
  // The share of the CPU the device's compute units had during `decode`
  // (1 without competing processes; cpu_contention.h).
  double CpuShare(const DecodeResult& decode) const;
};

std::string FormatText(const BenchReport& report);
std::string FormatJson(const BenchReport& report);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_BENCH_REPORT_H_
