#include "base/huge_page_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace lnpu {
namespace {

constexpr uint64_t kPageBytes = 4096;

}  // namespace

absl::StatusOr<HugePageMemory> HugePageMemory::Map(uint64_t bytes) {
  if (bytes == 0) {
    return absl::InvalidArgumentError("cannot map 0 bytes of memory; ask for at least 1");
  }
  if (bytes > UINT64_MAX - kHugePageBytes - kPageBytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot map %d bytes of memory: more than the address space", bytes));
  }
  const uint64_t size = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  // Large mappings are over-allocated by one huge page and trimmed at both
  // ends to the 2 MiB-aligned range.
  const uint64_t mapped = size < kHugePageBytes ? size : size + kHugePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot map %d bytes of memory: %s", bytes, std::strerror(errno)));
  }
  if (size < kHugePageBytes) return HugePageMemory(static_cast<uint8_t*>(raw), size);
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + mapped;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  uint8_t* data = reinterpret_cast<uint8_t*>(aligned);
  madvise(data, size, MADV_HUGEPAGE);  // advice only (see the header)
  return HugePageMemory(data, size);
}

HugePageMemory::HugePageMemory(HugePageMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugePageMemory& HugePageMemory::operator=(HugePageMemory&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

HugePageMemory::~HugePageMemory() { Unmap(); }

void HugePageMemory::Unmap() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace lnpu
