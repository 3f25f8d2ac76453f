// HugePageMemory: zeroed anonymous memory for buffers that are streamed from
// DRAM (the software NPU's device memory, bandwidth probes, benchmark
// weights). A mapping of at least kHugePageBytes starts on a 2 MiB boundary
// and is advised for transparent huge pages (MADV_HUGEPAGE), like the large
// pages an NPU's IOMMU maps device memory with: streaming through 4 KiB
// pages costs up to a third of the read bandwidth in page walks (measured
// 17.6 vs 28.6 GB/s with two threads on a 2-core VM). The advice is only
// advice: where the kernel has no THP (or it is "never") the memory keeps
// 4 KiB pages and everything else works the same.
//
// Thread-safety: an object is not synchronised; distinct objects are
// independent.
#ifndef LNPU_BASE_HUGE_PAGE_MEMORY_H_
#define LNPU_BASE_HUGE_PAGE_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace lnpu {

class HugePageMemory {
 public:
  static constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

  // Maps `bytes` (> 0, rounded up to whole 4 KiB pages) of zeroed, readable
  // and writable memory (MAP_NORESERVE: pages are committed on first
  // touch). InvalidArgument for 0 bytes; ResourceExhausted naming the size
  // and the system's reason when the address space or memory runs out.
  static absl::StatusOr<HugePageMemory> Map(uint64_t bytes);

  // An empty object: data() is null, size() 0.
  HugePageMemory() = default;
  HugePageMemory(HugePageMemory&& other) noexcept;
  HugePageMemory& operator=(HugePageMemory&& other) noexcept;
  HugePageMemory(const HugePageMemory&) = delete;
  HugePageMemory& operator=(const HugePageMemory&) = delete;
  // Unmaps the memory.
  ~HugePageMemory();

  uint8_t* data() const { return data_; }
  // The mapped bytes: the requested size rounded up to 4 KiB.
  uint64_t size() const { return size_; }

 private:
  HugePageMemory(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  void Unmap();

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace lnpu

#endif  // LNPU_BASE_HUGE_PAGE_MEMORY_H_
