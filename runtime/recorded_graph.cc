#include "runtime/recorded_graph.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::runtime {
namespace {

// `error` of job `index` of `streams`, naming the graph and the job.
absl::Status JobError(absl::Span<const RecordedStream> streams, const std::string& graph_name,
                      size_t index, const absl::Status& error) {
  const char* engine = streams[index].engine == DRM_LNPU_ENGINE_DMA ? "DMA" : "compute";
  return absl::Status(error.code(), absl::StrCat("graph '", graph_name, "': ", engine, " job ",
                                                 index + 1, " of ", streams.size(),
                                                 " failed: ", error.message()));
}

}  // namespace

absl::Status RunRecordedGraph(Device& device, const Buffer& commands,
                              absl::Span<const RecordedStream> streams, bool chain_with_fences,
                              const std::string& graph_name, absl::Time deadline,
                              std::vector<uint64_t>& fences, DeviceTime& time,
                              RunObservation* observation) {
  // Device::Wait, adding its duration to `time` (and to the timeline).
  const auto wait = [&](uint64_t fence) {
    const absl::Time wait_start = absl::Now();
    const int64_t wait_start_ns = observation != nullptr ? MonotonicNanos() : 0;
    absl::Status waited = device.Wait(fence, deadline);
    time.wait += absl::Now() - wait_start;
    if (observation != nullptr) {
      observation->timeline.waits.push_back({wait_start_ns, MonotonicNanos()});
    }
    return waited;
  };
  fences.clear();
  for (size_t i = 0; i < streams.size(); ++i) {
    const RecordedStream& stream = streams[i];
    if (i > 0 && !chain_with_fences) {
      absl::Status waited = wait(fences.back());
      if (!waited.ok()) return JobError(streams, graph_name, i - 1, waited);
    }
    SubmitArgs args;
    args.engine = stream.engine;
    args.cmd = &commands;
    args.cmd_offset = stream.offset;
    args.cmd_size = stream.size;
    args.bo_handles = stream.bo_handles;
    if (i > 0 && chain_with_fences) args.in_fences = absl::MakeConstSpan(&fences.back(), 1);
    TimeSpan* submit_span = nullptr;
    if (observation != nullptr) {
      if (!observation->profiles.empty()) args.profile = &observation->profiles[i];
      submit_span = &observation->timeline.jobs[i].submit;
      submit_span->start_ns = MonotonicNanos();
    }
    const absl::Time submit_start = absl::Now();
    absl::StatusOr<uint64_t> submitted = device.Submit(args);
    time.submit += absl::Now() - submit_start;
    if (submit_span != nullptr) submit_span->end_ns = MonotonicNanos();
    LNPU_RETURN_IF_ERROR(submitted.status());
    fences.push_back(*submitted);
  }
  absl::Status waited = wait(fences.back());
  if (!waited.ok()) {
    // The jobs before the last have all completed or failed, so these
    // waits return at once.
    for (size_t i = 0; i + 1 < fences.size(); ++i) {
      absl::Status earlier = device.Wait(fences[i], absl::Now());
      if (!earlier.ok()) return JobError(streams, graph_name, i, earlier);
    }
    return JobError(streams, graph_name, fences.size() - 1, waited);
  }
  return absl::OkStatus();
}

}  // namespace lnpu::runtime
