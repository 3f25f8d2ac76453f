// TraceWriter: a Chrome / Perfetto trace (the JSON trace event format,
// openable in ui.perfetto.dev or chrome://tracing) of what the device and
// the host did: the jobs and commands of every observed graph run on the
// compute and DMA engines, and the host's submits, waits and whatever
// spans the program adds (tokenizer, sampling, requests).
//
// A writer belongs to one trace file, checked when the writer is opened:
// a program opens it before its work, so that a path that could never be
// written (a directory, a device node, the model itself) refuses the run
// instead of losing the trace at its end.
//
// Timestamps are CLOCK_MONOTONIC (runtime::MonotonicNanos()), written in
// microseconds relative to the first event. Nothing is recorded unless a
// program creates a writer (--trace FILE), so tracing costs nothing when
// off.
//
// Thread-safety: all methods may be called concurrently.
#ifndef TOOLS_COMMON_TRACE_WRITER_H_
#define TOOLS_COMMON_TRACE_WRITER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/step_timeline.h"

namespace lnpu::tools {

class TraceWriter {
 public:
  // Process ids of the trace's two tracks groups.
  static constexpr int kHostProcess = 1;
  static constexpr int kDeviceProcess = 2;  // thread = DRM_LNPU_ENGINE_*

  // A writer for the trace file `path`. The error of CheckOutputPath,
  // naming the path and what to do, if `path` could not be replaced by a
  // file or is one of `inputs` (the files the program reads).
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(
      std::string path, absl::Span<const std::string> inputs);

  // A complete event on the host track `thread` (names the host thread:
  // "main", "request 3", ...).
  void AddHostSpan(absl::string_view name, absl::string_view category,
                   absl::string_view thread, const runtime::TimeSpan& span);

  // Every event of an observed graph run: the step, its submits and waits
  // on the host track `thread`; its jobs and commands (opcode name, layer)
  // on the engines' tracks.
  void AddStep(const runtime::StepTimeline& step, absl::string_view thread);

  // Writes the trace to path() (atomically: a temporary, then rename).
  // Internal naming the path on I/O errors.
  absl::Status Write() const;

  const std::string& path() const { return path_; }

  // The trace document as JSON text.
  std::string ToJson() const;

 private:
  struct Event {
    std::string name;
    std::string category;
    int pid = 0;
    int tid = 0;
    int64_t start_ns = 0;
    int64_t duration_ns = 0;
    std::string args_json;  // "" or a JSON object
  };

  TraceWriter(std::string path, std::vector<std::string> inputs);

  int HostThreadLocked(absl::string_view thread);
  void AddLocked(Event event);

  const std::string path_;
  const std::vector<std::string> inputs_;
  mutable std::mutex mu_;
  std::vector<Event> events_;           // guarded by mu_
  std::vector<std::string> host_threads_;  // index + 1 = tid; guarded by mu_
};

}  // namespace lnpu::tools

#endif  // TOOLS_COMMON_TRACE_WRITER_H_
