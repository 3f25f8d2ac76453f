// The timeline of one graph run (a step): when the host submitted and
// waited for each job, and, on a device with DRM_LNPU_CAP_PROFILING, when
// the engine ran the job and each of its commands. What npu-bench
// --profile and the --trace files of the tools are built from.
//
// Times are CLOCK_MONOTONIC nanoseconds (the device's profile clock), so
// host and device times share one axis.
#ifndef RUNTIME_STEP_TIMELINE_H_
#define RUNTIME_STEP_TIMELINE_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "runtime/program.h"

namespace lnpu::runtime {

// CLOCK_MONOTONIC now, in nanoseconds (libstdc++'s steady_clock reads it).
inline int64_t MonotonicNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct TimeSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // >= start_ns; both 0 when it did not happen
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct JobTimeline {
  uint32_t engine = 0;  // DRM_LNPU_ENGINE_*
  TimeSpan submit;      // host: in Device::Submit
  // Device side, when profiled (else all zero / empty): the job on its
  // engine, and each command, parallel to StreamSpec::commands.
  TimeSpan device;
  std::vector<TimeSpan> commands;
};

struct StepTimeline {
  const GraphSpec* graph_spec = nullptr;  // the graph that ran: its streams and commands
  // The sequence's recorded command image (device addresses resolved),
  // which StreamSpec and CommandSpec offsets index.
  absl::Span<const uint8_t> command_image;
  uint32_t tokens = 0;                  // real rows of this run
  TimeSpan step;                        // host: the whole run
  std::vector<TimeSpan> waits;          // host: each Device::Wait
  std::vector<JobTimeline> jobs;        // one per stream, in order
  bool device_profiled = false;         // jobs carry device times
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_STEP_TIMELINE_H_
