// Per-file usage figures (fdinfo keys) and device-wide job counters.
#include <cerrno>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

// The value text of `key` in fdinfo `text` ("" if absent).
std::string FdInfoValue(const std::string& text, const std::string& key) {
  const std::string prefix = key + ":\t";
  size_t at = text.find(prefix);
  if (at == std::string::npos || (at != 0 && text[at - 1] != '\n')) return "";
  at += prefix.size();
  return text.substr(at, text.find('\n', at) - at);
}

uint64_t BusyNs(KernelFile& file, const char* engine) {
  const std::string value =
      FdInfoValue(file.FdInfo(), std::string("drm-engine-") + engine);
  EXPECT_THAT(value, ::testing::EndsWith(" ns"));
  return std::stoull(value);
}

using UsageTest = SoftNpuTest;

TEST_F(UsageTest, FdInfoHasTheDrmKeys) {
  const std::string info = file_->FdInfo();
  EXPECT_EQ(FdInfoValue(info, "drm-driver"), LNPU_DRIVER_NAME);
  EXPECT_EQ(FdInfoValue(info, "drm-engine-compute"), "0 ns");
  EXPECT_EQ(FdInfoValue(info, "drm-engine-dma"), "0 ns");
  EXPECT_EQ(FdInfoValue(info, "drm-total-memory"), "0");
  EXPECT_EQ(FdInfoValue(info, "drm-shared-memory"), "0");
  EXPECT_EQ(FdInfoValue(info, "drm-resident-memory"), "0");
  EXPECT_EQ(FdInfoValue(info, "drm-total-userptr"), "0");
  EXPECT_EQ(FdInfoValue(info, "drm-shared-userptr"), "0");
  EXPECT_EQ(FdInfoValue(info, "lnpu-jobs-submitted"), "0");
  // Every drm-* line has the usage-stats format; a kernel adds its own
  // generic lines (pos, flags, mnt_id, ino) before them.
  for (size_t start = 0; start < info.size();) {
    const size_t end = info.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "every line ends with a newline";
    const std::string line = info.substr(start, end - start);
    if (line.rfind("drm-", 0) == 0) {
      EXPECT_THAT(line, ::testing::MatchesRegex("drm-[a-z-]+:\t[0-9a-z]+( [a-zA-Z]+)?"));
    }
    start = end + 1;
  }
}

TEST_F(UsageTest, ClientIdsAreUniquePerFile) {
  auto other = npu_->Open();
  const std::string mine = FdInfoValue(file_->FdInfo(), "drm-client-id");
  const std::string theirs = FdInfoValue(other->FdInfo(), "drm-client-id");
  EXPECT_FALSE(mine.empty());
  EXPECT_NE(mine, theirs);
}

TEST_F(UsageTest, MemoryFiguresAreExactAndPerFile) {
  auto other = npu_->Open();
  TestBuffer small = CreateBuffer(*file_, 100);         // 4 KiB
  TestBuffer large = CreateBuffer(*file_, 2 << 20);     // 2 MiB
  TestBuffer odd = CreateBuffer(*file_, 3 * 4096 + 1);  // 16 KiB
  EXPECT_EQ(FdInfoValue(file_->FdInfo(), "drm-total-memory"), "2068 KiB");
  EXPECT_EQ(FdInfoValue(file_->FdInfo(), "drm-resident-memory"), "2068 KiB");
  EXPECT_EQ(FdInfoValue(other->FdInfo(), "drm-total-memory"), "0");
  for (const TestBuffer* buffer : {&small, &odd}) {
    ASSERT_EQ(file_->Munmap(buffer->data, buffer->size), 0);
    ASSERT_EQ(CloseHandle(*file_, buffer->handle), 0);
  }
  EXPECT_EQ(FdInfoValue(file_->FdInfo(), "drm-total-memory"), "2 MiB");

  UserMemory user(8192);
  ASSERT_EQ(Import(*other, user.data(), 8192), 0);
  EXPECT_EQ(FdInfoValue(other->FdInfo(), "drm-total-userptr"), "8 KiB");
  EXPECT_EQ(FdInfoValue(other->FdInfo(), "drm-total-memory"), "0");
  other.reset();
  EXPECT_EQ(npu_->memory_imported(), 0u);
  EXPECT_EQ(npu_->memory_used(), large.size);
}

TEST_F(UsageTest, BusyTimeGrowsWithWorkOnTheEngineThatDidIt) {
  // 1 MiB each way: well inside the 200 ms job timeout of the kernel
  // module in the test VM (tools/scripts/vm_guest.sh), whose emulated CPU
  // shares the host with the other test steps.
  TestBuffer a = CreateBuffer(*file_, 1 << 20);
  TestBuffer b = CreateBuffer(*file_, 1 << 20);
  TestBuffer cmd = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
  Submission copy;
  copy.engine = DRM_LNPU_ENGINE_DMA;
  copy.cmd_handle = cmd.handle;
  copy.cmd_size = CommandStream()
                      .Copy(a.device_addr, b.device_addr, a.size)
                      .Copy(b.device_addr, a.device_addr, a.size)
                      .WriteTo(cmd);
  copy.bo_handles = {a.handle, b.handle};
  uint64_t last_dma = 0;
  for (int round = 0; round < 3; ++round) {
    uint64_t fence = 0;
    ASSERT_EQ(Submit(*file_, copy, &fence), 0);
    ASSERT_EQ(WaitJob(*file_, fence), 0);
    const uint64_t dma = BusyNs(*file_, "dma");
    EXPECT_GT(dma, last_dma) << "round " << round;
    last_dma = dma;
  }
  EXPECT_EQ(BusyNs(*file_, "compute"), 0u);
  auto other = npu_->Open();
  EXPECT_EQ(BusyNs(*other, "dma"), 0u) << "busy time is per file";
}

TEST_F(UsageTest, JobCountersAddUp) {
  // The counters are device-wide: a kernel device has run earlier tests.
  const uint64_t submitted = GetParam(*file_, DRM_LNPU_PARAM_JOBS_SUBMITTED);
  const uint64_t completed = GetParam(*file_, DRM_LNPU_PARAM_JOBS_COMPLETED);
  const uint64_t device_completed = npu_->jobs_completed();
  TestBuffer cmd = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
  Submission nop;
  nop.cmd_handle = cmd.handle;
  nop.cmd_size = CommandStream().Nop().WriteTo(cmd);
  for (int i = 0; i < 5; ++i) {
    uint64_t fence = 0;
    ASSERT_EQ(Submit(*file_, nop, &fence), 0);
    ASSERT_EQ(WaitJob(*file_, fence), 0);
  }
  nop.cmd_size = 0;
  EXPECT_EQ(Submit(*file_, nop), EINVAL);  // rejected: not counted
  EXPECT_EQ(GetParam(*file_, DRM_LNPU_PARAM_JOBS_SUBMITTED), submitted + 5);
  EXPECT_EQ(GetParam(*file_, DRM_LNPU_PARAM_JOBS_COMPLETED), completed + 5);
  EXPECT_EQ(npu_->jobs_completed(), device_completed + 5);
  // The file's own count, unlike the device's, starts at its open.
  EXPECT_EQ(FdInfoValue(file_->FdInfo(), "lnpu-jobs-submitted"), "5");
  auto other = npu_->Open();
  EXPECT_EQ(FdInfoValue(other->FdInfo(), "lnpu-jobs-submitted"), "0");
}

}  // namespace
}  // namespace lnpu::softnpu::testing
