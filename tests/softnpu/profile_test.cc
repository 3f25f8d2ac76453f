// DRM_LNPU_SUBMIT_PROFILE (UAPI 1.3): the profile BO gets one record per
// command, in order, inside the job's times; each rule of profile_handle
// and pad has its errno; a device without DRM_LNPU_CAP_PROFILING refuses
// the flag; the 56-byte struct of older user space still works. Against a
// kernel node (LNPU_TEST_DEVICE) the tests that need profiling skip.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

class ProfileTest : public SoftNpuTest {
 protected:
  using SoftNpuTest::SoftNpuTest;

  void SetUp() override {
    src_ = CreateBuffer(*file_, 8192);
    dst_ = CreateBuffer(*file_, 8192);
    cmd_ = CreateBuffer(*file_, 8192, DRM_LNPU_BO_CMDBUF);
    profile_ = CreateBuffer(*file_, 4096);
    std::memset(profile_.data, 0xAB, 4096);
  }

  // A DMA job of three commands: copy, nop, copy.
  Submission ThreeCommandJob() {
    Submission job;
    job.engine = DRM_LNPU_ENGINE_DMA;
    job.cmd_handle = cmd_.handle;
    job.cmd_size = CommandStream()
                       .Copy(src_.device_addr, dst_.device_addr, 4096)
                       .Nop()
                       .Copy(src_.device_addr + 4096, dst_.device_addr + 4096, 4096)
                       .WriteTo(cmd_);
    job.bo_handles = {src_.handle, dst_.handle};
    return job;
  }

  // Submits `job` with DRM_LNPU_SUBMIT_PROFILE into `profile_handle`;
  // returns the errno and the fence in *fence.
  int SubmitProfiled(const Submission& job, uint32_t profile_handle, uint64_t* fence = nullptr) {
    drm_lnpu_submit args = job.Args();
    args.flags = DRM_LNPU_SUBMIT_PROFILE;
    args.profile_handle = profile_handle;
    const int error = file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &args);
    if (fence != nullptr) *fence = args.fence;
    return error;
  }

  drm_lnpu_profile_header Header() const {
    drm_lnpu_profile_header header;
    std::memcpy(&header, profile_.data, sizeof header);
    return header;
  }
  drm_lnpu_profile_command Record(uint32_t i) const {
    drm_lnpu_profile_command record;
    std::memcpy(&record, profile_.data + sizeof(drm_lnpu_profile_header) + i * sizeof record,
                sizeof record);
    return record;
  }

  TestBuffer src_, dst_, cmd_, profile_;
};

// Rules of the 1.3 fields that every device checks, with or without
// DRM_LNPU_CAP_PROFILING.
TEST_F(ProfileTest, ProfileHandleWithoutTheFlagIsEinval) {
  const Submission job = ThreeCommandJob();
  drm_lnpu_submit args = job.Args();
  args.profile_handle = profile_.handle;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &args), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("without DRM_LNPU_SUBMIT_PROFILE"));
}

TEST_F(ProfileTest, NonZeroPadIsEinval) {
  for (const uint32_t flags : {0u, DRM_LNPU_SUBMIT_PROFILE}) {
    const Submission job = ThreeCommandJob();
    drm_lnpu_submit args = job.Args();
    args.flags = flags;
    args.profile_handle = flags != 0 ? profile_.handle : 0;
    args.pad = 1;
    EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &args), EINVAL) << flags;
    EXPECT_REJECTION(npu_, HasSubstr("pad is 1"));
  }
}

// User space built before 1.3 passes the 56-byte struct that ended at
// fence: the device zero-fills profile_handle and pad (whatever memory
// follows the short struct), runs the job unprofiled and writes nothing
// past the 56 bytes.
TEST_F(ProfileTest, PreProfilingStructIsZeroExtended) {
  constexpr size_t kOldSize = offsetof(drm_lnpu_submit, profile_handle);
  static_assert(kOldSize == 56);
  struct {
    uint8_t submit[kOldSize];
    uint32_t after[2];
  } user;
  const Submission job = ThreeCommandJob();
  const drm_lnpu_submit args = job.Args();
  std::memcpy(user.submit, &args, kOldSize);
  user.after[0] = profile_.handle;  // read as profile_handle: EINVAL
  user.after[1] = 0xFFFFFFFFu;      // read as pad: EINVAL
  const unsigned long old_request =
      DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_SUBMIT, uint8_t[kOldSize]);
  ASSERT_EQ(_IOC_SIZE(old_request), kOldSize);
  ASSERT_EQ(file_->Ioctl(old_request, user.submit), 0);
  drm_lnpu_submit result{};
  std::memcpy(&result, user.submit, kOldSize);
  EXPECT_EQ(result.fence, 1u);
  EXPECT_EQ(user.after[0], profile_.handle);
  EXPECT_EQ(user.after[1], 0xFFFFFFFFu);
  EXPECT_EQ(WaitJob(*file_, result.fence), 0);
  EXPECT_EQ(profile_.data[0], 0xAB) << "an old submit is not profiled";
  EXPECT_EQ(std::memcmp(dst_.data, src_.data, 8192), 0);
}

// A device without DRM_LNPU_CAP_PROFILING: the kernel module, whose
// firmware protocol has no timestamps, or a software NPU built without
// profiling.
class UnprofiledDeviceTest : public ProfileTest {
 protected:
  UnprofiledDeviceTest() : ProfileTest(WithoutProfiling()) {}

  static SoftNpuOptions WithoutProfiling() {
    SoftNpuOptions options = SmallDeviceOptions();
    options.profiling = false;
    return options;
  }
};

TEST_F(UnprofiledDeviceTest, ProfileFlagIsEopnotsupp) {
  drm_lnpu_get_param param{};
  param.param = DRM_LNPU_PARAM_CAPABILITIES;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &param), 0);
  EXPECT_EQ(param.value & DRM_LNPU_CAP_PROFILING, 0u);
  uint64_t fence = 0;
  EXPECT_EQ(SubmitProfiled(ThreeCommandJob(), profile_.handle, &fence), EOPNOTSUPP);
  EXPECT_REJECTION(npu_, HasSubstr("without DRM_LNPU_CAP_PROFILING"));
  EXPECT_EQ(profile_.data[0], 0xAB);
  // The EINVAL rules come first, as on every device.
  const Submission job = ThreeCommandJob();
  drm_lnpu_submit args = job.Args();
  args.flags = DRM_LNPU_SUBMIT_PROFILE;
  args.profile_handle = profile_.handle;
  args.pad = 1;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &args), EINVAL);
}

// The tests below need a device with DRM_LNPU_CAP_PROFILING.
class ProfiledDeviceTest : public ProfileTest {
 protected:
  void SetUp() override {
    ProfileTest::SetUp();
    if (npu_->is_kernel()) GTEST_SKIP() << "the kernel module does not profile";
  }
};

TEST_F(ProfiledDeviceTest, ReportsTheCapability) {
  drm_lnpu_get_param param{};
  param.param = DRM_LNPU_PARAM_CAPABILITIES;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &param), 0);
  EXPECT_NE(param.value & DRM_LNPU_CAP_PROFILING, 0u);
}

TEST_F(ProfiledDeviceTest, FillsOneOrderedRecordPerCommandWithinTheJob) {
  uint64_t fence = 0;
  ASSERT_EQ(SubmitProfiled(ThreeCommandJob(), profile_.handle, &fence), 0);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  const drm_lnpu_profile_header header = Header();
  EXPECT_EQ(header.command_count, 3u);
  EXPECT_EQ(header.engine, uint32_t{DRM_LNPU_ENGINE_DMA});
  ASSERT_GT(header.job_start_ns, 0u);
  ASSERT_GE(header.job_end_ns, header.job_start_ns);
  uint64_t previous_end = header.job_start_ns;
  uint64_t busy = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    const drm_lnpu_profile_command r = Record(i);
    EXPECT_GE(r.start_ns, previous_end) << i;
    EXPECT_GE(r.end_ns, r.start_ns) << i;
    previous_end = r.end_ns;
    busy += r.end_ns - r.start_ns;
  }
  EXPECT_LE(previous_end, header.job_end_ns);
  EXPECT_LE(busy, header.job_end_ns - header.job_start_ns);
  // Nothing past the records is written.
  const uint8_t* after = profile_.data + DRM_LNPU_PROFILE_BYTES(3);
  EXPECT_EQ(after[0], 0xAB);
  EXPECT_EQ(std::memcmp(dst_.data, src_.data, 8192), 0);
}

TEST_F(ProfiledDeviceTest, CancelledJobHasZeroTimes) {
  // A faulting job: its successor, chained on its fence, is cancelled.
  Submission bad;
  bad.engine = DRM_LNPU_ENGINE_DMA;
  bad.cmd_handle = cmd_.handle;
  bad.cmd_offset = 4096;
  bad.cmd_size = CommandStream().Nop().WriteTo(cmd_, 4096);
  ASSERT_TRUE(npu_->InjectFault({FaultInjection::Kind::kFault, DRM_LNPU_ENGINE_DMA, 1}).ok());
  uint64_t first = 0;
  ASSERT_EQ(Submit(*file_, bad, &first), 0);
  Submission chained = ThreeCommandJob();
  chained.in_fences = {first};
  uint64_t second = 0;
  ASSERT_EQ(SubmitProfiled(chained, profile_.handle, &second), 0);
  EXPECT_NE(WaitJob(*file_, second), 0);
  const drm_lnpu_profile_header header = Header();
  EXPECT_EQ(header.command_count, 3u);
  EXPECT_EQ(header.job_start_ns, 0u);
  EXPECT_EQ(header.job_end_ns, 0u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(Record(i).start_ns, 0u) << i;
    EXPECT_EQ(Record(i).end_ns, 0u) << i;
  }
}

TEST_F(ProfiledDeviceTest, UnknownProfileHandleIsEnoent) {
  EXPECT_EQ(SubmitProfiled(ThreeCommandJob(), 999), ENOENT);
  EXPECT_REJECTION(npu_, HasSubstr("profile_handle 999 is not open"));
}

TEST_F(ProfiledDeviceTest, CommandBufferAsProfileIsEinval) {
  EXPECT_EQ(SubmitProfiled(ThreeCommandJob(), cmd_.handle), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("DRM_LNPU_BO_CMDBUF or DRM_LNPU_BO_READ_ONLY"));
}

TEST_F(ProfiledDeviceTest, ReadOnlyProfileIsEinval) {
  TestBuffer read_only = CreateBuffer(*file_, 4096, DRM_LNPU_BO_READ_ONLY);
  EXPECT_EQ(SubmitProfiled(ThreeCommandJob(), read_only.handle), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("DRM_LNPU_BO_CMDBUF or DRM_LNPU_BO_READ_ONLY"));
}

TEST_F(ProfiledDeviceTest, ProfileListedInBoHandlesIsEinval) {
  Submission job = ThreeCommandJob();
  job.bo_handles.push_back(profile_.handle);
  EXPECT_EQ(SubmitProfiled(job, profile_.handle), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("is also bo_handles[2]"));
}

TEST_F(ProfiledDeviceTest, ProfileSmallerThanTheRecordsIsEinval) {
  // 300 commands need 24 + 300 * 16 bytes, more than the 4096-byte BO.
  CommandStream nops;
  for (int i = 0; i < 300; ++i) nops.Nop();
  Submission job;
  job.engine = DRM_LNPU_ENGINE_DMA;
  job.cmd_handle = cmd_.handle;
  job.cmd_size = nops.WriteTo(cmd_);
  EXPECT_EQ(SubmitProfiled(job, profile_.handle), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("DRM_LNPU_PROFILE_BYTES(300) = 4824"));
}

// Both 1.3 submit flags in one job: the descriptor becomes readable once
// the job ended, and by then the profile is complete.
// The software NPU runs consecutive MATMULs of one src as one group
// (command_set.h); their records then divide the group's interval in
// proportion to their weight bytes, back to back. A MATMUL that reads a
// group's output, and the (kMaxCommandGroup + 1)-th of one src, start
// groups of their own.
TEST_F(ProfiledDeviceTest, GroupedMatmulsShareTheirIntervalByWeightBytes) {
  constexpr uint32_t kK = 256;
  constexpr uint32_t kRowBytes = kK / 32 * 34;  // Q8_0
  constexpr uint32_t kMatmuls = 12;
  // Matmul i: all read src, n = 64 but for matmuls 0 and 3 (256). Matmul 3
  // adds matmul 0's output as its bias, so it starts the second group, of
  // the maximum 8; the last starts the third.
  const uint32_t n[kMatmuls] = {256, 64, 64, 256, 64, 64, 64, 64, 64, 64, 64, 64};
  const TestBuffer src = CreateBuffer(*file_, kK * 4);
  const TestBuffer weights = CreateBuffer(*file_, 256 * kRowBytes);
  const TestBuffer dst = CreateBuffer(*file_, kMatmuls * 256 * 4);
  std::memset(weights.data, 0, weights.size);
  CommandStream stream;
  for (uint32_t i = 0; i < kMatmuls; ++i) {
    lnpu_cmd_matmul matmul{};
    matmul.hdr = {LNPU_OP_MATMUL, i == 3 ? uint16_t{LNPU_MATMUL_BIAS} : uint16_t{0},
                  sizeof(matmul)};
    matmul.src = src.device_addr;
    matmul.weight = weights.device_addr;
    matmul.bias = i == 3 ? dst.device_addr : 0;
    matmul.dst = dst.device_addr + uint64_t{i} * 256 * 4;
    matmul.rows = 1;
    matmul.k = kK;
    matmul.n = n[i];
    matmul.weight_dtype = LNPU_DTYPE_Q8_0;
    stream.Add(matmul);
  }
  Submission job;
  job.cmd_handle = cmd_.handle;
  job.cmd_size = stream.WriteTo(cmd_);
  job.bo_handles = {src.handle, weights.handle, dst.handle};
  uint64_t fence = 0;
  ASSERT_EQ(SubmitProfiled(job, profile_.handle, &fence), 0);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  ASSERT_EQ(Header().command_count, kMatmuls);
  auto duration = [&](uint32_t i) { return int64_t(Record(i).end_ns - Record(i).start_ns); };
  // Groups {0, 1, 2}, {3..10}, {11}: members back to back.
  for (uint32_t i : {1u, 2u, 4u, 5u, 6u, 7u, 8u, 9u, 10u}) {
    EXPECT_EQ(Record(i).start_ns, Record(i - 1).end_ns) << i;
  }
  // A command that starts a group starts after the clock read that ended
  // the group before.
  for (uint32_t i : {3u, 11u}) {
    EXPECT_GT(Record(i).start_ns, Record(i - 1).end_ns) << i;
  }
  // Shares by weight bytes, up to the nanosecond rounding of each boundary.
  EXPECT_NEAR(duration(0), 4 * duration(1), 6);
  EXPECT_NEAR(duration(1), duration(2), 2);
  EXPECT_NEAR(duration(3), 4 * duration(4), 6);
  for (uint32_t i = 5; i <= 10; ++i) EXPECT_NEAR(duration(i), duration(4), 2) << i;
}

TEST_F(ProfiledDeviceTest, CombinesWithTheOutFenceFd) {
  const Submission job = ThreeCommandJob();
  drm_lnpu_submit args = job.Args();
  args.flags = DRM_LNPU_SUBMIT_PROFILE | DRM_LNPU_SUBMIT_OUT_FENCE_FD;
  args.profile_handle = profile_.handle;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &args), 0);
  ASSERT_GT(args.out_fence_fd, STDERR_FILENO);
  pollfd entry{args.out_fence_fd, POLLIN, 0};
  EXPECT_EQ(poll(&entry, 1, 20'000), 1);
  EXPECT_NE(entry.revents & POLLIN, 0);
  // Read after WAIT: ThreadSanitizer does not see the eventfd's ordering.
  ASSERT_EQ(WaitJob(*file_, args.fence), 0);
  const drm_lnpu_profile_header header = Header();
  EXPECT_EQ(header.command_count, 3u);
  EXPECT_GT(header.job_start_ns, 0u);
  EXPECT_GE(Record(2).end_ns, Record(2).start_ns);
  EXPECT_GT(Record(2).start_ns, 0u);
  EXPECT_LE(Record(2).end_ns, header.job_end_ns);
  EXPECT_EQ(close(args.out_fence_fd), 0);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
