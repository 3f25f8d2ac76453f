// The software NPU's command set: validation and execution of each UAPI
// command (kernel_iface/uapi/drm/lnpu_accel.h).
//
// The job layer (kernel_iface/softnpu/) parses a submitted stream with
// ValidateCommand before anything runs, checks every returned access range
// against the job's buffers, and later runs each command with
// ExecuteCommand on the engine's thread.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_COMMAND_SET_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_COMMAND_SET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {

// One device-memory range a command reads or writes.
struct OperandAccess {
  uint64_t addr = 0;
  uint64_t bytes = 0;
  bool write = false;
};

// Translates device addresses to host pointers while a job runs.
class DeviceMemoryView {
 public:
  virtual ~DeviceMemoryView() = default;
  // Host pointer of device address `addr`. Only called with addresses
  // inside ranges that ValidateCommand returned for the running job.
  virtual uint8_t* Translate(uint64_t addr) const = 0;
};

// Execution resources of one engine: worker threads and scratch memory.
// Not thread-safe: used by one engine thread at a time.
class ComputeContext {
 public:
  // `threads` >= 1 workers take part in each command (the calling engine
  // thread counts as one).
  explicit ComputeContext(int threads);
  ~ComputeContext();
  ComputeContext(const ComputeContext&) = delete;
  ComputeContext& operator=(const ComputeContext&) = delete;

  int threads() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// "LNPU_OP_<NAME>" of a known opcode, "command" otherwise (messages,
// profiles).
const char* OpcodeName(uint32_t opcode);

// Validates the command that starts at bytes[0] for `engine`
// (DRM_LNPU_ENGINE_*): header, opcode served by the engine, size, flags,
// pad, dtypes, dimensions, address alignment, overlap rules. On success
// returns the command's size in bytes and appends every memory range it
// touches to *accesses. Errors are InvalidArgument naming the opcode, the
// field and the rule broken.
absl::StatusOr<uint32_t> ValidateCommand(
    uint32_t engine, absl::Span<const uint8_t> bytes,
    std::vector<OperandAccess>* accesses);

// Runs a command that ValidateCommand accepted. A non-OK result faults the
// job; it is returned for data-dependent errors only (an index outside its
// table, a negative position), with a message naming them.
absl::Status ExecuteCommand(const lnpu_cmd_header& command,
                            const DeviceMemoryView& memory,
                            ComputeContext& context);

// Command groups. Consecutive MATMULs that read the same activations (the
// Q, K and V projections of a layer, or its gate and up ones) run as one
// parallel loop (compute::MatmulGroup): the workers join once per group
// rather than once per command. A group gives the results of its commands
// run one after another, bit for bit; only independent commands are
// grouped. At most kMaxCommandGroup commands form a group.
inline constexpr size_t kMaxCommandGroup = 8;

// Whether the validated command `next`, which touches `next_accesses`, may
// join the group of validated commands that starts with `first` and
// touches `group_accesses` (ValidateCommand's ranges of all its members):
// both are MATMULs on the quantized GEMV (compute::RunsOnQuantGemv:
// decode, batched decode, short chunks) with the same src, rows and k, and
// nothing `next` writes is touched by the group, nor anything it reads
// written by it.
bool JoinsCommandGroup(const lnpu_cmd_header& first,
                       absl::Span<const OperandAccess> group_accesses,
                       const lnpu_cmd_header& next,
                       absl::Span<const OperandAccess> next_accesses);

// Runs a group of 1 to kMaxCommandGroup commands that JoinsCommandGroup
// admitted (one command: ExecuteCommand). Another size, or a group of
// several commands that are not all MATMULs, is InvalidArgument.
absl::Status ExecuteCommandGroup(absl::Span<const lnpu_cmd_header* const> group,
                                 const DeviceMemoryView& memory, ComputeContext& context);

// The relative cost of a validated command within its group, by which a
// profiled group's time is divided among its commands: the weight bytes a
// MATMUL reads.
uint64_t CommandGroupShare(const lnpu_cmd_header& command);

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_COMMAND_SET_H_
