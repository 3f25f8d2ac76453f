// The device object: options, the process-wide instance, VERSION,
// GET_PARAM and ioctl dispatch.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/quant_matmul_q6_k.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

TEST(SoftNpuOptionsTest, DefaultsAreValid) {
  EXPECT_TRUE(SoftNpuOptions().Validate().ok());
}

TEST(SoftNpuOptionsTest, RejectsEachFieldOutOfRange) {
  SoftNpuOptions options;
  options.memory_bytes = 4097;
  EXPECT_THAT(std::string(options.Validate().message()),
              HasSubstr("memory_bytes"));
  options = SoftNpuOptions();
  options.memory_bytes = 0;
  EXPECT_FALSE(options.Validate().ok());
  options = SoftNpuOptions();
  options.job_timeout_ms = 0;
  EXPECT_THAT(std::string(options.Validate().message()),
              HasSubstr("job_timeout_ms"));
  options = SoftNpuOptions();
  options.compute_threads = -1;
  EXPECT_THAT(std::string(options.Validate().message()),
              HasSubstr("compute_threads"));
  options = SoftNpuOptions();
  options.start_delay_us = 1'000'001;
  EXPECT_THAT(std::string(options.Validate().message()),
              HasSubstr("start_delay_us"));
  options.start_delay_us = 0;
  EXPECT_TRUE(options.Validate().ok());
}

TEST(SoftNpuOptionsTest, ComputeThreadsZeroMeansOnePerCpu) {
  SoftNpuOptions options = SmallDeviceOptions();
  options.compute_threads = 0;
  auto npu = SoftNpu::Create(options);
  EXPECT_GE(npu->options().compute_threads, 1);
  auto file = npu->Open();
  EXPECT_EQ(GetParam(*file, DRM_LNPU_PARAM_COMPUTE_UNITS),
            static_cast<uint64_t>(npu->options().compute_threads));
}

TEST(SoftNpuDefaultTest, IsOneProcessWideInstance) {
  auto a = SoftNpu::Default();
  auto b = SoftNpu::Default();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  auto file = a->Open();
  EXPECT_THAT(file->Describe(), HasSubstr("software"));
}

// Death tests re-exec the test binary ("threadsafe": the device has
// threads) unless the run chose a style: under qemu-user the kernel cannot
// re-exec an aarch64 binary, so tools/scripts/test.sh sets
// GTEST_DEATH_TEST_STYLE=fast there.
void UseThreadsafeDeathTestsUnlessChosen() {
  if (std::getenv("GTEST_DEATH_TEST_STYLE") == nullptr) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
}

TEST(SoftNpuDeathTest, PausingAnUnknownEngineTerminates) {
  UseThreadsafeDeathTestsUnlessChosen();
  auto npu = SoftNpu::Create(SmallDeviceOptions());
  EXPECT_DEATH(npu->PauseEngine(DRM_LNPU_ENGINE_COUNT), "engine 2");
}

TEST(SoftNpuDeathTest, InvalidOptionsTerminateCreate) {
  UseThreadsafeDeathTestsUnlessChosen();
  SoftNpuOptions options;
  options.job_timeout_ms = 0;
  EXPECT_DEATH(SoftNpu::Create(options), "job_timeout_ms");
}

TEST(SoftNpuLifetimeTest, OpenFileKeepsTheDeviceAlive) {
  auto npu = SoftNpu::Create(SmallDeviceOptions());
  std::weak_ptr<SoftNpu> weak = npu;
  auto file = npu->Open();
  npu.reset();
  EXPECT_FALSE(weak.expired());
  TestBuffer buffer = CreateBuffer(*file, 4096);
  EXPECT_NE(buffer.handle, 0u);
  file.reset();
  EXPECT_TRUE(weak.expired());
}

using VersionTest = SoftNpuTest;

TEST_F(VersionTest, ReportsNameVersionDateAndDescription) {
  char name[32] = {}, date[32] = {}, desc[64] = {};
  drm_version version{};
  version.name = name;
  version.name_len = sizeof(name);
  version.date = date;
  version.date_len = sizeof(date);
  version.desc = desc;
  version.desc_len = sizeof(desc);
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_VERSION, &version), 0);
  EXPECT_EQ(version.version_major, LNPU_UAPI_VERSION_MAJOR);
  EXPECT_EQ(version.version_minor, LNPU_UAPI_VERSION_MINOR);
  EXPECT_EQ(version.version_patchlevel, 0);
  EXPECT_STREQ(name, LNPU_DRIVER_NAME);
  EXPECT_EQ(version.name_len, std::strlen(LNPU_DRIVER_NAME));
  EXPECT_EQ(version.date_len, std::strlen(date));
  EXPECT_GT(version.date_len, 0u);
  EXPECT_EQ(version.desc_len, std::strlen(desc));
  if (!npu_->is_kernel()) {
    EXPECT_THAT(std::string(desc), HasSubstr("software"));
  }
}

TEST_F(VersionTest, NullBuffersOnlyReportLengths) {
  drm_version version{};
  version.name_len = 100;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_VERSION, &version), 0);
  EXPECT_EQ(version.name_len, std::strlen(LNPU_DRIVER_NAME));
  EXPECT_GT(version.desc_len, 0u);
}

TEST_F(VersionTest, ShortBuffersAreFilledWithoutOverrun) {
  char name[8];
  std::memset(name, 'x', sizeof(name));
  drm_version version{};
  version.name = name;
  version.name_len = 2;
  ASSERT_EQ(file_->Ioctl(DRM_IOCTL_VERSION, &version), 0);
  EXPECT_EQ(std::string(name, 3), "lnx");  // 2 bytes, no terminator
  EXPECT_EQ(version.name_len, std::strlen(LNPU_DRIVER_NAME));
}

using GetParamTest = SoftNpuTest;

TEST_F(GetParamTest, ReportsEveryParameter) {
  if (npu_->is_kernel()) {
    GTEST_SKIP() << "the software NPU's values (a kernel has its own id, "
                    "capabilities, timeout and cumulative counters)";
  }
  KernelFile& file = *file_;
  EXPECT_EQ(
      GetParam(file, DRM_LNPU_PARAM_UAPI_VERSION),
      (uint64_t{LNPU_UAPI_VERSION_MAJOR} << 16) | LNPU_UAPI_VERSION_MINOR);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_DEVICE_ID), kSoftNpuDeviceId);
  EXPECT_EQ(
      GetParam(file, DRM_LNPU_PARAM_CAPABILITIES),
      DRM_LNPU_CAP_DTYPE_F16 | DRM_LNPU_CAP_IN_FENCES | DRM_LNPU_CAP_SOFTWARE |
          DRM_LNPU_CAP_USERPTR | DRM_LNPU_CAP_PROFILING |
          DRM_LNPU_CAP_DTYPE_Q8_0_P16 | DRM_LNPU_CAP_DTYPE_Q4_0_P16 | DRM_LNPU_CAP_DTYPE_Q6_K |
          DRM_LNPU_CAP_DTYPE_Q8_0_P16S | DRM_LNPU_CAP_DTYPE_Q4_0_P16S |
          (compute::ActiveQuantMatmulPath().q8_0_p16_kernels
               ? DRM_LNPU_CAP_Q8_0_P16_PREFERRED | DRM_LNPU_CAP_Q8_0_P16S_PREFERRED
               : 0) |
          (compute::ActiveQuantMatmulPath().q4_0_p16_kernels
               ? DRM_LNPU_CAP_Q4_0_P16_PREFERRED | DRM_LNPU_CAP_Q4_0_P16S_PREFERRED
               : 0) |
          (compute::Q6_KGemvPreferred() ? DRM_LNPU_CAP_Q6_K_PREFERRED : 0));
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_MEMORY_SIZE), 64ull << 20);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_MEMORY_USED), 0u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_ENGINE_MASK), 3u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_BO_ALIGNMENT), 4096u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_MAX_CMD_SIZE), kMaxCommandBytes);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_MAX_JOB_BOS), kMaxJobBuffers);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_JOB_TIMEOUT_MS), 5000u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_COMPUTE_UNITS), 2u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_MAX_IN_FENCES), kMaxFences);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_JOBS_SUBMITTED), 0u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_JOBS_COMPLETED), 0u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_JOB_FAULTS), 0u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_RESETS), 0u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_MEMORY_FREE), 64ull << 20);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_MEMORY_IMPORTED), 0u);
  EXPECT_EQ(GetParam(file, DRM_LNPU_PARAM_JOBS_CANCELLED), 0u);
  EXPECT_EQ(DRM_LNPU_PARAM_COUNT, 19) << "parameter ids are append-only";
}

TEST_F(GetParamTest, MemoryUsedFollowsAllocations) {
  EXPECT_NE(CreateBuffer(*file_, 5000).handle, 0u);
  EXPECT_EQ(GetParam(*file_, DRM_LNPU_PARAM_MEMORY_USED), 8192u);
  EXPECT_EQ(GetParam(*file_, DRM_LNPU_PARAM_MEMORY_FREE),
            (64ull << 20) - 8192u);
  EXPECT_EQ(npu_->memory_used(), 8192u);
}

TEST_F(GetParamTest, UnknownParamIsEinval) {
  drm_lnpu_get_param get{};
  get.param = DRM_LNPU_PARAM_COUNT;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &get), EINVAL);
  get.param = 0xffffffffu;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &get), EINVAL);
  EXPECT_REJECTION(npu_, HasSubstr("param"));
}

TEST_F(GetParamTest, NonZeroPadIsEinval) {
  drm_lnpu_get_param get{};
  get.param = DRM_LNPU_PARAM_UAPI_VERSION;
  get.pad = 1;
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &get), EINVAL);
}

using IoctlDispatchTest = SoftNpuTest;

TEST_F(IoctlDispatchTest, UnknownRequestIsEnotty) {
  drm_lnpu_get_param get{};
  EXPECT_EQ(
      file_->Ioctl(DRM_IOWR(DRM_COMMAND_BASE + 0x20, drm_lnpu_get_param), &get),
      ENOTTY);
  // An lnpu number under another ioctl type.
  EXPECT_EQ(file_->Ioctl(_IOWR('x', DRM_COMMAND_BASE + DRM_LNPU_GET_PARAM,
                               drm_lnpu_get_param),
                         &get),
            ENOTTY);
  EXPECT_REJECTION(npu_, HasSubstr("not an lnpu ioctl"));
}

// The layout of drm_lnpu_bo_create before UAPI 1.1 added user_ptr.
struct BoCreateV1_0 {
  __u64 size;
  __u32 flags;
  __u32 handle;
  __u64 device_addr;
};

TEST_F(IoctlDispatchTest, OlderShorterStructIsZeroExtended) {
  // Poison behind the short struct: the driver must neither read it as
  // user_ptr nor write to it.
  struct {
    BoCreateV1_0 create;
    uint64_t after;
  } user{};
  user.create.size = 4096;
  user.after = 0x1234;
  ASSERT_EQ(file_->Ioctl(DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_BO_CREATE,
                                  BoCreateV1_0),
                         &user.create),
            0);
  EXPECT_NE(user.create.handle, 0u);
  EXPECT_NE(user.create.device_addr, 0u);
  EXPECT_EQ(user.after, 0x1234u);
  EXPECT_EQ(CloseHandle(*file_, user.create.handle), 0);
}

TEST_F(IoctlDispatchTest, NewerLongerStructHasItsTailIgnored) {
  struct {
    drm_lnpu_get_param get;
    uint64_t future_field;
  } user{};
  user.get.param = DRM_LNPU_PARAM_BO_ALIGNMENT;
  user.future_field = 7;
  ASSERT_EQ(file_->Ioctl(DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_GET_PARAM,
                                  decltype(user)),
                         &user),
            0);
  EXPECT_EQ(user.get.value, 4096u);
  EXPECT_EQ(user.future_field, 7u);
}

TEST_F(IoctlDispatchTest, NullArgumentIsEfault) {
  EXPECT_EQ(file_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, nullptr), EFAULT);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
