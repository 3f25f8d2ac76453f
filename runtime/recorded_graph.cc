#include "runtime/recorded_graph.h"

#include <algorithm>
#include <utility>

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

absl::Status StepRecorder::SetObserver(Device& device, const Program& program,
                                       Observer observer) {
  if (!observer) {
    observer_ = nullptr;
    profile_buffers_.clear();
    return absl::OkStatus();
  }
  LNPU_ASSIGN_OR_RETURN(const uint64_t capabilities,
                        device.GetParam(DRM_LNPU_PARAM_CAPABILITIES));
  std::vector<Buffer> buffers;
  if ((capabilities & DRM_LNPU_CAP_PROFILING) != 0) {
    size_t streams = 0;
    uint64_t bytes = 0;
    for (const absl::Span<const GraphSpec> graphs : {program.graphs(), program.decode_batches()}) {
      for (const GraphSpec& graph : graphs) {
        streams = std::max(streams, graph.streams.size());
        for (const StreamSpec& stream : graph.streams) {
          bytes = std::max<uint64_t>(bytes, DRM_LNPU_PROFILE_BYTES(stream.commands.size()));
        }
      }
    }
    for (size_t i = 0; i < streams; ++i) {
      LNPU_ASSIGN_OR_RETURN(Buffer buffer, device.CreateBuffer(bytes));
      LNPU_RETURN_IF_ERROR(buffer.Map().status());
      buffers.push_back(std::move(buffer));
    }
  }
  observer_ = std::move(observer);
  profile_buffers_ = std::move(buffers);
  return absl::OkStatus();
}

void StepRecorder::Begin(const GraphSpec& spec, absl::Span<const uint8_t> command_image,
                         uint32_t tokens) {
  timeline_.graph_spec = &spec;
  timeline_.command_image = command_image;
  timeline_.tokens = tokens;
  timeline_.step = {MonotonicNanos(), 0};
  timeline_.waits.clear();
  timeline_.jobs.resize(spec.streams.size());
  timeline_.device_profiled = !profile_buffers_.empty();
  for (size_t i = 0; i < spec.streams.size(); ++i) {
    timeline_.jobs[i] = JobTimeline{};
    timeline_.jobs[i].engine = spec.streams[i].engine;
  }
}

void StepRecorder::Finish() {
  timeline_.step.end_ns = MonotonicNanos();
  if (timeline_.device_profiled) {
    for (size_t i = 0; i < timeline_.jobs.size(); ++i) {
      const uint8_t* data = profile_buffers_[i].mapped().data();
      drm_lnpu_profile_header header;
      std::memcpy(&header, data, sizeof header);
      JobTimeline& job = timeline_.jobs[i];
      job.device = {static_cast<int64_t>(header.job_start_ns),
                    static_cast<int64_t>(header.job_end_ns)};
      job.commands.resize(timeline_.graph_spec->streams[i].commands.size());
      for (size_t c = 0; c < job.commands.size() && c < header.command_count; ++c) {
        drm_lnpu_profile_command record;
        std::memcpy(&record, data + sizeof header + c * sizeof record, sizeof record);
        job.commands[c] = {static_cast<int64_t>(record.start_ns),
                           static_cast<int64_t>(record.end_ns)};
      }
    }
  }
  observer_(timeline_);
}

absl::Status RunRecordedGraph(Device& device, const Buffer& commands,
                              absl::Span<const RecordedStream> streams, bool chain_with_fences,
                              const std::string& graph_name, absl::Time deadline,
                              std::vector<uint64_t>& fences, DeviceTime& time,
                              StepRecorder* recorder) {
  // Device::Wait, adding its duration to `time` (and to the timeline).
  const auto wait = [&](uint64_t fence) {
    const absl::Time wait_start = absl::Now();
    const int64_t wait_start_ns = recorder != nullptr ? MonotonicNanos() : 0;
    absl::Status waited = device.Wait(fence, deadline);
    time.wait += absl::Now() - wait_start;
    if (recorder != nullptr) {
      recorder->timeline().waits.push_back({wait_start_ns, MonotonicNanos()});
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
    if (recorder != nullptr) {
      args.profile = recorder->profile(i);
      submit_span = &recorder->timeline().jobs[i].submit;
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
