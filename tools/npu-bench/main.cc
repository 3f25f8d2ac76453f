// npu-bench: the speed of a compiled model on a device, against the limit
// the machine's memory bandwidth allows. Usage: command_line.h (kUsage).
//
// Order of a run: load, prefill at each length, time to first token,
// decode at each cache fill, each fill bracketed by read-bandwidth probes
// with as many threads as the device has compute units, peak RSS (the
// probes' buffers not counted), batched decode of each --batch-lanes count
// (its lanes are not in the peak RSS). When the peak cannot be lowered
// after a probe (peak_rss.h), one probe after everything instead. With
// --profile: load, one profiled prefill and decode step (step_profile.h)
// and one batched step of each --batch-lanes count, then the bandwidth.
// With --trace the timed graph runs are observed and written as a trace at
// the end. On the software NPU the job timeout is raised (OpenToolDevice).
// Exit status 0 on success, 1 with a message on stderr otherwise.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "runtime/model.h"
#include "tools/common/tool_device.h"
#include "tools/common/tool_main.h"
#include "tools/common/trace_writer.h"
#include "tools/npu-bench/batched_decode.h"
#include "tools/npu-bench/bench_report.h"
#include "tools/npu-bench/cpu_steal.h"
#include "tools/npu-bench/command_line.h"
#include "tools/npu-bench/decode_traffic.h"
#include "tools/npu-bench/model_benchmark.h"
#include "tools/npu-bench/peak_rss.h"
#include "tools/npu-bench/read_bandwidth.h"
#include "tools/npu-bench/step_profile.h"
#include "tools/npu-bench/synthetic_model.h"

namespace {

absl::Status Run(const lnpu::bench::CommandLine& line) {
  using namespace lnpu::bench;
  // Opened first: a trace that could not be written would be lost after
  // the whole run.
  std::unique_ptr<lnpu::tools::TraceWriter> trace;
  if (!line.trace_path.empty()) {
    LNPU_ASSIGN_OR_RETURN(trace, lnpu::tools::TraceWriter::Open(line.trace_path, {line.model_path}));
  }
  BenchReport report;
  std::unique_ptr<TemporaryArtifact> synthetic;
  std::string artifact_path = line.model_path;
  report.model = line.model_path;
  if (!line.preset.empty()) {
    std::string models_dir = line.models_dir;
    if (models_dir.empty()) {
      const char* env = std::getenv("LNPU_MODELS_DIR");
      models_dir = env != nullptr ? env : "models";
    }
    LNPU_ASSIGN_OR_RETURN(synthetic, CompileSyntheticModel(line.preset, line.weights, models_dir,
                                                                line.batch_lanes));
    artifact_path = synthetic->path();
    report.model = absl::StrCat("synthetic ", line.preset, " (", line.weights, " weights)");
  }

  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<lnpu::Device> device,
                        lnpu::tools::OpenToolDevice(line.device));
  LNPU_ASSIGN_OR_RETURN(const uint64_t units, device->GetParam(DRM_LNPU_PARAM_COMPUTE_UNITS));
  LNPU_ASSIGN_OR_RETURN(DecodeTraffic traffic, ReadDecodeTraffic(artifact_path));
  lnpu::runtime::LoadOptions load;
  if (line.placement == "copy") load.weights = lnpu::runtime::WeightPlacement::kCopy;
  if (line.placement == "import") load.weights = lnpu::runtime::WeightPlacement::kImport;
  load.panel_weights = line.weight_panels != "off";
  load.panel_scales_in_stream = line.weight_panels == "on";
  load.keep_q6_k = line.q6k == "keep";
  const absl::Time load_start = absl::Now();
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<lnpu::runtime::Model> model,
                        lnpu::runtime::Model::Load(std::move(device), artifact_path, load));
  report.load_ms = absl::ToDoubleMilliseconds(absl::Now() - load_start);
  report.placement_requested = line.placement;
  report.weights_imported = model->weights_imported();
  report.panel_matrices = model->panel_matrices();
  report.q6_k_conversions = model->q6_k_conversions();
  // A converted matrix is read as Q8_0.
  traffic.weight_bytes += model->q6_k_conversion_bytes();
  BatchedDecodeOptions batched;
  batched.lanes = line.batch_lanes;
  batched.steps = line.benchmark.decode_steps;
  batched.reps = line.benchmark.reps;
  batched.warmups = line.benchmark.warmups;
  batched.seed = line.benchmark.seed;
  if (line.profile) batched = ProfiledBatchedDecodeOptions(batched);
  // Refused before any measurement runs.
  LNPU_RETURN_IF_ERROR(CheckBatchedDecode(model->info(), batched));

  lnpu::runtime::Sequence::StepObserver observer;
  if (trace != nullptr) {
    observer = [&trace](const lnpu::runtime::StepTimeline& step) {
      trace->AddStep(step, "main");
    };
  }
  ReadBandwidthOptions bandwidth;
  bandwidth.buffer_bytes = line.bandwidth_bytes ? line.bandwidth_bytes : DefaultBufferBytes();
  bandwidth.threads = static_cast<int>(std::clamp<uint64_t>(units, 1, 1024));
  bandwidth.runs = line.bandwidth_runs;

  if (line.profile) {
    LNPU_ASSIGN_OR_RETURN(
        std::vector<StepProfile> profiles,
        ProfileModel(*model, line.benchmark.prompt_lengths.front(), line.benchmark.seed, observer));
    if (!batched.lanes.empty()) {
      LNPU_ASSIGN_OR_RETURN(std::vector<StepProfile> steps,
                            ProfileBatchedDecode(*model, batched, observer));
      for (StepProfile& step : steps) profiles.push_back(std::move(step));
    }
    LNPU_ASSIGN_OR_RETURN(const ReadBandwidth measured, MeasureReadBandwidth(bandwidth));
    const Roofline roofline{measured.bytes_per_second, BestMatmulRate(profiles)};
    std::cout << absl::StrFormat(
        "%s on %s\nroofline: read bandwidth %.2f GB/s (%d threads), compute %.2f GOP/s (the "
        "best MATMUL of the prefill); \"roofline\" = time at those limits / measured time\n",
        report.model, model->device().Describe(), roofline.bytes_per_second / 1e9, measured.threads,
        roofline.ops_per_second / 1e9);
    for (const StepProfile& profile : profiles) {
      std::cout << "\n" << FormatStepProfile(profile, roofline);
    }
    std::cout << std::flush;
    return trace != nullptr ? trace->Write() : absl::OkStatus();
  }

  ModelBenchmarkOptions options = line.benchmark;
  options.observer = observer;
  // Each decode fill is bracketed by bandwidth probes. A probe's buffer is
  // not the model's memory: the peak is taken before it and the kernel's
  // high-water mark lowered after it.
  LNPU_ASSIGN_OR_RETURN(report.peak_rss_mib, ReadPeakRssMiB());
  if (absl::Status reset = ResetPeakRss(); reset.ok()) {
    options.bandwidth_probe = [&]() -> absl::StatusOr<double> {
      LNPU_ASSIGN_OR_RETURN(const double peak, ReadPeakRssMiB());
      report.peak_rss_mib = std::max(report.peak_rss_mib, peak);
      LNPU_ASSIGN_OR_RETURN(const ReadBandwidth probe, MeasureReadBandwidth(bandwidth));
      LNPU_RETURN_IF_ERROR(ResetPeakRss());
      report.bracket_probes.push_back(probe);
      return probe.bytes_per_second;
    };
  } else {
    report.bracket_unavailable = absl::StrCat("not bracketed: ", reset.message());
  }
  const absl::StatusOr<CpuTimes> cpu_before = ReadCpuTimes();
  LNPU_ASSIGN_OR_RETURN(ModelBenchmarkResult results, RunModelBenchmark(*model, options));
  LNPU_ASSIGN_OR_RETURN(const double peak_after, ReadPeakRssMiB());
  report.peak_rss_mib = std::max(report.peak_rss_mib, peak_after);
  report.contention_processes = line.benchmark.contention_processes;
  report.online_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (!batched.lanes.empty()) {
    batched.observer = observer;
    LNPU_ASSIGN_OR_RETURN(report.batched_decode, RunBatchedDecode(*model, batched));
  }

  if (report.bracket_probes.empty()) {
    LNPU_ASSIGN_OR_RETURN(report.bandwidth, MeasureReadBandwidth(bandwidth));
  } else {
    report.bandwidth =
        *std::max_element(report.bracket_probes.begin(), report.bracket_probes.end(), SlowerThan);
  }
  if (const absl::StatusOr<CpuTimes> cpu_after = ReadCpuTimes(); cpu_before.ok() && cpu_after.ok()) {
    report.cpu_stolen_fraction = StolenFraction(*cpu_before, *cpu_after);
  }

  report.device = model->device().Describe();
  report.compute_units = units;
  report.shape = ModelShape::Of(model->info());
  report.reps = line.benchmark.reps;
  report.warmups = line.benchmark.warmups;
  report.traffic = traffic;
  report.results = std::move(results);
  std::cout << (line.json ? FormatJson(report) : FormatText(report)) << std::flush;
  return trace != nullptr ? trace->Write() : absl::OkStatus();
}

int Main(int argc, char** argv) {
  absl::StatusOr<std::optional<lnpu::bench::CommandLine>> line =
      lnpu::bench::ParseCommandLine(argc, argv);
  if (!line.ok()) {
    std::cerr << "npu-bench: " << line.status().message() << " (see npu-bench --help)\n";
    return 1;
  }
  if (!line->has_value()) return 0;  // --help
  if (absl::Status status = Run(**line); !status.ok()) {
    std::cerr << "npu-bench: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lnpu::tools::RunToolMain("npu-bench", [&] { return Main(argc, argv); });
}
