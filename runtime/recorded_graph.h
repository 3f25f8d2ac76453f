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
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kernel_iface/driver/device.h"
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

// What a run records for a step observer: the host's submit and wait
// times into `timeline` (its jobs sized to the streams by the caller) and,
// when `profiles` holds one buffer per stream, the device's command times
// into them (each job submitted with DRM_LNPU_SUBMIT_PROFILE).
struct RunObservation {
  StepTimeline& timeline;
  absl::Span<const Buffer> profiles;
};

// Runs `streams` (of `commands`) in order and waits for the last, at most
// until `deadline`. `fences` is cleared and receives the jobs' fences (its
// capacity should hold streams.size(), so that nothing is allocated).
// With `observation`, times the run into it (nothing is timed without).
// Errors: the device's, naming graph `graph_name`, the job (engine, index)
// and its own cause: a failed job cancels the jobs chained after it, so
// the first failed job is reported.
absl::Status RunRecordedGraph(Device& device, const Buffer& commands,
                              absl::Span<const RecordedStream> streams, bool chain_with_fences,
                              const std::string& graph_name, absl::Time deadline,
                              std::vector<uint64_t>& fences, DeviceTime& time,
                              RunObservation* observation = nullptr);

}  // namespace lnpu::runtime

#endif  // RUNTIME_RECORDED_GRAPH_H_
