#include "kernel_iface/softnpu/buffer_object.h"

#include <sys/mman.h>

#include <cerrno>
#include <utility>

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
                           uint8_t* data, uint64_t size, uint32_t flags,
                           uint64_t device_addr, uint64_t mmap_offset)
    : memory_(std::move(memory)),
      data_(data),
      size_(size),
      flags_(flags),
      device_addr_(device_addr),
      mmap_offset_(mmap_offset) {}

BufferObject::~BufferObject() {
  munmap(data_, size_);
  memory_->Release(size_);
}

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
  void* data = device_addr == 0 || mmap_offset == 0
                   ? MAP_FAILED
                   : mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data == MAP_FAILED) {
    Release(rounded);
    return log.Reject(ENOMEM,
                      "BO_CREATE: no host memory or address space left for "
                      "%u bytes",
                      rounded);
  }
  buffer->reset(new BufferObject(shared_from_this(),
                                 static_cast<uint8_t*>(data), rounded, flags,
                                 device_addr, mmap_offset));
  return 0;
}

void DeviceMemory::Release(uint64_t bytes) {
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace lnpu::softnpu
