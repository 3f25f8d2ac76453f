// SoftNpuFile: one open file of the software NPU (the file layer). It owns
// the file's buffer handles, mmap offsets and mappings, and fence table,
// and implements every ioctl of the UAPI against them.
//
// Ioctls are dispatched as DRM core does: by type and number, not by the
// argument size encoded in the request; min(request size, struct size)
// bytes are copied in (the rest zero-filled), and the same amount copied
// back out, so callers built against an older (smaller) struct keep
// working.
//
// Handles are per file, non-zero and never reused while the file lives.
// Fences are per-file sequence numbers starting at 1. The table keeps every
// fence that has not yet signalled, plus the failed ones, so that WAIT on an
// old fence still reports its error; a fence that completed without error is
// only remembered as being below the retirement watermark.
//
// Thread-safety: all KernelFile methods may be called concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_SOFT_NPU_FILE_H_
#define KERNEL_IFACE_SOFTNPU_SOFT_NPU_FILE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "kernel_iface/driver/kernel_file.h"
#include "kernel_iface/softnpu/buffer_object.h"
#include "kernel_iface/softnpu/fence.h"
#include "kernel_iface/softnpu/file_context.h"
#include "kernel_iface/softnpu/job.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/softnpu/validated_stream_cache.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {

class SoftNpuFile final : public KernelFile {
 public:
  // `client_id` is unique among the device's files (drm-client-id).
  SoftNpuFile(std::shared_ptr<SoftNpu> device, uint64_t client_id);
  ~SoftNpuFile() override = default;
  SoftNpuFile(const SoftNpuFile&) = delete;
  SoftNpuFile& operator=(const SoftNpuFile&) = delete;

  int Ioctl(unsigned long request, void* arg) override;
  // `offset` is a BO_INFO mmap_offset of a buffer whose handle is open in
  // this file; 0 < length <= its size. Returns the buffer's memory itself.
  // The mapping keeps the buffer alive until Munmap (or the file closes).
  int Mmap(uint64_t length, uint64_t offset, void** addr) override;
  // `addr` and `length` of an earlier Mmap.
  int Munmap(void* addr, uint64_t length) override;
  std::string Describe() const override;
  // drm-driver, drm-client-id, drm-engine-{compute,dma} (busy ns),
  // drm-{total,shared,resident}-memory (device-memory buffers with a handle
  // in this file) and drm-{total,shared}-userptr (imported buffers).
  std::string FdInfo() const override;
  std::string LastRejection() const override;

 private:
  // Runs `handler` on a kernel copy of the ioctl argument `arg` (EFAULT if
  // null), copying as much of it in and out as `request` encodes.
  template <typename Args>
  int Call(int (SoftNpuFile::*handler)(Args&), unsigned long request,
           void* arg);

  int Version(drm_version& args);
  int GemClose(drm_gem_close& args);
  int GetParam(drm_lnpu_get_param& args);
  int BoCreate(drm_lnpu_bo_create& args);
  int BoInfo(drm_lnpu_bo_info& args);
  int Submit(drm_lnpu_submit& args);
  int Wait(drm_lnpu_wait& args);

  // Checks the submit's buffers, in-fences and command stream and fills
  // `job`. Returns 0 or the errno for SUBMIT.
  int PrepareJob(const drm_lnpu_submit& args, Job& job);

  // Sets *fence to fence `id` of this file: null if it completed without
  // error long ago. Returns false if this file never issued `id`.
  bool LookupFence(uint64_t id, std::shared_ptr<Fence>* fence)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves signalled fences off the front of the unretired list.
  void RetireSignalledFences() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<SoftNpu> device_;
  const std::shared_ptr<FileContext> context_;

  struct Mapping {
    std::shared_ptr<BufferObject> buffer;
    uint64_t count = 0;  // Mmap calls not yet undone by Munmap
  };

  mutable std::mutex mu_;
  absl::flat_hash_map<uint32_t, std::shared_ptr<BufferObject>> handles_
      ABSL_GUARDED_BY(mu_);
  // The buffers of handles_ that can be mapped (not imported), by mmap
  // offset.
  absl::flat_hash_map<uint64_t, std::shared_ptr<BufferObject>> mmap_offsets_
      ABSL_GUARDED_BY(mu_);
  uint32_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  // Keyed by (address, length).
  absl::flat_hash_map<std::pair<uintptr_t, uint64_t>, Mapping> mappings_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_fence_ ABSL_GUARDED_BY(mu_) = 1;
  // Fences first_unretired_fence_ .. next_fence_ - 1.
  uint64_t first_unretired_fence_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<std::shared_ptr<Fence>> unretired_fences_ ABSL_GUARDED_BY(mu_);
  // Retired fences that failed, by id.
  absl::flat_hash_map<uint64_t, std::shared_ptr<Fence>> failed_fences_
      ABSL_GUARDED_BY(mu_);
  // The verdicts of the streams this file submitted (its own lock).
  ValidatedStreamCache validated_streams_;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_SOFT_NPU_FILE_H_
