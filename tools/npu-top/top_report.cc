#include "tools/npu-top/top_report.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tools/common/json.h"

namespace lnpu::top {

const char kSoftwareNpuNote[] =
    "the device is the software NPU, which runs inside each process that "
    "opens it: its files are not in /proc, so no other process (npu-top "
    "included) can see their usage. A process reads its own with "
    "Device::Usage(); npu-top shows processes using lnpu kernel devices "
    "(/dev/accel/accel*)";

absl::StatusOr<DeviceCounters> ReadDeviceCounters(const Device& device) {
  DeviceCounters counters;
  const std::pair<uint32_t, uint64_t*> params[] = {
      {DRM_LNPU_PARAM_MEMORY_SIZE, &counters.memory_size},
      {DRM_LNPU_PARAM_MEMORY_USED, &counters.memory_used},
      {DRM_LNPU_PARAM_MEMORY_IMPORTED, &counters.memory_imported},
      {DRM_LNPU_PARAM_JOBS_SUBMITTED, &counters.jobs_submitted},
      {DRM_LNPU_PARAM_JOBS_COMPLETED, &counters.jobs_completed},
      {DRM_LNPU_PARAM_JOB_FAULTS, &counters.job_faults},
      {DRM_LNPU_PARAM_RESETS, &counters.resets},
      {DRM_LNPU_PARAM_JOBS_CANCELLED, &counters.jobs_cancelled},
  };
  for (const auto& [param, value] : params) {
    LNPU_ASSIGN_OR_RETURN(*value, device.GetParam(param));
  }
  return counters;
}

std::vector<ProcessUsage> SummarizeProcesses(const ClientScan& before, const ClientScan& after) {
  using ClientKey = std::tuple<int, std::string, uint64_t>;  // pid, node, id
  std::map<ClientKey, const DeviceUsage*> earlier;
  for (const ClientSample& client : before.clients) {
    earlier[{client.pid, client.node, client.usage.client_id}] = &client.usage;
  }
  const double seconds = absl::ToDoubleSeconds(after.taken - before.taken);
  // Counters only grow while a file is open; a smaller value means a
  // different file that reused the key (cannot happen: ids are never
  // reused), so it is taken as new.
  auto delta = [](uint64_t now, uint64_t then) { return now >= then ? now - then : now; };
  std::vector<ProcessUsage> processes;
  for (const ClientSample& client : after.clients) {
    if (processes.empty() || processes.back().pid != client.pid) {
      processes.push_back({});
      processes.back().pid = client.pid;
      processes.back().command = client.command;
    }
    ProcessUsage& process = processes.back();
    if (std::find(process.nodes.begin(), process.nodes.end(), client.node) ==
        process.nodes.end()) {
      process.nodes.push_back(client.node);
    }
    const DeviceUsage& now = client.usage;
    process.client_ids.push_back(now.client_id);
    process.compute_busy_ns += now.compute_busy_ns;
    process.dma_busy_ns += now.dma_busy_ns;
    process.jobs_submitted += now.jobs_submitted;
    process.memory_total_bytes += now.memory_total_bytes;
    process.memory_resident_bytes += now.memory_resident_bytes;
    process.userptr_total_bytes += now.userptr_total_bytes;
    const DeviceUsage zero;
    const auto found = earlier.find({client.pid, client.node, now.client_id});
    const DeviceUsage& then = found != earlier.end() ? *found->second : zero;
    if (seconds > 0) {
      process.compute_busy_percent +=
          100.0 * delta(now.compute_busy_ns, then.compute_busy_ns) / (seconds * 1e9);
      process.dma_busy_percent +=
          100.0 * delta(now.dma_busy_ns, then.dma_busy_ns) / (seconds * 1e9);
      process.jobs_per_second += delta(now.jobs_submitted, then.jobs_submitted) / seconds;
    }
  }
  return processes;
}

namespace {

// Bytes in the largest binary unit that keeps the number >= 1.
std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

// "/dev/accel/accel0" -> "accel0".
std::string NodeName(const std::string& node) {
  const size_t slash = node.rfind('/');
  return slash == std::string::npos ? node : node.substr(slash + 1);
}

}  // namespace

std::string FormatText(const TopReport& report) {
  std::string out = absl::StrFormat("npu-top: %s, interval %.1f s\n", report.device,
                                    report.interval_seconds);
  if (!report.note.empty()) absl::StrAppend(&out, "note: ", report.note, "\n");
  if (report.counters) {
    const DeviceCounters& c = *report.counters;
    absl::StrAppend(&out, "memory: ", HumanBytes(c.memory_used), " used of ",
                    HumanBytes(c.memory_size), ", ", HumanBytes(c.memory_imported),
                    " imported\n");
    absl::StrAppend(&out, "jobs: ", c.jobs_submitted, " submitted");
    if (report.device_jobs_per_second) {
      absl::StrAppendFormat(&out, " (%.1f/s)", *report.device_jobs_per_second);
    }
    absl::StrAppend(&out, ", ", c.jobs_completed, " completed, ", c.job_faults, " faulted, ",
                    c.jobs_cancelled, " cancelled, ", c.resets, " resets\n");
  } else if (!report.counters_error.empty()) {
    absl::StrAppend(&out, "device counters unavailable: ", report.counters_error, "\n");
  }
  absl::StrAppendFormat(&out, "%7s %-15s %-8s %5s %8s %6s %8s %10s %10s\n", "PID", "COMMAND",
                        "NODE", "FILES", "COMPUTE%", "DMA%", "JOBS/S", "MEMORY", "USERPTR");
  for (const ProcessUsage& p : report.processes) {
    std::vector<std::string> nodes;
    for (const std::string& node : p.nodes) nodes.push_back(NodeName(node));
    absl::StrAppendFormat(&out, "%7d %-15s %-8s %5d %8.1f %6.1f %8.1f %10s %10s\n", p.pid,
                          p.command, absl::StrJoin(nodes, ","), p.client_ids.size(),
                          p.compute_busy_percent, p.dma_busy_percent, p.jobs_per_second,
                          HumanBytes(p.memory_total_bytes), HumanBytes(p.userptr_total_bytes));
  }
  if (report.processes.empty()) absl::StrAppend(&out, "(no process has an lnpu device open)\n");
  if (report.unreadable_processes > 0) {
    absl::StrAppend(&out, report.unreadable_processes,
                    " processes of other users could not be examined (run as root to see "
                    "them)\n");
  }
  for (const std::string& error : report.errors) absl::StrAppend(&out, "error: ", error, "\n");
  return out;
}

std::string FormatJson(const TopReport& report) {
  tools::JsonWriter json;
  json.BeginObject().Key("device").String(report.device);
  json.Key("interval_seconds").Double(report.interval_seconds);
  json.Key("note").String(report.note);
  json.Key("counters");
  if (report.counters) {
    const DeviceCounters& c = *report.counters;
    json.BeginObject()
        .Key("memory_size")
        .Uint(c.memory_size)
        .Key("memory_used")
        .Uint(c.memory_used)
        .Key("memory_imported")
        .Uint(c.memory_imported)
        .Key("jobs_submitted")
        .Uint(c.jobs_submitted)
        .Key("jobs_completed")
        .Uint(c.jobs_completed)
        .Key("job_faults")
        .Uint(c.job_faults)
        .Key("resets")
        .Uint(c.resets)
        .Key("jobs_cancelled")
        .Uint(c.jobs_cancelled)
        .Key("jobs_per_second");
    if (report.device_jobs_per_second) {
      json.Double(*report.device_jobs_per_second);
    } else {
      json.Null();
    }
    json.EndObject();
  } else {
    json.Null();
    json.Key("counters_error").String(report.counters_error);
  }
  json.Key("processes").BeginArray();
  for (const ProcessUsage& p : report.processes) {
    json.BeginObject().Key("pid").Uint(static_cast<uint64_t>(p.pid));
    json.Key("command").String(p.command);
    json.Key("nodes").BeginArray();
    for (const std::string& node : p.nodes) json.String(node);
    json.EndArray().Key("client_ids").BeginArray();
    for (const uint64_t id : p.client_ids) json.Uint(id);
    json.EndArray()
        .Key("compute_busy_ns")
        .Uint(p.compute_busy_ns)
        .Key("dma_busy_ns")
        .Uint(p.dma_busy_ns)
        .Key("jobs_submitted")
        .Uint(p.jobs_submitted)
        .Key("memory_total_bytes")
        .Uint(p.memory_total_bytes)
        .Key("memory_resident_bytes")
        .Uint(p.memory_resident_bytes)
        .Key("userptr_total_bytes")
        .Uint(p.userptr_total_bytes)
        .Key("compute_busy_percent")
        .Double(p.compute_busy_percent)
        .Key("dma_busy_percent")
        .Double(p.dma_busy_percent)
        .Key("jobs_per_second")
        .Double(p.jobs_per_second)
        .EndObject();
  }
  json.EndArray();
  json.Key("unreadable_processes").Uint(static_cast<uint64_t>(report.unreadable_processes));
  json.Key("errors").BeginArray();
  for (const std::string& error : report.errors) json.String(error);
  json.EndArray().EndObject();
  return json.text();
}

}  // namespace lnpu::top
