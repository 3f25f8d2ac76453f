#include "base/huge_page_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Whether [data, data + bytes) is mapped in this process (mincore fails
// with ENOMEM on unmapped pages).
bool Mapped(const uint8_t* data, uint64_t bytes) {
  std::vector<unsigned char> residency((bytes + 4095) / 4096);
  return mincore(const_cast<uint8_t*>(data), bytes, residency.data()) == 0;
}

// The mapping (VMA) that contains `p`, from /proc/self/smaps.
struct Vma {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::string flags;  // the VmFlags line
};
Vma VmaOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  Vma vma;
  bool inside = false;
  while (std::getline(smaps, line)) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (!fields.empty() && fields[0].find('-') != std::string::npos &&
        fields[0].find(':') == std::string::npos) {
      const std::vector<std::string> range = absl::StrSplit(fields[0], '-');
      const uintptr_t begin = std::stoull(range[0], nullptr, 16);
      const uintptr_t end = std::stoull(range[1], nullptr, 16);
      inside = Address(p) >= begin && Address(p) < end;
      if (inside) {
        vma.begin = begin;
        vma.end = end;
      }
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      vma.flags = line;
      return vma;
    }
  }
  return vma;
}

// Whether this environment records MADV_HUGEPAGE in /proc/self/smaps: a
// kernel with transparent huge pages does; qemu-user (the aarch64 test
// runs) accepts the advice without passing it on.
bool HugePageAdviceIsRecorded() {
  constexpr size_t kBytes = 4 << 20;
  void* data = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) return false;
  const bool recorded = madvise(data, kBytes, MADV_HUGEPAGE) == 0 &&
                        VmaOf(data).flags.find(" hg") != std::string::npos;
  munmap(data, kBytes);
  return recorded;
}

void ExpectZeroedAndWritable(const HugePageMemory& memory) {
  ASSERT_NE(memory.data(), nullptr);
  for (uint64_t i = 0; i < memory.size(); i += 4096) EXPECT_EQ(memory.data()[i], 0) << i;
  EXPECT_EQ(memory.data()[memory.size() - 1], 0);
  memory.data()[0] = 0x11;
  memory.data()[memory.size() - 1] = 0x22;
  EXPECT_EQ(memory.data()[0], 0x11);
  EXPECT_EQ(memory.data()[memory.size() - 1], 0x22);
}

TEST(HugePageMemoryTest, ZeroBytesIsAnError) {
  const absl::StatusOr<HugePageMemory> memory = HugePageMemory::Map(0);
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(memory.status().message(), HasSubstr("0 bytes"));
}

TEST(HugePageMemoryTest, SmallMappingIsWholePagesZeroedAndWritable) {
  absl::StatusOr<HugePageMemory> memory = HugePageMemory::Map(1);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->size(), 4096u);
  EXPECT_EQ(Address(memory->data()) % 4096, 0u);
  ExpectZeroedAndWritable(*memory);
}

TEST(HugePageMemoryTest, LargeMappingIsHugePageAlignedAndAdvised) {
  absl::StatusOr<HugePageMemory> memory = HugePageMemory::Map(5 * kMiB + 1);
  ASSERT_TRUE(memory.ok()) << memory.status();
  // The over-allocation's tail was unmapped (checked first: a later mapping
  // of this process could take the hole).
  EXPECT_FALSE(Mapped(memory->data() + memory->size(), 4096));
  EXPECT_EQ(memory->size(), 5 * kMiB + 4096);
  EXPECT_EQ(Address(memory->data()) % HugePageMemory::kHugePageBytes, 0u);
  ExpectZeroedAndWritable(*memory);
  if (HugePageAdviceIsRecorded()) {
    // MADV_HUGEPAGE sets the mapping's "hg" flag whether or not the kernel
    // grants huge pages at the moment, on exactly the range.
    const Vma vma = VmaOf(memory->data());
    EXPECT_THAT(vma.flags, HasSubstr(" hg"));
    EXPECT_EQ(vma.begin, Address(memory->data()));
    EXPECT_EQ(vma.end, Address(memory->data()) + memory->size());
  }
}

TEST(HugePageMemoryTest, TooLargeIsResourceExhaustedNamingTheSize) {
  const absl::StatusOr<HugePageMemory> memory = HugePageMemory::Map(UINT64_MAX);
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(memory.status().message(), HasSubstr(absl::StrCat(UINT64_MAX)));
  // Larger than the address space but not than UINT64_MAX's guard: mmap's
  // own ENOMEM.
  const absl::StatusOr<HugePageMemory> huge = HugePageMemory::Map(uint64_t{1} << 62);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(huge.status().message(), HasSubstr("Cannot allocate memory"));
}

TEST(HugePageMemoryTest, DestructionUnmaps) {
  uint8_t* data = nullptr;
  uint64_t size = 0;
  {
    absl::StatusOr<HugePageMemory> memory = HugePageMemory::Map(3 * kMiB);
    ASSERT_TRUE(memory.ok()) << memory.status();
    data = memory->data();
    size = memory->size();
    EXPECT_TRUE(Mapped(data, size));
  }
  EXPECT_FALSE(Mapped(data, size));
  EXPECT_EQ(errno, ENOMEM);
}

TEST(HugePageMemoryTest, MoveTransfersOwnershipAndAssignmentUnmapsTheOld) {
  absl::StatusOr<HugePageMemory> first = HugePageMemory::Map(4096);
  absl::StatusOr<HugePageMemory> second = HugePageMemory::Map(8192);
  ASSERT_TRUE(first.ok() && second.ok());
  uint8_t* const first_data = first->data();
  uint8_t* const second_data = second->data();

  HugePageMemory moved(std::move(*first));
  EXPECT_EQ(first->data(), nullptr);
  EXPECT_EQ(first->size(), 0u);
  EXPECT_EQ(moved.data(), first_data);
  EXPECT_EQ(moved.size(), 4096u);

  moved = std::move(*second);
  EXPECT_FALSE(Mapped(first_data, 4096));
  EXPECT_EQ(moved.data(), second_data);
  EXPECT_EQ(moved.size(), 8192u);
  EXPECT_TRUE(Mapped(second_data, 8192));

  const HugePageMemory empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

}  // namespace
}  // namespace lnpu
