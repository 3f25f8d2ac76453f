#include "kernel_iface/softnpu/buffer_object.h"

#include <cerrno>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "kernel_iface/softnpu/user_memory.h"

namespace lnpu::softnpu {
namespace {

// Where the two address spaces start. Device addresses begin above 4 GiB so
// that a 32-bit truncation of one is never valid; mmap offsets start where
// DRM's fake offsets do (DRM_FILE_PAGE_OFFSET_START) and, being a separate
// range, are never mistaken for device addresses early on.
constexpr uint64_t kDeviceAddressBase = uint64_t{1} << 36;
constexpr uint64_t kMmapOffsetBase = uint64_t{1} << 32;

}  // namespace

BufferObject::BufferObject(std::shared_ptr<DeviceMemory> memory,
                           HugePageMemory host_memory, uint8_t* data,
                           uint64_t size, uint32_t flags, uint64_t device_addr,
                           uint64_t mmap_offset)
    : memory_(std::move(memory)),
      host_memory_(std::move(host_memory)),
      data_(data),
      size_(size),
      flags_(flags),
      device_addr_(device_addr),
      mmap_offset_(mmap_offset) {}

BufferObject::~BufferObject() { memory_->Release(*this); }

uint64_t AddressSpace::Allocate(uint64_t bytes) {
  const uint64_t stride = bytes + kBufferAlignment;  // plus the guard granule
  uint64_t start = next_.load(std::memory_order_relaxed);
  do {
    if (stride < bytes || start > UINT64_MAX - stride) return 0;
  } while (!next_.compare_exchange_weak(start, start + stride,
                                        std::memory_order_relaxed));
  return start;
}

DeviceMemory::DeviceMemory(uint64_t capacity)
    : capacity_(capacity),
      device_addresses_(kDeviceAddressBase),
      mmap_offsets_(kMmapOffsetBase) {}

int DeviceMemory::Allocate(uint64_t size, uint32_t flags, DiagnosticLog& log,
                           std::shared_ptr<BufferObject>* buffer) {
  if (size == 0) {
    return log.Reject(EINVAL, "BO_CREATE: size is 0; ask for at least 1 byte");
  }
  if (size > capacity_) {
    return log.Reject(EINVAL,
                      "BO_CREATE: size %u exceeds the device memory of %u "
                      "bytes (DRM_LNPU_PARAM_MEMORY_SIZE)",
                      size, capacity_);
  }
  const uint64_t rounded =
      (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (rounded > capacity_ - used) {
      return log.Reject(ENOMEM,
                        "BO_CREATE: %u bytes requested, %u of %u bytes of "
                        "device memory free; close buffers first",
                        rounded, capacity_ - used, capacity_);
    }
  } while (!used_.compare_exchange_weak(used, used + rounded,
                                        std::memory_order_relaxed));

  const uint64_t device_addr = device_addresses_.Allocate(rounded);
  const uint64_t mmap_offset = mmap_offsets_.Allocate(rounded);
  if (device_addr == 0 || mmap_offset == 0) {
    used_.fetch_sub(rounded, std::memory_order_relaxed);
    return log.Reject(ENOSPC,
                      "BO_CREATE: the device address space is exhausted; "
                      "reopen the device");
  }
  absl::StatusOr<HugePageMemory> host_memory = HugePageMemory::Map(rounded);
  if (!host_memory.ok()) {
    used_.fetch_sub(rounded, std::memory_order_relaxed);
    return log.Reject(ENOMEM,
                      "BO_CREATE: no host memory for the buffer (%s); close "
                      "buffers or ask for less",
                      std::string(host_memory.status().message()));
  }
  uint8_t* const data = host_memory->data();
  buffer->reset(new BufferObject(shared_from_this(), *std::move(host_memory),
                                 data, rounded, flags, device_addr,
                                 mmap_offset));
  return 0;
}

int DeviceMemory::Import(uint64_t user_ptr, uint64_t size, uint32_t flags,
                         DiagnosticLog& log,
                         std::shared_ptr<BufferObject>* buffer) {
  if (user_ptr == 0 || user_ptr % kBufferAlignment != 0) {
    return log.Reject(EFAULT,
                      "BO_CREATE: USERPTR user_ptr 0x%x is %s; pass memory "
                      "aligned to DRM_LNPU_PARAM_BO_ALIGNMENT (%u), e.g. "
                      "from mmap(2)",
                      user_ptr, user_ptr == 0 ? "null" : "not aligned",
                      kBufferAlignment);
  }
  if (size == 0 || size % kBufferAlignment != 0) {
    return log.Reject(EINVAL,
                      "BO_CREATE: USERPTR size %u must be a non-zero "
                      "multiple of DRM_LNPU_PARAM_BO_ALIGNMENT (%u)",
                      size, kBufferAlignment);
  }
  if (size > UINT64_MAX - user_ptr) {
    return log.Reject(EFAULT,
                      "BO_CREATE: USERPTR range 0x%x + %u wraps around the "
                      "address space",
                      user_ptr, size);
  }
  const bool writable = (flags & DRM_LNPU_BO_READ_ONLY) == 0;
  if (absl::Status status =
          CheckUserMemory(static_cast<uintptr_t>(user_ptr), size, writable);
      !status.ok()) {
    return log.Reject(EFAULT, "BO_CREATE: USERPTR range 0x%x + %u: %s",
                      user_ptr, size, std::string(status.message()));
  }
  const uint64_t device_addr = device_addresses_.Allocate(size);
  if (device_addr == 0) {
    return log.Reject(ENOSPC,
                      "BO_CREATE: the device address space is exhausted; "
                      "reopen the device");
  }
  imported_.fetch_add(size, std::memory_order_relaxed);
  buffer->reset(new BufferObject(
      shared_from_this(), HugePageMemory(),
      reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(user_ptr)), size,
      flags, device_addr, /*mmap_offset=*/0));
  return 0;
}

void DeviceMemory::Release(const BufferObject& buffer) {
  (buffer.imported() ? imported_ : used_)
      .fetch_sub(buffer.size(), std::memory_order_relaxed);
}

}  // namespace lnpu::softnpu
