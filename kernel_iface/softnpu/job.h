// Job: one submitted command stream with everything it needs to run (the
// job layer of the software NPU).
//
// SUBMIT fills a job in two steps: the buffers and in-fences it names
// (AddBuffer, AddInFence, under the file's lock), then LoadCommands, which
// copies the stream out of the command buffer, so that rewriting that buffer
// after SUBMIT cannot change what was validated, and validates every command
// and every memory range it touches. Arm() attaches the job's fence and
// file context; the engine then runs it, using the job as the
// DeviceMemoryView that translates the device addresses of its buffers.
//
// Job objects are recycled by their engine (Clear() keeps the capacity of
// every container), so a steady stream of submits does not allocate.
//
// Thread-safety: filled by one thread, then handed to the engine thread;
// Translate() may be called concurrently by the engine's compute workers.
#ifndef KERNEL_IFACE_SOFTNPU_JOB_H_
#define KERNEL_IFACE_SOFTNPU_JOB_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "kernel_iface/softnpu/buffer_object.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/softnpu/diagnostic_log.h"
#include "kernel_iface/softnpu/fence.h"
#include "kernel_iface/softnpu/validated_stream_cache.h"
#include "kernel_iface/softnpu/wait_queue.h"
#include "kernel_iface/softnpu/file_context.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {

class Job final : public DeviceMemoryView {
 public:
  Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Drops every reference the job holds; keeps allocated capacity.
  void Clear();

  // A buffer the commands may touch. Listing one twice is harmless.
  void AddBuffer(std::shared_ptr<BufferObject> buffer);
  // A fence that must signal before the job starts.
  void AddInFence(std::shared_ptr<Fence> fence);

  // Copies `stream` and validates it for `engine`: every command must pass
  // ValidateCommand, every range it touches must lie inside one buffer
  // added before, and no range it writes may lie in a read-only buffer.
  // Then forms the command groups (group_size()). A stream `cache` holds
  // the verdict of (the same bytes over the same buffers) is not validated
  // again; an accepted one is added to it.
  // Returns 0 or EINVAL (reason in `log`). `stream` is a non-empty multiple
  // of 8 bytes.
  int LoadCommands(uint32_t engine, absl::Span<const uint8_t> stream,
                   ValidatedStreamCache& cache, DiagnosticLog& log);

  // With DRM_LNPU_SUBMIT_PROFILE: the BO the engine writes the job's
  // timings into (at least DRM_LNPU_PROFILE_BYTES(command_count()) bytes,
  // checked by the caller). Call after LoadCommands.
  void SetProfile(std::shared_ptr<BufferObject> profile);

  // Attaches the file context the job runs for and the fence it signals.
  void Arm(std::shared_ptr<FileContext> context, std::shared_ptr<Fence> fence);

  // --- Engine side.
  bool InFencesSignalled() const;
  // The error of the first failed in-fence, or 0. Requires
  // InFencesSignalled().
  int InFenceError() const;
  FileContext& context() { return *context_; }
  std::shared_ptr<FileContext> TakeContext() { return std::move(context_); }
  std::shared_ptr<Fence> TakeFence() { return std::move(fence_); }

  // The validated stream: commands start at offset 0 and follow each other
  // by header size up to command_bytes().
  uint32_t command_bytes() const { return command_bytes_; }
  const lnpu_cmd_header& command_at(uint32_t offset) const {
    return *reinterpret_cast<const lnpu_cmd_header*>(
        reinterpret_cast<const uint8_t*>(commands_.data()) + offset);
  }
  uint32_t command_count() const { return verdict_.command_count; }
  // How many commands, starting with command `index`, the engine runs as
  // one group (JoinsCommandGroup): >= 1 where a group starts, 0 for the
  // later members of a group.
  uint32_t group_size(uint32_t index) const { return verdict_.group_sizes[index]; }

  // Profiling (struct drm_lnpu_profile_header), all no-ops without a
  // profile BO. Times are CLOCK_MONOTONIC.
  bool profiled() const { return profile_ != nullptr; }
  // Writes the header with zero times and zeroes every command record: the
  // state of a job that has not run.
  void ClearProfile(uint32_t engine);
  void ProfileJob(MonotonicClock::time_point start,
                  MonotonicClock::time_point end);
  void ProfileCommand(uint32_t index, MonotonicClock::time_point start,
                      MonotonicClock::time_point end);

  // DeviceMemoryView.
  uint8_t* Translate(uint64_t addr) const override;

 private:
  // The buffer containing [addr, addr + bytes), or null. Requires buffers_
  // sorted by device address and free of duplicates.
  const BufferObject* FindBuffer(uint64_t addr, uint64_t bytes) const;

  std::vector<std::shared_ptr<BufferObject>> buffers_;
  std::vector<std::shared_ptr<Fence>> in_fences_;
  // The stream snapshot; uint64_t elements keep every command 8-byte
  // aligned, as the command structs require.
  std::vector<uint64_t> commands_;
  uint32_t command_bytes_ = 0;
  // command_count() and, per command, group_size().
  StreamVerdict verdict_;
  std::vector<ValidatedBuffer> validated_buffers_;  // the cache's key
  std::vector<OperandAccess> accesses_;  // validation scratch
  // The ranges the commands of the last group touch (validation scratch).
  std::vector<OperandAccess> group_accesses_;
  std::shared_ptr<FileContext> context_;
  std::shared_ptr<Fence> fence_;
  std::shared_ptr<BufferObject> profile_;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_JOB_H_
