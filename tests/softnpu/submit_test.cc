// SUBMIT: every rejected field, and the command-stream checks made before
// anything runs.
#include <cerrno>
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

class SubmitTest : public SoftNpuTest {
 protected:
  void SetUp() override {
    src_ = CreateBuffer(*file_, 4096);
    dst_ = CreateBuffer(*file_, 4096);
    cmd_ = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
    for (int i = 0; i < 256; ++i) src_.data[i] = static_cast<uint8_t>(i);
  }

  // A DMA job copying `bytes` from src_ to dst_.
  Submission CopyJob(uint64_t bytes = 256) {
    Submission job;
    job.engine = DRM_LNPU_ENGINE_DMA;
    job.cmd_handle = cmd_.handle;
    job.cmd_size =
        CommandStream().Copy(src_.device_addr, dst_.device_addr, bytes)
            .WriteTo(cmd_);
    job.bo_handles = {src_.handle, dst_.handle};
    return job;
  }

  int SubmitArgs(drm_lnpu_submit args) {
    return file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &args);
  }

  // Submits CopyJob() with `change` applied to its ioctl arguments; returns
  // the errno.
  template <class Change>
  int SubmitCopyWith(const Change& change) {
    const Submission job = CopyJob();
    drm_lnpu_submit args = job.Args();
    change(args);
    return SubmitArgs(args);
  }

  TestBuffer src_, dst_, cmd_;
};

TEST_F(SubmitTest, ValidJobRunsAndFencesCountFromOne) {
  uint64_t first = 0, second = 0;
  ASSERT_EQ(Submit(*file_, CopyJob(), &first), 0);
  ASSERT_EQ(Submit(*file_, CopyJob(), &second), 0);
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(second, 2u);
  EXPECT_EQ(WaitJob(*file_, second), 0);
  EXPECT_EQ(WaitJob(*file_, first), 0);
  EXPECT_EQ(std::memcmp(dst_.data, src_.data, 256), 0);
}

TEST_F(SubmitTest, FencesArePerFile) {
  auto other = npu_->Open();
  TestBuffer other_cmd = CreateBuffer(*other, 4096, DRM_LNPU_BO_CMDBUF);
  Submission nop;
  nop.cmd_handle = other_cmd.handle;
  nop.cmd_size = CommandStream().Nop().WriteTo(other_cmd);
  uint64_t mine = 0, theirs = 0;
  ASSERT_EQ(Submit(*file_, CopyJob(), &mine), 0);
  ASSERT_EQ(Submit(*other, nop, &theirs), 0);
  EXPECT_EQ(mine, 1u);
  EXPECT_EQ(theirs, 1u);
  EXPECT_EQ(WaitJob(*file_, mine), 0);
  EXPECT_EQ(WaitJob(*other, theirs), 0);
}

// The flag and field rules of DRM_LNPU_SUBMIT_OUT_FENCE_FD are in
// fence_fd_test.cc, those of DRM_LNPU_SUBMIT_PROFILE (profile_handle, pad)
// in profile_test.cc.

TEST_F(SubmitTest, UnknownEngineIsEinval) {
  EXPECT_EQ(SubmitCopyWith([](drm_lnpu_submit& a) {
              a.engine = DRM_LNPU_ENGINE_COUNT;
            }),
            EINVAL);
}

TEST_F(SubmitTest, TooManyBuffersIsEinval) {
  Submission job = CopyJob();
  job.bo_handles.resize(kMaxJobBuffers + 1, src_.handle);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, TooManyInFencesIsEinval) {
  Submission job = CopyJob();
  job.in_fences.resize(kMaxFences + 1, 1);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, NullBufferListIsEfault) {
  EXPECT_EQ(SubmitCopyWith([](drm_lnpu_submit& a) {
              a.bo_handles = 0;
            }),
            EFAULT);
}

TEST_F(SubmitTest, NullInFenceListIsEfault) {
  EXPECT_EQ(SubmitCopyWith([](drm_lnpu_submit& a) {
              a.in_fences = 0;
              a.in_fence_count = 1;
            }),
            EFAULT);
}

TEST_F(SubmitTest, CmdSizeZeroIsEinval) {
  EXPECT_EQ(SubmitCopyWith([](drm_lnpu_submit& a) { a.cmd_size = 0; }), EINVAL);
}

TEST_F(SubmitTest, CmdSizeNotAMultipleOfEightIsEinval) {
  EXPECT_EQ(SubmitCopyWith([](drm_lnpu_submit& a) {
              a.cmd_size = 36;
            }),
            EINVAL);
}

TEST_F(SubmitTest, CmdSizeAboveMaximumIsEinval) {
  EXPECT_EQ(SubmitCopyWith([](drm_lnpu_submit& a) {
              a.cmd_size = kMaxCommandBytes + 8;
            }),
            EINVAL);
}

TEST_F(SubmitTest, MisalignedCmdOffsetIsEinval) {
  EXPECT_EQ(SubmitCopyWith([](drm_lnpu_submit& a) {
              a.cmd_offset = 4;
            }),
            EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("cmd_offset"));
}

TEST_F(SubmitTest, StreamOutsideTheCommandBufferIsEinval) {
  const Submission job = CopyJob();
  drm_lnpu_submit args = job.Args();
  args.cmd_offset = 4096 - 8;
  EXPECT_EQ(SubmitArgs(args), EINVAL);
  args.cmd_offset = 8192;
  EXPECT_EQ(SubmitArgs(args), EINVAL);
}

TEST_F(SubmitTest, StreamAtAnOffsetRuns) {
  Submission job = CopyJob();
  job.cmd_offset = 1024;
  CommandStream().Copy(src_.device_addr, dst_.device_addr, 16)
      .WriteTo(cmd_, job.cmd_offset);
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, job, &fence), 0);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(std::memcmp(dst_.data, src_.data, 16), 0);
}

TEST_F(SubmitTest, UnknownCmdHandleIsEnoent) {
  const Submission job = CopyJob();
  drm_lnpu_submit args = job.Args();
  args.cmd_handle = 999;
  EXPECT_EQ(SubmitArgs(args), ENOENT);
  args.cmd_handle = 0;
  EXPECT_EQ(SubmitArgs(args), ENOENT);
}

TEST_F(SubmitTest, CmdBufferWithoutCmdbufFlagIsEinval) {
  Submission job = CopyJob();
  TestBuffer plain = CreateBuffer(*file_, 4096);
  CommandStream().Nop().WriteTo(plain);
  job.cmd_handle = plain.handle;
  job.cmd_size = 8;
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("DRM_LNPU_BO_CMDBUF"));
}

TEST_F(SubmitTest, UnknownBufferHandleIsEnoent) {
  Submission job = CopyJob();
  job.bo_handles.push_back(4242);
  EXPECT_EQ(Submit(*file_, job), ENOENT);
  job.bo_handles.back() = 0;
  EXPECT_EQ(Submit(*file_, job), ENOENT);
}

TEST_F(SubmitTest, BufferOfAnotherFileIsEnoent) {
  auto other = npu_->Open();
  drm_lnpu_bo_create create{};
  create.size = 4096;
  // Give the other file more handles than this one has, so that the number
  // is unknown here.
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(other->Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create), 0);
  }
  Submission job = CopyJob();
  job.bo_handles.push_back(create.handle);
  EXPECT_EQ(Submit(*file_, job), ENOENT);
}

TEST_F(SubmitTest, CommandBufferListedAsDataIsEinval) {
  Submission job = CopyJob();
  job.bo_handles.push_back(cmd_.handle);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, AnyCmdbufBufferListedAsDataIsEinval) {
  TestBuffer other_cmd = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
  Submission job = CopyJob();
  job.bo_handles.push_back(other_cmd.handle);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, DuplicateBufferHandlesAreHarmless) {
  Submission job = CopyJob();
  job.bo_handles = {dst_.handle, src_.handle, dst_.handle, src_.handle};
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, job, &fence), 0);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(std::memcmp(dst_.data, src_.data, 256), 0);
}

TEST_F(SubmitTest, CommandTouchingAnUnlistedBufferIsEinval) {
  Submission job = CopyJob();
  job.bo_handles = {src_.handle};  // dst_ missing
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("bo_handles"));
}

TEST_F(SubmitTest, CommandRunningPastTheEndOfABufferIsEinval) {
  EXPECT_EQ(Submit(*file_, CopyJob(4097)), EINVAL);
  Submission job = CopyJob();
  job.cmd_size =
      CommandStream().Copy(src_.device_addr + 4000, dst_.device_addr, 100)
          .WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, CommandStraddlingTwoBuffersIsEinval) {
  const TestBuffer& low = src_.device_addr < dst_.device_addr ? src_ : dst_;
  const TestBuffer& high = src_.device_addr < dst_.device_addr ? dst_ : src_;
  TestBuffer out = CreateBuffer(*file_, 3 * 4096);
  const uint64_t start = low.device_addr + low.size - 64;
  const uint64_t end = high.device_addr + 64;
  Submission job = CopyJob();
  job.bo_handles = {src_.handle, dst_.handle, out.handle};
  job.cmd_size =
      CommandStream().Copy(start, out.device_addr, end - start).WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, AddressBelowEveryBufferIsEinval) {
  Submission job = CopyJob();
  job.cmd_size =
      CommandStream().Copy(4096, dst_.device_addr, 16).WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, UnknownOpcodeIsEinval) {
  lnpu_cmd_nop bogus{};
  bogus.hdr = {LNPU_OP_COUNT, 0, sizeof(bogus)};
  Submission job = CopyJob();
  job.cmd_size = CommandStream().Add(bogus).WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, OpcodeOfTheOtherEngineIsEinval) {
  TestBuffer indices = CreateBuffer(*file_, 4096);
  Submission job = CopyJob();
  job.engine = DRM_LNPU_ENGINE_COMPUTE;  // SCATTER_ROWS is DMA only
  job.bo_handles.push_back(indices.handle);
  job.cmd_size = CommandStream()
                     .Add(MakeScatterRows(src_.device_addr, dst_.device_addr,
                                          indices.device_addr, 16, 1, 1, 4))
                     .WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  job.engine = DRM_LNPU_ENGINE_DMA;
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, job, &fence), 0);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(SubmitTest, WrongCommandSizeIsEinval) {
  lnpu_cmd_copy copy{};
  copy.hdr = {LNPU_OP_COPY, 0, sizeof(copy) + 8};
  copy.src = src_.device_addr;
  copy.dst = dst_.device_addr;
  copy.bytes = 8;
  Submission job = CopyJob();
  job.cmd_size = CommandStream().Add(copy).Nop().WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, StreamEndingInsideACommandIsEinval) {
  Submission job = CopyJob();
  job.cmd_size = 16;  // half of the COPY
  EXPECT_EQ(Submit(*file_, job), EINVAL);
}

TEST_F(SubmitTest, BadCommandAfterGoodOnesRejectsTheWholeJob) {
  Submission job = CopyJob();
  job.cmd_size = CommandStream()
                     .Copy(src_.device_addr, dst_.device_addr, 64)
                     .Copy(src_.device_addr, dst_.device_addr, 8192)
                     .WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("command 1"));
  // Nothing ran.
  SCOPED_TRACE("dst stays zero");
  for (int i = 0; i < 64; ++i) ASSERT_EQ(dst_.data[i], 0);
}

TEST_F(SubmitTest, UnknownInFenceIsEnoent) {
  Submission job = CopyJob();
  job.in_fences = {0};
  EXPECT_EQ(Submit(*file_, job), ENOENT);
  job.in_fences = {1};  // not issued yet
  EXPECT_EQ(Submit(*file_, job), ENOENT);
}

TEST_F(SubmitTest, InFenceOfAnotherFileIsEnoent) {
  auto other = npu_->Open();
  TestBuffer other_cmd = CreateBuffer(*other, 4096, DRM_LNPU_BO_CMDBUF);
  Submission nop;
  nop.cmd_handle = other_cmd.handle;
  nop.cmd_size = CommandStream().Nop().WriteTo(other_cmd);
  uint64_t theirs = 0;
  ASSERT_EQ(Submit(*other, nop, &theirs), 0);
  Submission job = CopyJob();
  job.in_fences = {theirs};
  EXPECT_EQ(Submit(*file_, job), ENOENT);
  EXPECT_EQ(WaitJob(*other, theirs), 0);
}

TEST_F(SubmitTest, RejectedSubmitIssuesNoFence) {
  const Submission job = CopyJob();
  drm_lnpu_submit bad = job.Args();
  bad.out_fence_fd = 1;
  EXPECT_EQ(SubmitArgs(bad), EINVAL);
  Submission bad_stream = CopyJob(8192);
  EXPECT_EQ(Submit(*file_, bad_stream), EINVAL);
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, CopyJob(), &fence), 0);
  EXPECT_EQ(fence, 1u);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(SubmitTest, RewritingTheStreamAfterSubmitHasNoEffect) {
  TestBuffer decoy = CreateBuffer(*file_, 4096);
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  Submission job = CopyJob(128);
  job.bo_handles.push_back(decoy.handle);
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, job, &fence), 0);
  // Redirect the copy to the decoy, then turn the stream into garbage.
  CommandStream().Copy(src_.device_addr, decoy.device_addr, 128).WriteTo(cmd_);
  std::memset(cmd_.data, 0xff, 64);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(std::memcmp(dst_.data, src_.data, 128), 0);
  for (int i = 0; i < 128; ++i) ASSERT_EQ(decoy.data[i], 0) << i;
}

// A stream accepted before is not validated again when it comes back with
// the same bytes over the same buffers (ValidatedStreamCache). Anything
// else about it is.
TEST_F(SubmitTest, AcceptedStreamWithoutTheBufferItWritesIsEinval) {
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, CopyJob(), &fence), 0);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  Submission job = CopyJob();
  job.bo_handles = {src_.handle};
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("bo_handles"));
}

TEST_F(SubmitTest, AcceptedStreamChangedInOneFieldIsValidatedAgain) {
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, CopyJob(256), &fence), 0);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(Submit(*file_, CopyJob(4097)), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("not inside one buffer"));
}

TEST_F(SubmitTest, AcceptedStreamAfterItsBufferIsClosedIsEinval) {
  TestBuffer out = CreateBuffer(*file_, 4096);
  Submission job = CopyJob();
  job.bo_handles = {src_.handle, out.handle};
  job.cmd_size = CommandStream().Copy(src_.device_addr, out.device_addr, 256).WriteTo(cmd_);
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, job, &fence), 0);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  ASSERT_EQ(file_->Munmap(out.data, out.size), 0);
  ASSERT_EQ(CloseHandle(*file_, out.handle), 0);
  const TestBuffer replacement = CreateBuffer(*file_, 4096);
  job.bo_handles = {src_.handle, replacement.handle};
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("not inside one buffer"));
}

}  // namespace
}  // namespace lnpu::softnpu::testing
