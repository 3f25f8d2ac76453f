// BO_CREATE, BO_INFO, GEM_CLOSE, mmap and the per-file handle tables.
#include <cerrno>
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

using BufferTest = SoftNpuTest;

int CreateRaw(KernelFile& file, uint64_t size, uint32_t flags,
              drm_lnpu_bo_create* out = nullptr) {
  drm_lnpu_bo_create create{};
  create.size = size;
  create.flags = flags;
  const int err = file.Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create);
  if (out != nullptr) *out = create;
  return err;
}

TEST_F(BufferTest, CreateRoundsUpAndReturnsUsableAddress) {
  drm_lnpu_bo_create create{};
  ASSERT_EQ(CreateRaw(*file_, 1, 0, &create), 0);
  EXPECT_NE(create.handle, 0u);
  EXPECT_NE(create.device_addr, 0u);
  EXPECT_EQ(create.device_addr % 4096, 0u);
  drm_lnpu_bo_info info{};
  info.handle = create.handle;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info), 0);
  EXPECT_EQ(info.size, 4096u);
  EXPECT_EQ(info.flags, 0u);
  EXPECT_EQ(info.device_addr, create.device_addr);
  EXPECT_NE(info.mmap_offset, 0u);
  EXPECT_EQ(info.mmap_offset % 4096, 0u);
  EXPECT_EQ(npu_->memory_used(), 4096u);
}

TEST_F(BufferTest, CreateKeepsFlags) {
  TestBuffer cmd = CreateBuffer(*file_, 64, DRM_LNPU_BO_CMDBUF);
  EXPECT_EQ(cmd.flags, uint32_t{DRM_LNPU_BO_CMDBUF});
}

TEST_F(BufferTest, SizeZeroIsEinval) {
  EXPECT_EQ(CreateRaw(*file_, 0, 0), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("size is 0"));
}

TEST_F(BufferTest, SizeBeyondDeviceMemoryIsEinval) {
  EXPECT_EQ(CreateRaw(*file_, (64ull << 20) + 1, 0), EINVAL);
  EXPECT_EQ(CreateRaw(*file_, UINT64_MAX, 0), EINVAL);
}

TEST_F(BufferTest, UnknownFlagsAreEinval) {
  EXPECT_EQ(CreateRaw(*file_, 4096, DRM_LNPU_BO_FLAGS_ALL + 1), EINVAL);
  EXPECT_EQ(CreateRaw(*file_, 4096, 0x80000000u), EINVAL);
}

TEST_F(BufferTest, ExhaustedMemoryIsEnomemUntilSomethingIsFreed) {
  drm_lnpu_bo_create big{};
  ASSERT_EQ(CreateRaw(*file_, 48ull << 20, 0, &big), 0);
  EXPECT_EQ(CreateRaw(*file_, 32ull << 20, 0), ENOMEM);
  EXPECT_REJECTION(npu_, HasSubstr("free"));
  drm_lnpu_bo_create rest{};
  ASSERT_EQ(CreateRaw(*file_, 16ull << 20, 0, &rest), 0);  // exactly full
  EXPECT_EQ(npu_->memory_used(), 64ull << 20);
  EXPECT_EQ(CreateRaw(*file_, 1, 0), ENOMEM);
  ASSERT_EQ(CloseHandle(*file_, big.handle), 0);
  EXPECT_EQ(CreateRaw(*file_, 32ull << 20, 0), 0);
}

TEST_F(BufferTest, DeviceAddressesAndHandlesAreNeverReused) {
  drm_lnpu_bo_create first{};
  ASSERT_EQ(CreateRaw(*file_, 4096, 0, &first), 0);
  ASSERT_EQ(CloseHandle(*file_, first.handle), 0);
  drm_lnpu_bo_create second{};
  ASSERT_EQ(CreateRaw(*file_, 4096, 0, &second), 0);
  EXPECT_NE(second.device_addr, first.device_addr);
  EXPECT_NE(second.handle, first.handle);
}

TEST_F(BufferTest, BuffersDoNotTouchEachOther) {
  drm_lnpu_bo_create a{}, b{};
  ASSERT_EQ(CreateRaw(*file_, 8192, 0, &a), 0);
  ASSERT_EQ(CreateRaw(*file_, 8192, 0, &b), 0);
  // A guard granule separates consecutive buffers.
  EXPECT_TRUE(b.device_addr >= a.device_addr + 8192 + 4096 ||
              a.device_addr >= b.device_addr + 8192 + 4096);
}

TEST_F(BufferTest, InfoOfUnknownHandleIsEnoent) {
  drm_lnpu_bo_info info{};
  info.handle = 0;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info), ENOENT);
  info.handle = 77;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info), ENOENT);
}

TEST_F(BufferTest, NewBufferIsZeroFilled) {
  TestBuffer buffer = CreateBuffer(*file_, 3 * 4096);
  ASSERT_NE(buffer.data, nullptr);
  for (uint64_t i = 0; i < buffer.size; ++i) ASSERT_EQ(buffer.data[i], 0) << i;
}

TEST_F(BufferTest, TwoMappingsShowTheSameMemory) {
  TestBuffer buffer = CreateBuffer(*file_, 4096);
  void* second = nullptr;
  ASSERT_EQ(file_->Mmap(100, buffer.mmap_offset, &second), 0);
  std::memcpy(buffer.data + 10, "hello", 5);
  EXPECT_EQ(std::memcmp(static_cast<uint8_t*>(second) + 10, "hello", 5), 0);
  static_cast<uint8_t*>(second)[50] = 0x5a;
  EXPECT_EQ(buffer.data[50], 0x5a);
  EXPECT_EQ(file_->Munmap(second, 100), 0);
}

TEST_F(BufferTest, MmapLengthZeroIsEinval) {
  TestBuffer buffer = CreateBuffer(*file_, 4096);
  void* addr = nullptr;
  EXPECT_EQ(file_->Mmap(0, buffer.mmap_offset, &addr), EINVAL);
}

TEST_F(BufferTest, MmapBeyondTheBufferIsEinval) {
  TestBuffer buffer = CreateBuffer(*file_, 4096);
  void* addr = nullptr;
  EXPECT_EQ(file_->Mmap(4097, buffer.mmap_offset, &addr), EINVAL);
}

TEST_F(BufferTest, MmapOfUnknownOrMisalignedOffsetIsEinval) {
  TestBuffer buffer = CreateBuffer(*file_, 4096);
  void* addr = nullptr;
  EXPECT_EQ(file_->Mmap(4096, buffer.mmap_offset + 4096 * 100, &addr), EINVAL);
  EXPECT_EQ(file_->Mmap(4096, buffer.mmap_offset + 8, &addr), EINVAL);
  EXPECT_EQ(file_->Mmap(4096, buffer.device_addr, &addr), EINVAL);
}

TEST_F(BufferTest, MunmapOfSomethingNotMappedIsEinval) {
  TestBuffer buffer = CreateBuffer(*file_, 4096);
  EXPECT_EQ(file_->Munmap(buffer.data, 100), EINVAL);  // other length
  int local = 0;
  EXPECT_EQ(file_->Munmap(&local, 4), EINVAL);
  EXPECT_EQ(file_->Munmap(buffer.data, buffer.size), 0);
  EXPECT_EQ(file_->Munmap(buffer.data, buffer.size), EINVAL);  // twice
}

TEST_F(BufferTest, MappingKeepsClosedBufferAliveUntilUnmapped) {
  TestBuffer buffer = CreateBuffer(*file_, 4096);
  buffer.data[0] = 42;
  ASSERT_EQ(CloseHandle(*file_, buffer.handle), 0);
  EXPECT_EQ(npu_->memory_used(), 4096u);
  EXPECT_EQ(buffer.data[0], 42);  // still valid memory
  void* addr = nullptr;
  EXPECT_EQ(file_->Mmap(4096, buffer.mmap_offset, &addr), EINVAL)
      << "a closed handle's offset must not be mappable";
  ASSERT_EQ(file_->Munmap(buffer.data, buffer.size), 0);
  EXPECT_EQ(npu_->memory_used(), 0u);
}

TEST_F(BufferTest, GemCloseOfUnknownHandleIsEnoent) {
  EXPECT_EQ(CloseHandle(*file_, 0), ENOENT);
  EXPECT_EQ(CloseHandle(*file_, 12345), ENOENT);
}

TEST_F(BufferTest, GemCloseTwiceIsEnoent) {
  drm_lnpu_bo_create create{};
  ASSERT_EQ(CreateRaw(*file_, 4096, 0, &create), 0);
  EXPECT_EQ(CloseHandle(*file_, create.handle), 0);
  EXPECT_EQ(CloseHandle(*file_, create.handle), ENOENT);
}

TEST_F(BufferTest, GemCloseWithPadIsEinval) {
  drm_lnpu_bo_create create{};
  ASSERT_EQ(CreateRaw(*file_, 4096, 0, &create), 0);
  drm_gem_close close{};
  close.handle = create.handle;
  close.pad = 1;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_GEM_CLOSE, &close), EINVAL);
  EXPECT_EQ(CloseHandle(*file_, create.handle), 0);
}

TEST_F(BufferTest, HandlesAreIsolatedBetweenFiles) {
  auto other = npu_->Open();
  drm_lnpu_bo_create mine{};
  ASSERT_EQ(CreateRaw(*file_, 4096, 0, &mine), 0);
  drm_lnpu_bo_info info{};
  info.handle = mine.handle;
  EXPECT_EQ(other->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info), ENOENT);
  EXPECT_EQ(CloseHandle(*other, mine.handle), ENOENT);
  // The other file's own handle with the same number is its own buffer.
  drm_lnpu_bo_create theirs{};
  ASSERT_EQ(CreateRaw(*other, 4096, 0, &theirs), 0);
  info.handle = theirs.handle;
  ASSERT_EQ(other->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info), 0);
  EXPECT_EQ(info.device_addr, theirs.device_addr);
  EXPECT_NE(info.device_addr, mine.device_addr);
  // Nor can one file map another's buffer.
  drm_lnpu_bo_info my_info{};
  my_info.handle = mine.handle;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &my_info), 0);
  void* addr = nullptr;
  EXPECT_EQ(other->Mmap(4096, my_info.mmap_offset, &addr), EINVAL);
}

TEST_F(BufferTest, ClosingAFileFreesItsMemory) {
  auto other = npu_->Open();
  CreateBuffer(*other, 1 << 20);
  drm_lnpu_bo_create unmapped{};
  ASSERT_EQ(CreateRaw(*other, 4096, 0, &unmapped), 0);
  EXPECT_EQ(npu_->memory_used(), (1u << 20) + 4096);
  other.reset();
  EXPECT_EQ(npu_->memory_used(), 0u);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
