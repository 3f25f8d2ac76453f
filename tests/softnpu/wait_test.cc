// WAIT: deadlines, WAIT_ANY, several fences, errors, old fences.
#include <cerrno>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

class WaitTest : public SoftNpuTest {
 protected:
  void SetUp() override {
    cmd_ = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
    CommandStream().Nop().WriteTo(cmd_);
  }

  uint64_t SubmitNop(uint32_t engine) {
    Submission job;
    job.engine = engine;
    job.cmd_handle = cmd_.handle;
    job.cmd_size = 8;
    uint64_t fence = 0;
    EXPECT_EQ(Submit(*file_, job, &fence), 0);
    return fence;
  }

  // A DMA job that faults (SCATTER_ROWS index out of range).
  uint64_t SubmitFault() {
    if (data_.handle == 0) {
      data_ = CreateBuffer(*file_, 4096);
      const int32_t bad = 1000;
      std::memcpy(data_.data, &bad, sizeof(bad));
    }
    Submission job;
    job.engine = DRM_LNPU_ENGINE_DMA;
    job.cmd_handle = cmd_.handle;
    job.cmd_offset = 1024;
    job.cmd_size =
        CommandStream()
            .Add(MakeScatterRows(data_.device_addr + 1024,
                                 data_.device_addr + 2048, data_.device_addr,
                                 16, 1, 1, 4))
            .WriteTo(cmd_, 1024);
    job.bo_handles = {data_.handle};
    uint64_t fence = 0;
    EXPECT_EQ(Submit(*file_, job, &fence), 0);
    return fence;
  }

  TestBuffer cmd_;
  TestBuffer data_;
};

TEST_F(WaitTest, TimesOutWhileTheEngineIsPaused) {
  npu_->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t fence = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  const int64_t start = MonotonicNowNs();
  EXPECT_EQ(Wait(*file_, {fence}, DeadlineInMs(20)), ETIMEDOUT);
  EXPECT_GE(MonotonicNowNs() - start, 20'000'000 - 1'000'000);
  // A deadline in the past times out at once.
  EXPECT_EQ(Wait(*file_, {fence}, 0), ETIMEDOUT);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_COMPUTE);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(WaitTest, SignalledFenceReturnsEvenWithADeadlineInThePast) {
  const uint64_t fence = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  drm_lnpu_wait result{};
  EXPECT_EQ(Wait(*file_, {fence}, 0, 0, &result), 0);
  EXPECT_EQ(result.job_error, 0);
  EXPECT_EQ(Wait(*file_, {fence}, -1), 0);
}

TEST_F(WaitTest, WaitAnyReturnsTheSignalledFence) {
  npu_->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t blocked = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t done = SubmitNop(DRM_LNPU_ENGINE_DMA);
  drm_lnpu_wait result{};
  ASSERT_EQ(Wait(*file_, {blocked, done}, LongDeadline(), DRM_LNPU_WAIT_ANY,
                 &result),
            0);
  EXPECT_EQ(result.signalled, 1u);
  EXPECT_EQ(result.job_error, 0);
  // Waiting for all of them still times out.
  EXPECT_EQ(Wait(*file_, {blocked, done}, DeadlineInMs(10)), ETIMEDOUT);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_COMPUTE);
  EXPECT_EQ(Wait(*file_, {blocked, done}, LongDeadline()), 0);
}

TEST_F(WaitTest, WaitAnyReportsTheErrorOfTheSignalledFence) {
  npu_->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t blocked = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t faulting = SubmitFault();
  drm_lnpu_wait result{};
  ASSERT_EQ(Wait(*file_, {blocked, faulting}, LongDeadline(),
                 DRM_LNPU_WAIT_ANY, &result),
            0);
  EXPECT_EQ(result.signalled, 1u);
  EXPECT_EQ(result.job_error, -EIO);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_COMPUTE);
  EXPECT_EQ(WaitJob(*file_, blocked), 0);
}

TEST_F(WaitTest, WaitAllOnSeveralFencesOfBothEngines) {
  std::vector<uint64_t> fences;
  for (int i = 0; i < 8; ++i) {
    fences.push_back(SubmitNop(i % 2 == 0 ? DRM_LNPU_ENGINE_COMPUTE
                                          : DRM_LNPU_ENGINE_DMA));
  }
  drm_lnpu_wait result{};
  ASSERT_EQ(Wait(*file_, fences, LongDeadline(), 0, &result), 0);
  EXPECT_EQ(result.job_error, 0);
}

TEST_F(WaitTest, WaitAllReportsTheFirstFailedJob) {
  const uint64_t ok = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t faulting = SubmitFault();
  drm_lnpu_wait result{};
  ASSERT_EQ(Wait(*file_, {ok, faulting}, LongDeadline(), 0, &result), 0);
  EXPECT_EQ(result.job_error, -EIO);
}

TEST_F(WaitTest, IsRestartableWithTheSameArguments) {
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  const uint64_t fence = SubmitNop(DRM_LNPU_ENGINE_DMA);
  drm_lnpu_wait args{};
  const uint64_t fences[] = {fence};
  args.fences = reinterpret_cast<uintptr_t>(fences);
  args.fence_count = 1;
  args.timeout_ns = DeadlineInMs(5);
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_WAIT, &args), ETIMEDOUT);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  args.timeout_ns = LongDeadline();
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_WAIT, &args), 0);
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_WAIT, &args), 0);
  EXPECT_EQ(args.job_error, 0);
}

TEST_F(WaitTest, OldFencesKeepTheirResult) {
  const uint64_t faulting = SubmitFault();
  const uint64_t first = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  uint64_t last = 0;
  for (int i = 0; i < 200; ++i) {
    last = SubmitNop(i % 2 == 0 ? DRM_LNPU_ENGINE_COMPUTE
                                : DRM_LNPU_ENGINE_DMA);
  }
  ASSERT_EQ(WaitJob(*file_, last), 0);
  SubmitNop(DRM_LNPU_ENGINE_DMA);  // lets the file retire old fences
  EXPECT_EQ(WaitJob(*file_, faulting), -EIO);
  EXPECT_EQ(WaitJob(*file_, first), 0);
  EXPECT_EQ(WaitJob(*file_, last + 1), 0);
}

TEST_F(WaitTest, UnknownFenceIsEnoent) {
  const uint64_t fence = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  EXPECT_EQ(Wait(*file_, {0}, LongDeadline()), ENOENT);
  EXPECT_EQ(Wait(*file_, {fence + 1}, LongDeadline()), ENOENT);
  EXPECT_EQ(Wait(*file_, {fence, 77}, LongDeadline(), DRM_LNPU_WAIT_ANY),
            ENOENT);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(WaitTest, FenceOfAnotherFileIsEnoent) {
  const uint64_t fence = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  auto other = npu_->Open();
  EXPECT_EQ(Wait(*other, {fence}, LongDeadline()), ENOENT);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(WaitTest, UnknownFlagsAreEinval) {
  const uint64_t fence = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  EXPECT_EQ(Wait(*file_, {fence}, LongDeadline(), 1u << 1), EINVAL);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(WaitTest, FenceCountOutOfRangeIsEinval) {
  EXPECT_EQ(Wait(*file_, {}, LongDeadline()), EINVAL);
  const uint64_t fence = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
  EXPECT_EQ(Wait(*file_, std::vector<uint64_t>(kMaxFences + 1, fence),
                 LongDeadline()),
            EINVAL);
  EXPECT_EQ(Wait(*file_, std::vector<uint64_t>(kMaxFences, fence),
                 LongDeadline()),
            0);
}

TEST_F(WaitTest, NullFenceListIsEfault) {
  drm_lnpu_wait args{};
  args.fence_count = 1;
  args.timeout_ns = LongDeadline();
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_WAIT, &args), EFAULT);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
