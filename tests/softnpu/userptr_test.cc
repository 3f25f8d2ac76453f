// USERPTR imports (user memory used in place, accounted apart from device
// memory) and READ_ONLY buffers (commands may not write them).
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

class UserptrTest : public SoftNpuTest {
 protected:
  void TearDown() override {
    SoftNpuTest::TearDown();
    EXPECT_EQ(npu_->memory_imported(), 0u) << "a test leaked an import";
  }

  // Runs one COPY of `bytes` from `src` to `dst` on the DMA engine and
  // returns the job's error (or the submit's errno).
  int CopyJob(uint64_t src, uint64_t dst, uint64_t bytes,
              std::vector<uint32_t> handles) {
    TestBuffer cmd = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
    Submission job;
    job.engine = DRM_LNPU_ENGINE_DMA;
    job.cmd_handle = cmd.handle;
    job.cmd_size = CommandStream().Copy(src, dst, bytes).WriteTo(cmd);
    job.bo_handles = std::move(handles);
    uint64_t fence = 0;
    const int err = Submit(*file_, job, &fence);
    return err != 0 ? err : WaitJob(*file_, fence);
  }
};

TEST_F(UserptrTest, ImportUsesTheUserMemoryWithoutCopying) {
  UserMemory user(8192);
  drm_lnpu_bo_create import{};
  ASSERT_EQ(Import(*file_, user.data(), user.bytes(), 0, &import), 0);
  EXPECT_NE(import.handle, 0u);
  EXPECT_NE(import.device_addr, 0u);
  TestBuffer dst = CreateBuffer(*file_, 8192);

  // Written after the import: a copy taken at import time would miss it.
  for (uint64_t i = 0; i < user.bytes(); ++i) user.data()[i] = i % 253;
  ASSERT_EQ(CopyJob(import.device_addr, dst.device_addr, 8192,
                    {import.handle, dst.handle}),
            0);
  EXPECT_EQ(std::memcmp(dst.data, user.data(), 8192), 0);

  // The device writes straight into the user's memory.
  std::memset(dst.data, 0x5a, 4096);
  ASSERT_EQ(CopyJob(dst.device_addr, import.device_addr + 4096, 4096,
                    {import.handle, dst.handle}),
            0);
  EXPECT_EQ(user.data()[4096], 0x5a);
  EXPECT_EQ(user.data()[8191], 0x5a);
  EXPECT_EQ(CloseHandle(*file_, import.handle), 0);
}

TEST_F(UserptrTest, ImportsAreAccountedApartFromDeviceMemory) {
  UserMemory user(3 * 4096);
  drm_lnpu_bo_create import{};
  ASSERT_EQ(Import(*file_, user.data(), user.bytes(), 0, &import), 0);
  EXPECT_EQ(GetParam(*file_, DRM_LNPU_PARAM_MEMORY_USED), 0u);
  EXPECT_EQ(GetParam(*file_, DRM_LNPU_PARAM_MEMORY_IMPORTED), 3u * 4096);
  EXPECT_EQ(npu_->memory_imported(), 3u * 4096);
  EXPECT_EQ(CloseHandle(*file_, import.handle), 0);
  EXPECT_EQ(GetParam(*file_, DRM_LNPU_PARAM_MEMORY_IMPORTED), 0u);
  // The memory is still the user's and still mapped.
  user.data()[0] = 1;
}

TEST_F(UserptrTest, ImportOfReadOnlyMemoryNeedsReadOnlyFlag) {
  UserMemory user(4096, PROT_READ);
  EXPECT_EQ(Import(*file_, user.data(), 4096), EFAULT);
  EXPECT_REJECTION(npu_, HasSubstr("READ_ONLY"));
  drm_lnpu_bo_create import{};
  ASSERT_EQ(Import(*file_, user.data(), 4096, DRM_LNPU_BO_READ_ONLY, &import),
            0);
  drm_lnpu_bo_info info{};
  info.handle = import.handle;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info), 0);
  EXPECT_EQ(info.flags, DRM_LNPU_BO_USERPTR | DRM_LNPU_BO_READ_ONLY);
  EXPECT_EQ(info.size, 4096u);
  EXPECT_EQ(CloseHandle(*file_, import.handle), 0);
}

TEST_F(UserptrTest, NullPointerIsEfault) {
  EXPECT_EQ(Import(*file_, nullptr, 4096), EFAULT);
  EXPECT_REJECTION(npu_, HasSubstr("null"));
}

TEST_F(UserptrTest, UnalignedPointerIsEfault) {
  UserMemory user(8192);
  EXPECT_EQ(Import(*file_, user.data() + 8, 4096), EFAULT);
  EXPECT_REJECTION(npu_, HasSubstr("aligned"));
}

TEST_F(UserptrTest, UnmappedRangeIsEfault) {
  UserMemory user(3 * 4096);
  ASSERT_EQ(munmap(user.data() + 4096, 4096), 0);  // a hole in the middle
  EXPECT_EQ(Import(*file_, user.data(), user.bytes()), EFAULT);
  EXPECT_REJECTION(npu_, HasSubstr("not mapped"));
  // Both sides of the hole still import.
  drm_lnpu_bo_create import{};
  ASSERT_EQ(Import(*file_, user.data(), 4096, 0, &import), 0);
  EXPECT_EQ(CloseHandle(*file_, import.handle), 0);
}

TEST_F(UserptrTest, SizeZeroIsEinval) {
  UserMemory user(4096);
  EXPECT_EQ(Import(*file_, user.data(), 0), EINVAL);
}

TEST_F(UserptrTest, UnalignedSizeIsEinval) {
  UserMemory user(8192);
  EXPECT_EQ(Import(*file_, user.data(), 4097), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("multiple"));
}

TEST_F(UserptrTest, UserPtrWithoutFlagIsEinval) {
  UserMemory user(4096);
  drm_lnpu_bo_create create{};
  create.size = 4096;
  create.user_ptr = reinterpret_cast<uintptr_t>(user.data());
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("user_ptr"));
}

TEST_F(UserptrTest, CommandBufferCannotBeImportedOrReadOnly) {
  UserMemory user(4096);
  EXPECT_EQ(Import(*file_, user.data(), 4096, DRM_LNPU_BO_CMDBUF), EINVAL);
  drm_lnpu_bo_create create{};
  create.size = 4096;
  create.flags = DRM_LNPU_BO_CMDBUF | DRM_LNPU_BO_READ_ONLY;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create), EINVAL);
}

TEST_F(UserptrTest, ImportHasNoMmapOffset) {
  UserMemory user(4096);
  drm_lnpu_bo_create import{};
  ASSERT_EQ(Import(*file_, user.data(), 4096, 0, &import), 0);
  drm_lnpu_bo_info info{};
  info.handle = import.handle;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info), 0);
  EXPECT_EQ(info.mmap_offset, 0u);
  void* addr = nullptr;
  EXPECT_EQ(file_->Mmap(4096, 0, &addr), EINVAL);
  EXPECT_EQ(CloseHandle(*file_, import.handle), 0);
}

TEST_F(UserptrTest, ClosedImportStaysAliveUntilItsQueuedJobEnds) {
  UserMemory user(4096);
  std::memset(user.data(), 0x33, 4096);
  drm_lnpu_bo_create import{};
  ASSERT_EQ(Import(*file_, user.data(), 4096, 0, &import), 0);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer cmd = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
  Submission job;
  job.engine = DRM_LNPU_ENGINE_DMA;
  job.cmd_handle = cmd.handle;
  job.cmd_size =
      CommandStream().Copy(import.device_addr, dst.device_addr, 4096).WriteTo(
          cmd);
  job.bo_handles = {import.handle, dst.handle};
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, job, &fence), 0);
  ASSERT_EQ(CloseHandle(*file_, import.handle), 0);
  EXPECT_EQ(npu_->memory_imported(), 4096u) << "the queued job holds it";
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(dst.data[4095], 0x33);
  EXPECT_EQ(npu_->memory_imported(), 0u);
}

TEST_F(UserptrTest, ClosingTheFileReleasesItsImports) {
  UserMemory user(4096);
  auto other = npu_->Open();
  ASSERT_EQ(Import(*other, user.data(), 4096), 0);
  EXPECT_EQ(npu_->memory_imported(), 4096u);
  other.reset();
  EXPECT_EQ(npu_->memory_imported(), 0u);
}

TEST_F(UserptrTest, WriteIntoReadOnlyImportIsEinval) {
  UserMemory user(4096, PROT_READ);
  drm_lnpu_bo_create import{};
  ASSERT_EQ(Import(*file_, user.data(), 4096, DRM_LNPU_BO_READ_ONLY, &import),
            0);
  TestBuffer src = CreateBuffer(*file_, 4096);
  EXPECT_EQ(CopyJob(src.device_addr, import.device_addr, 4096,
                    {import.handle, src.handle}),
            EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("READ_ONLY"));
  // Reading it is fine.
  EXPECT_EQ(CopyJob(import.device_addr, src.device_addr, 4096,
                    {import.handle, src.handle}),
            0);
  EXPECT_EQ(CloseHandle(*file_, import.handle), 0);
}

using ReadOnlyBufferTest = SoftNpuTest;

TEST_F(ReadOnlyBufferTest, CommandsMayReadButNotWriteIt) {
  TestBuffer weights = CreateBuffer(*file_, 8192, DRM_LNPU_BO_READ_ONLY);
  TestBuffer out = CreateBuffer(*file_, 8192);
  TestBuffer cmd = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
  std::memset(weights.data, 7, 8192);  // the CPU fills it through mmap

  Submission write;
  write.cmd_handle = cmd.handle;
  write.cmd_size = CommandStream()
                       .Copy(weights.device_addr, out.device_addr, 4096)
                       .Copy(out.device_addr, weights.device_addr + 4096, 8)
                       .WriteTo(cmd);
  write.bo_handles = {weights.handle, out.handle};
  EXPECT_EQ(Submit(*file_, write), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("command 1 (opcode"));

  Submission read = write;
  read.cmd_size = CommandStream()
                      .Copy(weights.device_addr, out.device_addr, 8192)
                      .WriteTo(cmd);
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, read, &fence), 0);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(out.data[8191], 7);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
