// Running jobs: COPY and SCATTER_ROWS results, faults, in-fence chains,
// job timeouts with file banning, and buffer lifetime across queued jobs.
#include <cerrno>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

class ExecutionTest : public SoftNpuTest {
 protected:
  void SetUp() override {
    cmd_ = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
  }

  // Submits `stream` at `offset` of cmd_; returns the fence (0 on failure).
  uint64_t Run(uint32_t engine, const CommandStream& stream,
               std::vector<uint32_t> buffers,
               std::vector<uint64_t> in_fences = {}, uint32_t offset = 0) {
    Submission job;
    job.engine = engine;
    job.cmd_handle = cmd_.handle;
    job.cmd_offset = offset;
    job.cmd_size = stream.WriteTo(cmd_, offset);
    job.bo_handles = std::move(buffers);
    job.in_fences = std::move(in_fences);
    uint64_t fence = 0;
    EXPECT_EQ(Submit(*file_, job, &fence), 0)
        << npu_->last_rejection_message();
    return fence;
  }

  TestBuffer cmd_;
};

TEST_F(ExecutionTest, CopyOnBothEngines) {
  TestBuffer a = CreateBuffer(*file_, 8192);
  TestBuffer b = CreateBuffer(*file_, 8192);
  TestBuffer c = CreateBuffer(*file_, 8192);
  for (int i = 0; i < 8192; ++i) a.data[i] = static_cast<uint8_t>(i * 7);
  const uint64_t on_compute =
      Run(DRM_LNPU_ENGINE_COMPUTE,
          CommandStream().Copy(a.device_addr, b.device_addr, 8192),
          {a.handle, b.handle});
  ASSERT_EQ(WaitJob(*file_, on_compute), 0);
  const uint64_t on_dma =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream().Copy(b.device_addr + 100, c.device_addr + 8, 5000),
          {b.handle, c.handle});
  ASSERT_EQ(WaitJob(*file_, on_dma), 0);
  EXPECT_EQ(std::memcmp(b.data, a.data, 8192), 0);
  EXPECT_EQ(std::memcmp(c.data + 8, a.data + 100, 5000), 0);
  EXPECT_EQ(c.data[0], 0);
  EXPECT_EQ(c.data[5008], 0);
}

TEST_F(ExecutionTest, CommandsOfOneJobRunInOrder) {
  TestBuffer a = CreateBuffer(*file_, 4096);
  TestBuffer b = CreateBuffer(*file_, 4096);
  std::memcpy(a.data, "first", 6);
  const uint64_t fence =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream()
              .Copy(a.device_addr, b.device_addr, 6)
              .Copy(b.device_addr, a.device_addr + 100, 6)
              .Nop(),
          {a.handle, b.handle});
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_STREQ(reinterpret_cast<char*>(a.data + 100), "first");
}

TEST_F(ExecutionTest, ScatterRowsFillsSlotsOfEveryBlock) {
  constexpr uint32_t kRowBytes = 16, kRows = 3, kBlocks = 2, kSlots = 4;
  TestBuffer src = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  for (uint32_t i = 0; i < kBlocks * kRows * kRowBytes; ++i) {
    src.data[i] = static_cast<uint8_t>(i + 1);
  }
  const int32_t slots[kRows] = {2, -1, 0};  // row 1 is padding
  std::memcpy(indices.data, slots, sizeof(slots));
  const uint64_t fence = Run(
      DRM_LNPU_ENGINE_DMA,
      CommandStream().Add(MakeScatterRows(src.device_addr, dst.device_addr,
                                          indices.device_addr, kRowBytes,
                                          kRows, kBlocks, kSlots)),
      {src.handle, dst.handle, indices.handle});
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  for (uint32_t block = 0; block < kBlocks; ++block) {
    const uint8_t* src_block = src.data + block * kRows * kRowBytes;
    const uint8_t* dst_block = dst.data + block * kSlots * kRowBytes;
    SCOPED_TRACE(block);
    EXPECT_EQ(std::memcmp(dst_block + 2 * kRowBytes, src_block, kRowBytes), 0);
    EXPECT_EQ(std::memcmp(dst_block + 0 * kRowBytes,
                          src_block + 2 * kRowBytes, kRowBytes),
              0);
    for (uint32_t slot : {1u, 3u}) {
      for (uint32_t i = 0; i < kRowBytes; ++i) {
        ASSERT_EQ(dst_block[slot * kRowBytes + i], 0) << slot;
      }
    }
  }
}

TEST_F(ExecutionTest, IndexOutOfRangeFaultsTheJobWithEio) {
  TestBuffer src = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  const int32_t slot = 4;  // dst_rows is 4
  std::memcpy(indices.data, &slot, sizeof(slot));
  const uint64_t fence = Run(
      DRM_LNPU_ENGINE_DMA,
      CommandStream().Add(MakeScatterRows(src.device_addr, dst.device_addr,
                                          indices.device_addr, 16, 1, 1, 4)),
      {src.handle, dst.handle, indices.handle});
  EXPECT_EQ(WaitJob(*file_, fence), -EIO);
  EXPECT_FAULT_MESSAGE(npu_, HasSubstr("indices"));
  // A fault does not ban the file.
  const uint64_t next =
      Run(DRM_LNPU_ENGINE_DMA, CommandStream().Nop(), {});
  EXPECT_EQ(WaitJob(*file_, next), 0);
  EXPECT_EQ(npu_->reset_count(), 0u);
}

TEST_F(ExecutionTest, FailedInFenceCancelsTheDependentJob) {
  TestBuffer src = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  const int32_t slot = 100;
  std::memcpy(indices.data, &slot, sizeof(slot));
  src.data[0] = 9;
  const uint64_t faulting = Run(
      DRM_LNPU_ENGINE_DMA,
      CommandStream().Add(MakeScatterRows(src.device_addr, dst.device_addr,
                                          indices.device_addr, 16, 1, 1, 4)),
      {src.handle, dst.handle, indices.handle});
  const uint64_t dependent =
      Run(DRM_LNPU_ENGINE_COMPUTE,
          CommandStream().Copy(src.device_addr, dst.device_addr + 1024, 16),
          {src.handle, dst.handle}, {faulting}, 512);
  EXPECT_EQ(WaitJob(*file_, dependent), -ECANCELED);
  EXPECT_EQ(WaitJob(*file_, faulting), -EIO);
  EXPECT_EQ(dst.data[1024], 0) << "a cancelled job must not run";
}

TEST_F(ExecutionTest, InFenceOrdersJobsAcrossEngines) {
  TestBuffer a = CreateBuffer(*file_, 4096);
  TestBuffer b = CreateBuffer(*file_, 4096);
  TestBuffer c = CreateBuffer(*file_, 4096);
  std::memcpy(a.data, "chained", 8);
  npu_->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t compute =
      Run(DRM_LNPU_ENGINE_COMPUTE,
          CommandStream().Copy(a.device_addr, b.device_addr, 8),
          {a.handle, b.handle});
  const uint64_t dma =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream().Copy(b.device_addr, c.device_addr, 8),
          {b.handle, c.handle}, {compute}, 256);
  // The DMA engine is free but its job waits for the compute fence.
  EXPECT_EQ(Wait(*file_, {dma}, DeadlineInMs(30)), ETIMEDOUT);
  EXPECT_EQ(c.data[0], 0);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_COMPUTE);
  ASSERT_EQ(WaitJob(*file_, dma), 0);
  EXPECT_STREQ(reinterpret_cast<char*>(c.data), "chained");
}

TEST_F(ExecutionTest, ClosedBufferStaysValidUntilItsQueuedJobEnds) {
  TestBuffer src = CreateBuffer(*file_, 64 * 1024);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  for (int i = 0; i < 4096; ++i) src.data[i] = static_cast<uint8_t>(i ^ 0x55);
  std::vector<uint8_t> expected(src.data, src.data + 4096);
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  const uint64_t fence =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream().Copy(src.device_addr, dst.device_addr, 4096),
          {src.handle, dst.handle});
  ASSERT_EQ(file_->Munmap(src.data, src.size), 0);
  ASSERT_EQ(CloseHandle(*file_, src.handle), 0);
  EXPECT_EQ(npu_->memory_used(), cmd_.size + src.size + dst.size)
      << "the queued job still holds the closed buffer";
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(std::memcmp(dst.data, expected.data(), 4096), 0);
  EXPECT_EQ(npu_->memory_used(), cmd_.size + dst.size);
}

TEST_F(ExecutionTest, JobsOfAClosedFileStillCompleteAndFreeTheirBuffers) {
  auto other = npu_->Open();
  TestBuffer cmd = CreateBuffer(*other, 4096, DRM_LNPU_BO_CMDBUF);
  TestBuffer data = CreateBuffer(*other, 1 << 20);
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  Submission job;
  job.engine = DRM_LNPU_ENGINE_DMA;
  job.cmd_handle = cmd.handle;
  job.cmd_size = CommandStream()
                     .Copy(data.device_addr, data.device_addr + 4096, 4096)
                     .WriteTo(cmd);
  job.bo_handles = {data.handle};
  ASSERT_EQ(Submit(*other, job), 0);
  other.reset();
  EXPECT_EQ(npu_->memory_used(), cmd_.size + data.size);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  // A job of this file queued behind it completes after it.
  const uint64_t marker = Run(DRM_LNPU_ENGINE_DMA, CommandStream().Nop(), {});
  ASSERT_EQ(WaitJob(*file_, marker), 0);
  EXPECT_EQ(npu_->memory_used(), cmd_.size);
}

TEST(ExecutionLifetimeTest, DestroyingTheDeviceCancelsQueuedJobs) {
  auto npu = SoftNpu::Create(SmallDeviceOptions());
  auto file = npu->Open();
  TestBuffer cmd = CreateBuffer(*file, 4096, DRM_LNPU_BO_CMDBUF);
  npu->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  Submission job;
  job.cmd_handle = cmd.handle;
  job.cmd_size = CommandStream().Nop().WriteTo(cmd);
  ASSERT_EQ(Submit(*file, job), 0);
  file.reset();
  std::weak_ptr<SoftNpu> weak = npu;
  npu.reset();  // joins the engines with a job still queued
  EXPECT_TRUE(weak.expired());
}

// A device with a short job timeout, and a job that surely exceeds it:
// many large copies, with the timeout checked between them.
class JobTimeoutTest : public SoftNpuTest {
 protected:
  static SoftNpuOptions Options() {
    SoftNpuOptions options = SmallDeviceOptions();
    options.job_timeout_ms = 5;
    return options;
  }
  JobTimeoutTest() : SoftNpuTest(Options()) {}

  Submission LongJob(const TestBuffer& cmd, const TestBuffer& a,
                     const TestBuffer& b) {
    CommandStream stream;
    for (int i = 0; i < 100; ++i) {
      stream.Copy(a.device_addr, b.device_addr, a.size);
      stream.Copy(b.device_addr, a.device_addr, a.size);
    }
    Submission job;
    job.engine = DRM_LNPU_ENGINE_DMA;
    job.cmd_handle = cmd.handle;
    job.cmd_size = stream.WriteTo(cmd);
    job.bo_handles = {a.handle, b.handle};
    return job;
  }
};

TEST_F(JobTimeoutTest, LongJobIsAbortedAndItsFileBanned) {
  TestBuffer cmd = CreateBuffer(*file_, 16384, DRM_LNPU_BO_CMDBUF);
  TestBuffer a = CreateBuffer(*file_, 8 << 20);
  TestBuffer b = CreateBuffer(*file_, 8 << 20);
  uint64_t fence = 0, behind = 0;
  // Both jobs are queued before the long one starts: on a slow machine
  // (emulation) its 5 ms timeout would otherwise ban the file before the
  // second submit.
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  ASSERT_EQ(Submit(*file_, LongJob(cmd, a, b), &fence), 0);
  Submission nop;
  nop.engine = DRM_LNPU_ENGINE_DMA;
  nop.cmd_handle = cmd.handle;
  nop.cmd_offset = 8192;
  nop.cmd_size = CommandStream().Nop().WriteTo(cmd, 8192);
  ASSERT_EQ(Submit(*file_, nop, &behind), 0);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);

  EXPECT_EQ(WaitJob(*file_, fence), -ECANCELED);
  EXPECT_EQ(WaitJob(*file_, behind), -ECANCELED)
      << "queued jobs of a banned file are cancelled";
  EXPECT_EQ(npu_->reset_count(), 1u);
  EXPECT_FAULT_MESSAGE(npu_, HasSubstr("timeout"));
  EXPECT_EQ(Submit(*file_, nop), ECANCELED);

  // Other files keep working.
  auto other = npu_->Open();
  TestBuffer other_cmd = CreateBuffer(*other, 4096, DRM_LNPU_BO_CMDBUF);
  Submission other_nop;
  other_nop.engine = DRM_LNPU_ENGINE_DMA;
  other_nop.cmd_handle = other_cmd.handle;
  other_nop.cmd_size = CommandStream().Nop().WriteTo(other_cmd);
  uint64_t other_fence = 0;
  ASSERT_EQ(Submit(*other, other_nop, &other_fence), 0);
  EXPECT_EQ(WaitJob(*other, other_fence), 0);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
