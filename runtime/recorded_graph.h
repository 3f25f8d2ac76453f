// A graph's command streams recorded into a command buffer, and running
// them as one step: each job after the previous one (chained by in-fences
// when the device has them), then waiting for the last. Shared by
// Sequence (the graphs of one sequence) and DecodeBatch (the batched
// decode graphs of several); internal to the runtime.
//
// Thread-safety: RunRecordedGraph uses `fences` as scratch; one call per
// `fences` at a time.
#ifndef RUNTIME_RECORDED_GRAPH_H_
#define RUNTIME_RECORDED_GRAPH_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kernel_iface/driver/device.h"
#include "runtime/program.h"
#include "runtime/step_timeline.h"

namespace lnpu::runtime {

// Deadline of one graph run.
inline constexpr absl::Duration kStepTimeout = absl::Seconds(60);

// A recorded stream, ready to submit.
struct RecordedStream {
  uint32_t engine = 0;
  uint32_t offset = 0;  // in the command buffer
  uint32_t size = 0;
  std::vector<uint32_t> bo_handles;  // sorted, unique
};

// Time spent in the device calls of steps.
struct DeviceTime {
  absl::Duration submit;  // in Device::Submit
  absl::Duration wait;    // in Device::Wait
};

// Stores `value` as element `index` of the I32 array at `array` (mapped
// IO memory, possibly unaligned for the host).
inline void StoreI32(uint8_t* array, size_t index, int32_t value) {
  std::memcpy(array + index * sizeof(int32_t), &value, sizeof(value));
}

// Times the observed runs of a step observer: the host's submit and wait
// times, and on a device with DRM_LNPU_CAP_PROFILING the device's job and
// command times (each job submitted with DRM_LNPU_SUBMIT_PROFILE into one
// mapped profile buffer per stream, sized for the largest of the program's
// graphs, batched decode graphs included).
// Nothing is timed while no observer is set. Used by Sequence and
// DecodeBatch for their steps.
//
// Thread-safety: one run at a time (the owner's stepping thread).
class StepRecorder {
 public:
  using Observer = std::function<void(const StepTimeline&)>;

  // Sets the observer (an empty one removes it and frees the buffers).
  // Errors: allocating or mapping the profile buffers; nothing changes
  // then.
  absl::Status SetObserver(Device& device, const Program& program, Observer observer);
  bool observing() const { return static_cast<bool>(observer_); }

  // Starts the timeline of a run of `graph` (of the program the observer
  // was set for), whose commands are recorded in `command_image`, for
  // `tokens` real rows. Precondition: observing().
  void Begin(const GraphSpec& graph, absl::Span<const uint8_t> command_image, uint32_t tokens);
  // The run's submits and waits go to the timeline's jobs and waits; the
  // device's times to the profile buffers (RunRecordedGraph).
  StepTimeline& timeline() { return timeline_; }
  const Buffer* profile(size_t stream) const {
    return profile_buffers_.empty() ? nullptr : &profile_buffers_[stream];
  }
  // Ends the run that Begin started and completed: reads the device's
  // times and calls the observer with the timeline.
  void Finish();

 private:
  Observer observer_;
  std::vector<Buffer> profile_buffers_;
  StepTimeline timeline_;  // the current run's
};

// Runs `streams` (of `commands`) in order and waits for the last, at most
// until `deadline`. `fences` is cleared and receives the jobs' fences (its
// capacity should hold streams.size(), so that nothing is allocated).
// With `recorder` (observing, Begin called), times the run into it
// (nothing is timed without).
// Errors: the device's, naming graph `graph_name`, the job (engine, index)
// and its own cause: a failed job cancels the jobs chained after it, so
// the first failed job is reported.
absl::Status RunRecordedGraph(Device& device, const Buffer& commands,
                              absl::Span<const RecordedStream> streams, bool chain_with_fences,
                              const std::string& graph_name, absl::Time deadline,
                              std::vector<uint64_t>& fences, DeviceTime& time,
                              StepRecorder* recorder = nullptr);

}  // namespace lnpu::runtime

#endif  // RUNTIME_RECORDED_GRAPH_H_
