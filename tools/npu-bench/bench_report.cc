#include "tools/npu-bench/bench_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/common/json.h"
#include "tools/npu-bench/cpu_contention.h"

namespace lnpu::bench {
namespace {

using tools::JsonNumber;
using tools::JsonQuote;

constexpr double kMB = 1e6;
constexpr double kGB = 1e9;
// Above this share of stolen CPU time the text report warns that its
// wall-clock figures are not comparable.
constexpr double kStealWarningFraction = 0.02;

// `bytes` in kB, MB or GB (decimal), three significant digits or more.
std::string HumanBytes(double bytes) {
  if (bytes >= kGB) return absl::StrFormat("%.2f GB", bytes / kGB);
  if (bytes >= kMB) return absl::StrFormat("%.1f MB", bytes / kMB);
  return absl::StrFormat("%.1f kB", bytes / 1e3);
}

// Decode tokens/s at the largest fill over the one at the smallest fill.
double FillRatio(const ModelBenchmarkResult& results) {
  if (results.decode.size() < 2) return 0;
  const DecodeResult* low = &results.decode.front();
  const DecodeResult* high = low;
  for (const DecodeResult& d : results.decode) {
    if (d.fill_percent < low->fill_percent) low = &d;
    if (d.fill_percent > high->fill_percent) high = &d;
  }
  return high->tokens_per_second / low->tokens_per_second;
}

std::string FillRatioLabel(const ModelBenchmarkResult& results) {
  uint32_t low = 100, high = 0;
  for (const DecodeResult& d : results.decode) {
    low = std::min(low, d.fill_percent);
    high = std::max(high, d.fill_percent);
  }
  return absl::StrFormat("%d%% vs %d%%", high, low);
}

std::string JsonBreakdown(const StepBreakdown& b) {
  return absl::StrFormat(R"({"host_us": %s, "submit_us": %s, "wait_us": %s})",
                         JsonNumber(b.host_us), JsonNumber(b.submit_us), JsonNumber(b.wait_us));
}

// A bracket probe's bytes/s, null when the run was not bracketed.
std::string ProbeJson(const BenchReport& r, double bytes_per_second) {
  return r.bracket_probes.empty() ? std::string("null") : JsonNumber(bytes_per_second);
}

// Where the weights ended up, as the text report says it.
std::string PlacementLabel(const BenchReport& r) {
  if (r.weights_imported) return "the artifact's file mapping imported (not copied)";
  std::string label = "copied into device memory";
  if (r.q6_k_conversions != 0) {
    absl::StrAppendFormat(&label, ", %d Q6_K matrices converted to Q8_0", r.q6_k_conversions);
  }
  if (r.panel_matrices != 0) {
    absl::StrAppendFormat(&label, ", %d matrices as panels of the device's preferred layout",
                          r.panel_matrices);
  }
  return label;
}

}  // namespace

ModelShape ModelShape::Of(const runtime::ModelInfo& info) {
  ModelShape shape;
  shape.architecture = info.architecture;
  shape.name = info.name;
  shape.vocab_size = info.vocab_size;
  shape.dim = info.dim;
  shape.n_layers = info.n_layers;
  shape.n_heads = info.n_heads;
  shape.n_kv_heads = info.n_kv_heads;
  shape.ffn_dim = info.ffn_dim;
  shape.kv_capacity = info.kv_capacity;
  shape.weight_bytes = info.weight_bytes;
  return shape;
}

double BenchReport::DecodeBytesPerToken(const DecodeResult& decode) const {
  return traffic.BytesPerToken(decode.mean_visible_slots);
}

double BenchReport::CpuShare(const DecodeResult& decode) const {
  return AvailableCpuShare(decode.competitor_cores, online_cores,
                           static_cast<int>(compute_units));
}

double BenchReport::DecodeBandwidth(const DecodeResult& decode) const {
  if (decode.probe_before_bytes_per_second > 0 && decode.probe_after_bytes_per_second > 0) {
    return (decode.probe_before_bytes_per_second + decode.probe_after_bytes_per_second) / 2;
  }
  return bandwidth.bytes_per_second;
}

bool BenchReport::ProbesSteady(const DecodeResult& decode) const {
  const double before = decode.probe_before_bytes_per_second;
  const double after = decode.probe_after_bytes_per_second;
  return before > 0 && after > 0 &&
         std::abs(before - after) <= kSteadyProbeTolerance * (before + after) / 2;
}

double BenchReport::DecodeLimit(const DecodeResult& decode) const {
  return DecodeBandwidth(decode) / DecodeBytesPerToken(decode);
}

std::string FormatText(const BenchReport& r) {
  const ModelShape& m = r.shape;
  std::string out = absl::StrFormat(
      "npu-bench: %s\n"
      "device: %s, %d compute units\n"
      "model: %s \"%s\", vocab %d, dim %d, %d layers, %d heads (%d kv), ffn %d, "
      "KV cache %d slots\n"
      "weights: %s; a decode step streams %s of them%s + %s per visible KV slot%s\n"
      "placement: %s (--placement %s), loaded in %.0f ms\n"
      "each figure: median of %d timed repetitions after %d warm-up\n",
      r.model, r.device, r.compute_units, m.architecture, m.name, m.vocab_size, m.dim,
      m.n_layers, m.n_heads, m.n_kv_heads, m.ffn_dim, m.kv_capacity, HumanBytes(m.weight_bytes),
      HumanBytes(r.traffic.weight_bytes),
      r.traffic.gathered_embedding_bytes > 0
          ? absl::StrFormat(" (the %s embedding is only gathered)",
                            HumanBytes(r.traffic.gathered_embedding_bytes))
          : std::string(" (embedding tied to the output: streamed)"),
      HumanBytes(r.traffic.kv_bytes_per_slot),
      r.traffic.ring_slots > 0
          ? absl::StrFormat(" (+ %s per slot up to the %d of the sliding-window layers' rings)",
                            HumanBytes(r.traffic.ring_kv_bytes_per_slot), r.traffic.ring_slots)
          : std::string(),
      PlacementLabel(r), r.placement_requested, r.load_ms, r.reps, r.warmups);

  absl::StrAppend(&out, "\nprefill\n",
                  absl::StrFormat("%8s %7s %11s %10s %12s %12s %12s\n", "tokens", "graphs",
                                  "median ms", "tokens/s", "host us/tok", "submit us/tok",
                                  "wait us/tok"));
  for (const PrefillResult& p : r.results.prefill) {
    absl::StrAppend(&out, absl::StrFormat("%8d %7d %11.2f %10.1f %12.2f %12.2f %12.2f\n",
                                          p.tokens, p.graph_runs, p.median_seconds * 1e3,
                                          p.tokens_per_second, p.per_token.host_us,
                                          p.per_token.submit_us, p.per_token.wait_us));
  }

  absl::StrAppend(&out, absl::StrFormat("\ntime to first token (%d-token prompt): %.2f ms\n",
                                        r.results.time_to_first_token.prompt_tokens,
                                        r.results.time_to_first_token.median_ms));

  absl::StrAppend(&out, "\ndecode\n",
                  absl::StrFormat("%5s %8s %10s %10s %13s %11s %9s %9s %9s %9s\n", "fill",
                                  "slots", "ms/token", "tokens/s", "probes GB/s", "limit tok/s",
                                  "of limit", "host us", "submit us", "wait us"));
  for (const DecodeResult& d : r.results.decode) {
    const double limit = r.DecodeLimit(d);
    const std::string probes =
        r.bracket_probes.empty()
            ? std::string("-")
            : absl::StrFormat("%.1f/%.1f%s", d.probe_before_bytes_per_second / kGB,
                              d.probe_after_bytes_per_second / kGB,
                              r.ProbesSteady(d) ? " " : "*");
    absl::StrAppend(
        &out,
        absl::StrFormat("%4d%% %8.0f %10.3f %10.1f %13s %11.1f %8.1f%% %9.1f %9.1f %9.1f\n",
                        d.fill_percent, d.mean_visible_slots, d.median_ms_per_token,
                        d.tokens_per_second, probes, limit, 100 * d.tokens_per_second / limit,
                        d.per_token.host_us, d.per_token.submit_us, d.per_token.wait_us));
  }
  absl::StrAppend(
      &out, r.bracket_probes.empty()
                ? absl::StrFormat("limit: the read bandwidth below, measured after the decode "
                                  "runs (%s)\n",
                                  r.bracket_unavailable)
                : absl::StrFormat(
                      "limit: the mean of the read bandwidth probed right before and right "
                      "after each fill's repetitions (before/after in \"probes\"); * = the "
                      "probes differ by more than %.0f%%: the bandwidth moved during the fill, "
                      "its \"of limit\" is not a measure of the decode loop\n",
                      100 * kSteadyProbeTolerance));
  if (r.contention_processes > 0) {
    for (const DecodeResult& d : r.results.decode) {
      absl::StrAppend(&out, absl::StrFormat(
                                "competing load at %d%% fill: %d busy processes used %.2f of "
                                "%d cores; CPU share left to the device's %d units: %.0f%%\n",
                                d.fill_percent, r.contention_processes, d.competitor_cores,
                                r.online_cores, r.compute_units, 100 * r.CpuShare(d)));
    }
  }
  if (r.results.decode.size() >= 2) {
    absl::StrAppend(&out, absl::StrFormat("decode speed %s fill: %.1f%%\n",
                                          FillRatioLabel(r.results),
                                          100 * FillRatio(r.results)));
  }

  if (!r.batched_decode.empty()) {
    absl::StrAppend(
        &out, "\nbatched decode (all lanes active; CPU = the process's CPU time, all threads)\n",
        absl::StrFormat("%5s %10s %10s %12s %13s %14s\n", "lanes", "ms/step", "tokens/s",
                        "CPU ms/step", "CPU ms/token", "tok/CPU-s vs 1"));
    for (const BatchedDecodeResult& b : r.batched_decode) {
      const double ratio = CpuEfficiencyVsOneLane(r.batched_decode, b);
      absl::StrAppend(&out, absl::StrFormat("%5d %10.3f %10.1f %12.3f %13.3f %14s\n", b.lanes,
                                            b.median_ms_per_step, b.tokens_per_second(),
                                            b.median_cpu_ms_per_step, b.cpu_ms_per_token(),
                                            ratio > 0 ? absl::StrFormat("%.2fx", ratio) : "-"));
    }
  }

  absl::StrAppend(
      &out, "\nmemory\n",
      absl::StrFormat("peak RSS: %.1f MiB (the bandwidth probes' buffers not counted)\n"
                      "read bandwidth: %.2f GB/s (%d threads x %d streams %s, %.0f MiB "
                      "buffer, best of %d per read pattern)",
                      r.peak_rss_mib, r.bandwidth.bytes_per_second / kGB, r.bandwidth.threads,
                      r.bandwidth.pattern.streams,
                      r.bandwidth.pattern.prefetch ? "with prefetches" : "without prefetches",
                      r.bandwidth.buffer_bytes / double(1 << 20), r.bandwidth.runs));
  if (!r.bracket_probes.empty()) {
    const auto [slowest, fastest] =
        std::minmax_element(r.bracket_probes.begin(), r.bracket_probes.end(), SlowerThan);
    absl::StrAppend(&out, absl::StrFormat(", the fastest of %d probes around the decode fills; "
                                          "they read %.2f-%.2f GB/s",
                                          r.bracket_probes.size(), slowest->bytes_per_second / kGB,
                                          fastest->bytes_per_second / kGB));
  }
  absl::StrAppend(&out, "\n");
  if (r.cpu_stolen_fraction < 0) {
    absl::StrAppend(&out, "cpu steal: unknown (/proc/stat unreadable)\n");
  } else {
    absl::StrAppend(
        &out, absl::StrFormat("cpu steal: %.1f%% of this VM's CPU time was taken by the "
                              "hypervisor for other guests during the measurements%s\n",
                              100 * r.cpu_stolen_fraction,
                              r.cpu_stolen_fraction > kStealWarningFraction
                                  ? " (a busy VM host: the wall-clock figures above are low by "
                                    "an unknown amount; compare runs without steal)"
                                  : ""));
  }
  return out;
}

std::string FormatJson(const BenchReport& r) {
  const ModelShape& m = r.shape;
  std::string out = absl::StrFormat(
      "{\n  \"model\": %s,\n  \"device\": %s,\n  \"compute_units\": %d,\n"
      "  \"shape\": {\"architecture\": %s, \"name\": %s, \"vocab_size\": %d, \"dim\": %d, "
      "\"n_layers\": %d, \"n_heads\": %d, \"n_kv_heads\": %d, \"ffn_dim\": %d, "
      "\"kv_capacity\": %d, \"weight_bytes\": %d},\n"
      "  \"decode_traffic\": {\"weight_bytes\": %d, \"gathered_embedding_bytes\": %d, "
      "\"kv_bytes_per_slot\": %d, \"ring_kv_bytes_per_slot\": %d, \"ring_slots\": %d},\n"
      "  \"placement\": {\"requested\": %s, \"weights_imported\": %s, \"panel_matrices\": %d, "
      "\"q6_k_conversions\": %d, \"load_ms\": %s},\n"
      "  \"reps\": %d,\n  \"warmups\": %d,\n",
      JsonQuote(r.model), JsonQuote(r.device), r.compute_units, JsonQuote(m.architecture),
      JsonQuote(m.name), m.vocab_size, m.dim, m.n_layers, m.n_heads, m.n_kv_heads, m.ffn_dim,
      m.kv_capacity, m.weight_bytes, r.traffic.weight_bytes, r.traffic.gathered_embedding_bytes,
      r.traffic.kv_bytes_per_slot, r.traffic.ring_kv_bytes_per_slot, r.traffic.ring_slots,
      JsonQuote(r.placement_requested),
      r.weights_imported ? "true" : "false", r.panel_matrices, r.q6_k_conversions,
      JsonNumber(r.load_ms), r.reps,
      r.warmups);

  absl::StrAppend(&out, "  \"prefill\": [");
  for (size_t i = 0; i < r.results.prefill.size(); ++i) {
    const PrefillResult& p = r.results.prefill[i];
    absl::StrAppend(&out, i ? ",\n    " : "\n    ",
                    absl::StrFormat(R"({"tokens": %d, "graph_runs": %d, "median_ms": %s, )"
                                    R"("tokens_per_second": %s, "per_token": %s})",
                                    p.tokens, p.graph_runs, JsonNumber(p.median_seconds * 1e3),
                                    JsonNumber(p.tokens_per_second),
                                    JsonBreakdown(p.per_token)));
  }
  absl::StrAppend(&out, "\n  ],\n",
                  absl::StrFormat("  \"time_to_first_token\": {\"prompt_tokens\": %d, "
                                  "\"median_ms\": %s},\n",
                                  r.results.time_to_first_token.prompt_tokens,
                                  JsonNumber(r.results.time_to_first_token.median_ms)));

  absl::StrAppend(&out, "  \"decode\": [");
  for (size_t i = 0; i < r.results.decode.size(); ++i) {
    const DecodeResult& d = r.results.decode[i];
    const double limit = r.DecodeLimit(d);
    absl::StrAppend(
        &out, i ? ",\n    " : "\n    ",
        absl::StrFormat(R"({"fill_percent": %d, "start_slots": %d, "mean_visible_slots": %s, )"
                        R"("steps": %d, "median_ms_per_token": %s, "tokens_per_second": %s, )"
                        R"("bytes_per_token": %s, "probe_before_bytes_per_second": %s, )"
                        R"("probe_after_bytes_per_second": %s, "probes_steady": %s, )"
                        R"("limit_tokens_per_second": %s, )"
                        R"("fraction_of_limit": %s, "per_token": %s, )"
                        R"("competing_processes": %d, "competitor_cores": %s, "cpu_share": %s})",
                        d.fill_percent, d.start_slots, JsonNumber(d.mean_visible_slots),
                        d.steps, JsonNumber(d.median_ms_per_token),
                        JsonNumber(d.tokens_per_second),
                        JsonNumber(r.DecodeBytesPerToken(d)),
                        ProbeJson(r, d.probe_before_bytes_per_second),
                        ProbeJson(r, d.probe_after_bytes_per_second),
                        r.bracket_probes.empty() ? "null"
                        : r.ProbesSteady(d)      ? "true"
                                                 : "false",
                        JsonNumber(limit),
                        JsonNumber(d.tokens_per_second / limit), JsonBreakdown(d.per_token),
                        r.contention_processes, JsonNumber(d.competitor_cores),
                        JsonNumber(r.CpuShare(d))));
  }
  absl::StrAppend(&out, "\n  ],\n");
  if (!r.batched_decode.empty()) {
    absl::StrAppend(&out, "  \"batched_decode\": [");
    for (size_t i = 0; i < r.batched_decode.size(); ++i) {
      const BatchedDecodeResult& b = r.batched_decode[i];
      const double ratio = CpuEfficiencyVsOneLane(r.batched_decode, b);
      absl::StrAppend(
          &out, i ? ",\n    " : "\n    ",
          absl::StrFormat(R"({"lanes": %d, "steps": %d, "median_ms_per_step": %s, )"
                          R"("tokens_per_second": %s, "cpu_ms_per_step": %s, )"
                          R"("cpu_ms_per_token": %s, "tokens_per_cpu_second": %s, )"
                          R"("cpu_efficiency_vs_1_lane": %s})",
                          b.lanes, b.steps, JsonNumber(b.median_ms_per_step),
                          JsonNumber(b.tokens_per_second()), JsonNumber(b.median_cpu_ms_per_step),
                          JsonNumber(b.cpu_ms_per_token()), JsonNumber(b.tokens_per_cpu_second()),
                          ratio > 0 ? JsonNumber(ratio) : "null"));
    }
    absl::StrAppend(&out, "\n  ],\n");
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("  \"decode_fill_ratio\": %s,\n"
                      "  \"peak_rss_mib\": %s,\n"
                      "  \"read_bandwidth\": {\"bytes_per_second\": %s, \"buffer_bytes\": %d, "
                      "\"threads\": %d, \"streams_per_thread\": %d, \"prefetch\": %s, "
                      "\"runs\": %d, "
                      "\"bracket_probes\": [%s], \"bracket_unavailable\": %s},\n"
                      "  \"cpu_stolen_fraction\": %s\n}\n",
                      r.results.decode.size() >= 2 ? JsonNumber(FillRatio(r.results)) : "null",
                      JsonNumber(r.peak_rss_mib), JsonNumber(r.bandwidth.bytes_per_second),
                      r.bandwidth.buffer_bytes, r.bandwidth.threads,
                      r.bandwidth.pattern.streams, r.bandwidth.pattern.prefetch ? "true" : "false",
                      r.bandwidth.runs,
                      absl::StrJoin(r.bracket_probes, ", ",
                                    [](std::string* out, const ReadBandwidth& probe) {
                                      absl::StrAppend(out, JsonNumber(probe.bytes_per_second));
                                    }),
                      r.bracket_probes.empty() ? JsonQuote(r.bracket_unavailable) : "null",
                      r.cpu_stolen_fraction < 0 ? "null" : JsonNumber(r.cpu_stolen_fraction)));
  return out;
}

}  // namespace lnpu::bench
