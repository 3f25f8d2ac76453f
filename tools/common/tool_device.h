// The device a tool runs on, with a software NPU job timeout long enough
// for large models on a small or busy machine.
#ifndef TOOLS_COMMON_TOOL_DEVICE_H_
#define TOOLS_COMMON_TOOL_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kernel_iface/driver/device.h"
#include "runtime/recorded_graph.h"

namespace lnpu::tools {

// Half the longest time the runtime waits for one step (30 s of
// runtime::kStepTimeout's 60 s): a waiting thread runs the step's jobs
// itself only when its deadline lies beyond the job timeout (the software
// NPU's WAIT), and a step of several jobs then still fits its deadline.
inline const uint32_t kToolSoftJobTimeoutMs =
    static_cast<uint32_t>(absl::ToInt64Milliseconds(runtime::kStepTimeout) / 2);

// Device::Open(where); when that is the software NPU, a private software
// NPU like the default one (same memory size and compute threads) whose
// job timeout is `soft_job_timeout_ms` instead of the default 5 s, which
// long prefill graphs or the first steps of a multi-gigabyte model exceed
// under load. Errors: Device::Open's and GetParam's; InvalidArgument for
// a timeout SoftNpuOptions does not accept. Thread-safe.
absl::StatusOr<std::unique_ptr<Device>> OpenToolDevice(
    const std::string& where, uint32_t soft_job_timeout_ms = kToolSoftJobTimeoutMs);

}  // namespace lnpu::tools

#endif  // TOOLS_COMMON_TOOL_DEVICE_H_
