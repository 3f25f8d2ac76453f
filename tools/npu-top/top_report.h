// TopReport: what npu-top prints for one refresh: the device-wide counters
// of the device it opened, and per process the usage of its lnpu files
// over the refresh interval (engine busy %, jobs/s) and now (memory),
// from two ClientScans; rendered as a text table or one JSON object.
// Thread-safety: none needed (values and pure functions).
#ifndef TOOLS_NPU_TOP_TOP_REPORT_H_
#define TOOLS_NPU_TOP_TOP_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernel_iface/driver/device.h"
#include "tools/npu-top/client_scan.h"

namespace lnpu::top {

// Device-wide figures (DRM_LNPU_PARAM_*) of one device, all files.
struct DeviceCounters {
  uint64_t memory_size = 0;
  uint64_t memory_used = 0;
  uint64_t memory_imported = 0;
  uint64_t jobs_submitted = 0;
  uint64_t jobs_completed = 0;
  uint64_t job_faults = 0;
  uint64_t resets = 0;
  uint64_t jobs_cancelled = 0;
};

// Reads the counters; the first failing GET_PARAM's error otherwise.
absl::StatusOr<DeviceCounters> ReadDeviceCounters(const Device& device);

// The lnpu files of one process, summed.
struct ProcessUsage {
  int pid = 0;
  std::string command;
  std::vector<std::string> nodes;    // distinct, in scan order
  std::vector<uint64_t> client_ids;  // one per open file (drm-client-id)
  // Since each file was opened.
  uint64_t compute_busy_ns = 0;
  uint64_t dma_busy_ns = 0;
  uint64_t jobs_submitted = 0;
  // Now.
  uint64_t memory_total_bytes = 0;
  uint64_t memory_resident_bytes = 0;
  uint64_t userptr_total_bytes = 0;
  // Over the interval between the two scans: busy time of each engine as a
  // percentage of the interval (added when a job ends, so a job longer than
  // the interval shows up at once when it ends), and SUBMITs per second. A
  // file absent from the earlier scan was opened in between and counts
  // from 0.
  double compute_busy_percent = 0;
  double dma_busy_percent = 0;
  double jobs_per_second = 0;
};

struct TopReport {
  std::string device;  // what npu-top opened (Device::Describe())
  double interval_seconds = 0;
  std::optional<DeviceCounters> counters;  // absent: see counters_error
  std::string counters_error;
  std::optional<double> device_jobs_per_second;  // with counters from both ends
  std::vector<ProcessUsage> processes;           // by pid
  int unreadable_processes = 0;
  std::vector<std::string> errors;  // fdinfo that did not parse
  // Why the view is empty by construction (the software NPU), else "".
  std::string note;
};

// The processes of `after`, with rates over [before.taken, after.taken].
std::vector<ProcessUsage> SummarizeProcesses(const ClientScan& before, const ClientScan& after);

// What npu-top says about the software NPU: it lives inside each process
// that uses it, so its files are not in /proc and no other process sees it.
extern const char kSoftwareNpuNote[];

std::string FormatText(const TopReport& report);
std::string FormatJson(const TopReport& report);

}  // namespace lnpu::top

#endif  // TOOLS_NPU_TOP_TOP_REPORT_H_
