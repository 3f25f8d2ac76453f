// DRM_LNPU_SUBMIT_OUT_FENCE_FD (UAPI 1.3): the rules of the flag and of
// out_fence_fd, and the returned descriptor: readable once the job ended
// (completed or faulted) and not before, close-on-exec, closable at any
// time without affecting the job. Against a kernel node (LNPU_TEST_DEVICE)
// the descriptor is also checked to be a sync_file.
#include <fcntl.h>
#include <linux/sync_file.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

// poll(2) on `fd` for POLLIN for up to `timeout_ms`: the revents.
short PollIn(int fd, int timeout_ms) {
  pollfd entry{fd, POLLIN, 0};
  const int ready = poll(&entry, 1, timeout_ms);
  EXPECT_GE(ready, 0) << std::strerror(errno);
  return ready > 0 ? entry.revents : 0;
}

class FenceFdTest : public SoftNpuTest {
 protected:
  void SetUp() override {
    src_ = CreateBuffer(*file_, 4096);
    dst_ = CreateBuffer(*file_, 4096);
    cmd_ = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
    std::memcpy(src_.data, "fenced", 7);
    copy_.engine = DRM_LNPU_ENGINE_DMA;
    copy_.cmd_handle = cmd_.handle;
    copy_.cmd_size = CommandStream().Copy(src_.device_addr, dst_.device_addr, 7).WriteTo(cmd_);
    copy_.bo_handles = {src_.handle, dst_.handle};
  }

  // Submits copy_ with `flags` and `out_fence_fd` on entry; returns the
  // errno and the arguments as the device left them in *result.
  int SubmitCopy(uint32_t flags, int32_t out_fence_fd, drm_lnpu_submit* result) {
    *result = copy_.Args();
    result->flags = flags;
    result->out_fence_fd = out_fence_fd;
    return file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, result);
  }

  TestBuffer src_, dst_, cmd_;
  Submission copy_;
};

TEST_F(FenceFdTest, UnknownFlagBitIsEinval) {
  drm_lnpu_submit args{};
  for (const uint32_t flags : {~DRM_LNPU_SUBMIT_FLAGS_ALL, DRM_LNPU_SUBMIT_FLAGS_ALL + 1u,
                               DRM_LNPU_SUBMIT_OUT_FENCE_FD | (1u << 31)}) {
    EXPECT_EQ(SubmitCopy(flags, 0, &args), EINVAL) << flags;
    EXPECT_EQ(args.out_fence_fd, 0) << "a rejected submit creates no descriptor";
    EXPECT_REJECTION(npu_, HasSubstr("DRM_LNPU_SUBMIT_FLAGS_ALL"));
  }
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, copy_, &fence), 0);
  EXPECT_EQ(fence, 1u) << "rejected submits issue no fence";
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(FenceFdTest, OutFenceFdNotZeroOnEntryIsEinval) {
  drm_lnpu_submit args{};
  for (const uint32_t flags : {0u, DRM_LNPU_SUBMIT_OUT_FENCE_FD}) {
    for (const int32_t fd : {1, -1, STDERR_FILENO}) {
      EXPECT_EQ(SubmitCopy(flags, fd, &args), EINVAL) << flags << " " << fd;
      EXPECT_EQ(args.out_fence_fd, fd) << "left as it was";
      EXPECT_REJECTION(npu_, HasSubstr("out_fence_fd"));
    }
  }
}

TEST_F(FenceFdTest, WithoutTheFlagNoDescriptorIsReturned) {
  drm_lnpu_submit args{};
  ASSERT_EQ(SubmitCopy(0, 0, &args), 0);
  EXPECT_EQ(args.out_fence_fd, 0);
  EXPECT_EQ(WaitJob(*file_, args.fence), 0);
}

TEST_F(FenceFdTest, PollWakesWhenTheJobCompletes) {
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  drm_lnpu_submit args{};
  ASSERT_EQ(SubmitCopy(DRM_LNPU_SUBMIT_OUT_FENCE_FD, 0, &args), 0);
  const int fd = args.out_fence_fd;
  ASSERT_GT(fd, STDERR_FILENO);
  EXPECT_EQ(args.fence, 1u);
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "close-on-exec";
  EXPECT_EQ(PollIn(fd, 30), 0) << "readable before the job ran";
  EXPECT_EQ(dst_.data[0], 0);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  EXPECT_NE(PollIn(fd, 20'000) & POLLIN, 0) << "not readable after the job ended";
  EXPECT_NE(PollIn(fd, 0) & POLLIN, 0) << "readable for good";
  EXPECT_EQ(WaitJob(*file_, args.fence), 0);
  // Read after WAIT: poll() orders the job's writes as well, but
  // ThreadSanitizer cannot see the eventfd's synchronization.
  EXPECT_STREQ(reinterpret_cast<const char*>(dst_.data), "fenced");
  EXPECT_EQ(close(fd), 0);
}

TEST_F(FenceFdTest, AFaultedJobAlsoWakesAndWaitTellsTheOutcome) {
  ASSERT_TRUE(npu_->InjectFault({FaultInjection::Kind::kFault, DRM_LNPU_ENGINE_DMA, 1}).ok());
  drm_lnpu_submit args{};
  ASSERT_EQ(SubmitCopy(DRM_LNPU_SUBMIT_OUT_FENCE_FD, 0, &args), 0);
  EXPECT_NE(PollIn(args.out_fence_fd, 20'000) & POLLIN, 0);
  EXPECT_EQ(WaitJob(*file_, args.fence), -EIO);
  EXPECT_EQ(close(args.out_fence_fd), 0);
}

TEST_F(FenceFdTest, ClosingTheDescriptorEarlyLeavesTheJobAlone) {
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  drm_lnpu_submit first{};
  ASSERT_EQ(SubmitCopy(DRM_LNPU_SUBMIT_OUT_FENCE_FD, 0, &first), 0);
  ASSERT_EQ(close(first.out_fence_fd), 0);
  drm_lnpu_submit second{};
  ASSERT_EQ(SubmitCopy(DRM_LNPU_SUBMIT_OUT_FENCE_FD, 0, &second), 0);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  EXPECT_EQ(WaitJob(*file_, first.fence), 0);
  EXPECT_NE(PollIn(second.out_fence_fd, 20'000) & POLLIN, 0);
  EXPECT_EQ(WaitJob(*file_, second.fence), 0);
  // Read once both jobs, which write the same bytes, have ended.
  EXPECT_STREQ(reinterpret_cast<const char*>(dst_.data), "fenced");
  EXPECT_EQ(close(second.out_fence_fd), 0);
}

TEST_F(FenceFdTest, TheDescriptorOutlivesTheDeviceFile) {
  drm_lnpu_submit args{};
  ASSERT_EQ(SubmitCopy(DRM_LNPU_SUBMIT_OUT_FENCE_FD, 0, &args), 0);
  const int fd = args.out_fence_fd;
  ASSERT_EQ(WaitJob(*file_, args.fence), 0);
  file_.reset();
  EXPECT_NE(PollIn(fd, 0) & POLLIN, 0);
  EXPECT_EQ(close(fd), 0);
}

TEST_F(FenceFdTest, AKernelDeviceReturnsASyncFile) {
  if (!npu_->is_kernel()) GTEST_SKIP() << "the software NPU returns an eventfd";
  drm_lnpu_submit args{};
  ASSERT_EQ(SubmitCopy(DRM_LNPU_SUBMIT_OUT_FENCE_FD, 0, &args), 0);
  ASSERT_EQ(WaitJob(*file_, args.fence), 0);
  sync_file_info info{};
  ASSERT_EQ(ioctl(args.out_fence_fd, SYNC_IOC_FILE_INFO, &info), 0) << std::strerror(errno);
  EXPECT_EQ(info.status, 1) << "signalled without error";
  EXPECT_EQ(info.num_fences, 1u);
  EXPECT_EQ(close(args.out_fence_fd), 0);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
