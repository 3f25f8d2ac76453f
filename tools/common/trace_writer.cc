#include "tools/common/trace_writer.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/file_io.h"
#include "base/status_macros.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "nlohmann/json.hpp"

namespace lnpu::tools {
namespace {

const char* EngineTrackName(uint32_t engine) {
  return engine == DRM_LNPU_ENGINE_DMA ? "DMA engine" : "compute engine";
}

// "LNPU_OP_MATMUL" -> "MATMUL".
std::string ShortOpcodeName(uint16_t opcode) {
  const std::string name = softnpu::OpcodeName(opcode);
  return name.rfind("LNPU_OP_", 0) == 0 ? name.substr(8) : name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(
    std::string path, absl::Span<const std::string> inputs) {
  LNPU_RETURN_IF_ERROR(CheckOutputPath(path, inputs, "trace file"));
  return std::unique_ptr<TraceWriter>(
      new TraceWriter(std::move(path), std::vector<std::string>(inputs.begin(), inputs.end())));
}

TraceWriter::TraceWriter(std::string path, std::vector<std::string> inputs)
    : path_(std::move(path)), inputs_(std::move(inputs)) {}

int TraceWriter::HostThreadLocked(absl::string_view thread) {
  auto it = std::find(host_threads_.begin(), host_threads_.end(), thread);
  if (it != host_threads_.end()) return static_cast<int>(it - host_threads_.begin()) + 1;
  host_threads_.emplace_back(thread);
  return static_cast<int>(host_threads_.size());
}

void TraceWriter::AddLocked(Event event) { events_.push_back(std::move(event)); }

void TraceWriter::AddHostSpan(absl::string_view name, absl::string_view category,
                              absl::string_view thread, const runtime::TimeSpan& span) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked({std::string(name), std::string(category), kHostProcess, HostThreadLocked(thread),
             span.start_ns, span.duration_ns(), ""});
}

void TraceWriter::AddStep(const runtime::StepTimeline& step, absl::string_view thread) {
  const runtime::GraphSpec& graph = *step.graph_spec;
  std::lock_guard<std::mutex> lock(mu_);
  const int tid = HostThreadLocked(thread);
  AddLocked({absl::StrCat("step ", graph.name), "runtime", kHostProcess, tid, step.step.start_ns,
             step.step.duration_ns(),
             nlohmann::json{{"graph", graph.name}, {"tokens", step.tokens}}.dump()});
  for (size_t j = 0; j < step.jobs.size(); ++j) {
    const runtime::JobTimeline& job = step.jobs[j];
    AddLocked({absl::StrCat("submit job ", j + 1), "runtime", kHostProcess, tid,
               job.submit.start_ns, job.submit.duration_ns(), ""});
    if (!step.device_profiled || job.device.end_ns == 0) continue;
    const runtime::StreamSpec& stream = graph.streams[j];
    AddLocked({absl::StrCat(graph.name, " job ", j + 1), "job", kDeviceProcess,
               static_cast<int>(job.engine), job.device.start_ns, job.device.duration_ns(),
               nlohmann::json{{"graph", graph.name}, {"job", j + 1},
                              {"commands", stream.commands.size()}}
                   .dump()});
    for (size_t c = 0; c < job.commands.size() && c < stream.commands.size(); ++c) {
      const runtime::CommandSpec& command = stream.commands[c];
      AddLocked({ShortOpcodeName(command.opcode), "command", kDeviceProcess,
                 static_cast<int>(job.engine), job.commands[c].start_ns,
                 job.commands[c].duration_ns(),
                 nlohmann::json{{"index", c}, {"layer", command.layer}, {"job", j + 1}}.dump()});
    }
  }
  for (const runtime::TimeSpan& wait : step.waits) {
    AddLocked({"wait", "runtime", kHostProcess, tid, wait.start_ns, wait.duration_ns(), ""});
  }
}

std::string TraceWriter::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Event& e : events_) origin = std::min(origin, e.start_ns);
  nlohmann::json events = nlohmann::json::array();
  auto metadata = [&](const char* what, int pid, int tid, const std::string& name) {
    nlohmann::json m{{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0) m["tid"] = tid;
    events.push_back(std::move(m));
  };
  metadata("process_name", kHostProcess, -1, "host");
  metadata("process_name", kDeviceProcess, -1, "NPU");
  for (size_t i = 0; i < host_threads_.size(); ++i) {
    metadata("thread_name", kHostProcess, static_cast<int>(i) + 1, host_threads_[i]);
  }
  for (uint32_t engine = 0; engine < DRM_LNPU_ENGINE_COUNT; ++engine) {
    metadata("thread_name", kDeviceProcess, static_cast<int>(engine), EngineTrackName(engine));
  }
  for (const Event& e : events_) {
    nlohmann::json event{{"name", e.name},
                         {"cat", e.category},
                         {"ph", "X"},
                         {"pid", e.pid},
                         {"tid", e.tid},
                         {"ts", (e.start_ns - origin) / 1e3},
                         {"dur", e.duration_ns / 1e3}};
    if (!e.args_json.empty()) event["args"] = nlohmann::json::parse(e.args_json);
    events.push_back(std::move(event));
  }
  return nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}}.dump();
}

absl::Status TraceWriter::Write() const {
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                        AtomicFileWriter::Create(path_, "trace file", inputs_));
  const std::string json = ToJson();
  LNPU_RETURN_IF_ERROR(file->Append(absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(json.data()), json.size())));
  return file->Commit();
}

}  // namespace lnpu::tools
