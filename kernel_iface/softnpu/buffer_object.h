// Buffer objects and the device memory they are carved from (the GEM layer
// of the software NPU).
//
// A BufferObject is either zero-filled host memory (HugePageMemory: 2 MiB
// aligned and on huge pages where the kernel grants them) that stands in for
// device memory, or user memory
// imported in place (DRM_LNPU_BO_USERPTR), which it never frees and which
// is accounted apart from device memory. It is reference counted: the
// handle table of the file that created it, each mmap of it and each job
// that lists it hold a reference, and its memory returns to the device when
// the last one goes away.
//
// Device addresses and mmap offsets come from device-wide 64-bit spaces
// that never hand out a range twice, so a stale address can never alias a
// newer buffer.
//
// Thread-safety: BufferObject is immutable after creation (its contents are
// the user's); DeviceMemory may be used concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_BUFFER_OBJECT_H_
#define KERNEL_IFACE_SOFTNPU_BUFFER_OBJECT_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/huge_page_memory.h"
#include "kernel_iface/softnpu/diagnostic_log.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {

// Granule of buffer sizes, device addresses and mmap offsets
// (DRM_LNPU_PARAM_BO_ALIGNMENT).
inline constexpr uint64_t kBufferAlignment = 4096;

class DeviceMemory;

class BufferObject {
 public:
  ~BufferObject();
  BufferObject(const BufferObject&) = delete;
  BufferObject& operator=(const BufferObject&) = delete;

  uint64_t size() const { return size_; }  // a multiple of kBufferAlignment
  uint32_t flags() const { return flags_; }  // DRM_LNPU_BO_*
  uint64_t device_addr() const { return device_addr_; }
  // 0 for imported buffers, which are not mappable through the file.
  uint64_t mmap_offset() const { return mmap_offset_; }
  uint8_t* data() const { return data_; }
  bool imported() const { return (flags_ & DRM_LNPU_BO_USERPTR) != 0; }
  bool read_only() const { return (flags_ & DRM_LNPU_BO_READ_ONLY) != 0; }

  // True if addr lies inside this buffer and so does
  // [addr, addr + bytes).
  bool Contains(uint64_t addr, uint64_t bytes) const {
    return addr >= device_addr_ && addr - device_addr_ < size_ &&
           bytes <= size_ - (addr - device_addr_);
  }

 private:
  friend class DeviceMemory;
  // `host_memory` holds the device memory of a created buffer (data is
  // its start) and is empty for an imported one.
  BufferObject(std::shared_ptr<DeviceMemory> memory, HugePageMemory host_memory,
               uint8_t* data, uint64_t size, uint32_t flags,
               uint64_t device_addr, uint64_t mmap_offset);

  const std::shared_ptr<DeviceMemory> memory_;
  const HugePageMemory host_memory_;
  uint8_t* const data_;
  const uint64_t size_;
  const uint32_t flags_;
  const uint64_t device_addr_;
  const uint64_t mmap_offset_;
};

// A 64-bit space from which ranges are handed out in increasing order and
// never reused. Consecutive ranges are separated by one unused granule, so
// an access running off the end of a buffer never lands in the next one.
class AddressSpace {
 public:
  explicit AddressSpace(uint64_t base) : next_(base) {}
  // Start of a fresh range of `bytes` (a multiple of kBufferAlignment), or 0
  // once the space is exhausted (which takes 2^64 bytes of allocations).
  uint64_t Allocate(uint64_t bytes);

 private:
  std::atomic<uint64_t> next_;
};

class DeviceMemory : public std::enable_shared_from_this<DeviceMemory> {
 public:
  // `capacity` bytes of device memory (a multiple of kBufferAlignment).
  explicit DeviceMemory(uint64_t capacity);
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Allocates a zero-filled buffer of `size` bytes rounded up to
  // kBufferAlignment; `flags` are valid DRM_LNPU_BO_* without USERPTR.
  // Returns 0 and sets *buffer, or EINVAL (size 0 or larger than the
  // device), ENOMEM (not enough free device or host memory) or ENOSPC (no
  // device addresses left); the reason goes to `log`.
  int Allocate(uint64_t size, uint32_t flags, DiagnosticLog& log,
               std::shared_ptr<BufferObject>* buffer);

  // Wraps the `size` bytes of user memory at `user_ptr` in a buffer without
  // copying them; `flags` are valid DRM_LNPU_BO_* with USERPTR, without
  // CMDBUF. Returns 0 and sets *buffer, or EINVAL (size 0 or not a
  // multiple of kBufferAlignment), EFAULT (null or unaligned pointer, range
  // not mapped, or not writable without DRM_LNPU_BO_READ_ONLY) or ENOSPC;
  // the reason goes to `log`. The memory must stay mapped until the buffer
  // is destroyed (the software NPU cannot pin pages as a kernel does).
  int Import(uint64_t user_ptr, uint64_t size, uint32_t flags,
             DiagnosticLog& log, std::shared_ptr<BufferObject>* buffer);

  uint64_t capacity() const { return capacity_; }
  // Bytes of device memory held by live buffers (rounded sizes).
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  // Bytes of user memory wrapped by live imported buffers.
  uint64_t imported() const {
    return imported_.load(std::memory_order_relaxed);
  }

 private:
  friend class BufferObject;
  void Release(const BufferObject& buffer);

  const uint64_t capacity_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> imported_{0};
  AddressSpace device_addresses_;
  AddressSpace mmap_offsets_;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_BUFFER_OBJECT_H_
