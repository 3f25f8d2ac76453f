// Fault injection, job timeouts and recovery: a hung engine is caught by
// the watchdog, the error reaches the waiter, the guilty file is banned,
// other files and the other engine keep working; counters follow.
#include <array>
#include <cerrno>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_iface/softnpu/fault_injection.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kTimeoutMs = 200;

// A device with a short job timeout, and NOP jobs on either engine.
class FaultInjectionTest : public SoftNpuTest {
 protected:
  static SoftNpuOptions Options() {
    SoftNpuOptions options = SmallDeviceOptions();
    options.job_timeout_ms = kTimeoutMs;
    return options;
  }
  FaultInjectionTest() : SoftNpuTest(Options()) {}

  // A NOP job on `engine` of `file`, with its own command buffer (kept
  // open in `file`).
  Submission Nop(KernelFile& file, uint32_t engine) {
    TestBuffer cmd = CreateBuffer(file, 4096, DRM_LNPU_BO_CMDBUF);
    Submission nop;
    nop.engine = engine;
    nop.cmd_handle = cmd.handle;
    nop.cmd_size = CommandStream().Nop().WriteTo(cmd);
    return nop;
  }

  // A parameter; the job counters (ids 12 to 18) since the fixture was
  // built, as on the fresh software NPU (a kernel's are cumulative).
  uint64_t Param(uint32_t param) {
    const uint64_t value = GetParam(*file_, param);
    return IsCounter(param) ? value - counters_at_start_[param] : value;
  }

 private:
  static bool IsCounter(uint32_t param) {
    return param >= DRM_LNPU_PARAM_JOBS_SUBMITTED &&
           param < DRM_LNPU_PARAM_COUNT && param != DRM_LNPU_PARAM_MEMORY_FREE &&
           param != DRM_LNPU_PARAM_MEMORY_IMPORTED;
  }
  std::array<uint64_t, DRM_LNPU_PARAM_COUNT> counters_at_start_ = [this] {
    std::array<uint64_t, DRM_LNPU_PARAM_COUNT> values{};
    for (uint32_t param = 0; param < DRM_LNPU_PARAM_COUNT; ++param) {
      if (IsCounter(param)) values[param] = GetParam(*file_, param);
    }
    return values;
  }();
};

TEST_F(FaultInjectionTest, HungJobTimesOutAndItsFileIsBanned) {
  ASSERT_TRUE(npu_->InjectFault({FaultInjection::Kind::kHang,
                                 DRM_LNPU_ENGINE_COMPUTE, 1})
                  .ok());
  Submission nop = Nop(*file_, DRM_LNPU_ENGINE_COMPUTE);
  uint64_t hung = 0, behind = 0;
  const int64_t start = MonotonicNowNs();
  ASSERT_EQ(Submit(*file_, nop, &hung), 0);
  ASSERT_EQ(Submit(*file_, nop, &behind), 0);

  // The engine makes no progress: nothing signals before the timeout.
  drm_lnpu_wait result{};
  EXPECT_EQ(Wait(*file_, {hung}, DeadlineInMs(kTimeoutMs / 2)), ETIMEDOUT);
  ASSERT_EQ(Wait(*file_, {hung}, LongDeadline(), 0, &result), 0);
  EXPECT_EQ(result.job_error, -ECANCELED);
  EXPECT_GE(MonotonicNowNs() - start, int64_t{kTimeoutMs} * 1'000'000)
      << "only the watchdog may end a hang";
  EXPECT_EQ(WaitJob(*file_, behind), -ECANCELED)
      << "queued jobs of a banned file are cancelled";

  EXPECT_EQ(npu_->reset_count(), 1u);
  EXPECT_EQ(Param(DRM_LNPU_PARAM_RESETS), 1u);
  EXPECT_EQ(Param(DRM_LNPU_PARAM_JOBS_SUBMITTED), 2u);
  EXPECT_EQ(Param(DRM_LNPU_PARAM_JOBS_CANCELLED), 1u);
  EXPECT_EQ(Param(DRM_LNPU_PARAM_JOBS_COMPLETED), 0u);
  EXPECT_FAULT_MESSAGE(npu_, HasSubstr("exceeded the job timeout of 200 ms at command 0"));
  EXPECT_EQ(Submit(*file_, nop), ECANCELED);
  EXPECT_REJECTION(npu_, HasSubstr("banned"));
}

TEST_F(FaultInjectionTest, OtherFilesAndTheOtherEngineKeepWorking) {
  auto other = npu_->Open();
  Submission other_compute = Nop(*other, DRM_LNPU_ENGINE_COMPUTE);
  Submission other_dma = Nop(*other, DRM_LNPU_ENGINE_DMA);
  ASSERT_TRUE(npu_->InjectFault({FaultInjection::Kind::kHang,
                                 DRM_LNPU_ENGINE_COMPUTE, 1})
                  .ok());
  uint64_t hung = 0;
  ASSERT_EQ(Submit(*file_, Nop(*file_, DRM_LNPU_ENGINE_COMPUTE), &hung), 0);
  // Queued behind the hang on the same engine, from another file.
  uint64_t queued = 0;
  ASSERT_EQ(Submit(*other, other_compute, &queued), 0);
  // The DMA engine runs while compute hangs.
  uint64_t dma = 0;
  ASSERT_EQ(Submit(*other, other_dma, &dma), 0);
  drm_lnpu_wait result{};
  ASSERT_EQ(Wait(*other, {dma}, DeadlineInMs(kTimeoutMs / 2), 0, &result), 0);
  EXPECT_EQ(result.job_error, 0);
  EXPECT_EQ(Wait(*other, {queued}, MonotonicNowNs()), ETIMEDOUT)
      << "the compute engine is stuck";

  EXPECT_EQ(WaitJob(*file_, hung), -ECANCELED);
  EXPECT_EQ(WaitJob(*other, queued), 0) << "the reset spares innocent jobs";
  uint64_t later = 0;
  ASSERT_EQ(Submit(*other, other_compute, &later), 0);
  EXPECT_EQ(WaitJob(*other, later), 0);
  EXPECT_EQ(npu_->reset_count(), 1u);
}

TEST_F(FaultInjectionTest, InjectedFaultsFailJobsWithEioWithoutBanning) {
  ASSERT_TRUE(
      npu_->InjectFault({FaultInjection::Kind::kFault, DRM_LNPU_ENGINE_DMA, 2})
          .ok());
  Submission nop = Nop(*file_, DRM_LNPU_ENGINE_DMA);
  std::vector<int> errors;
  for (int i = 0; i < 3; ++i) {
    uint64_t fence = 0;
    ASSERT_EQ(Submit(*file_, nop, &fence), 0);
    errors.push_back(WaitJob(*file_, fence));
  }
  EXPECT_EQ(errors, (std::vector<int>{-EIO, -EIO, 0}));
  EXPECT_FAULT_MESSAGE(npu_, HasSubstr("injected fault"));
  EXPECT_EQ(Param(DRM_LNPU_PARAM_JOB_FAULTS), 2u);
  EXPECT_EQ(Param(DRM_LNPU_PARAM_JOBS_COMPLETED), 1u);
  EXPECT_EQ(Param(DRM_LNPU_PARAM_RESETS), 0u);
}

TEST_F(FaultInjectionTest, InjectionsApplyInOrderToJobsThatRun) {
  ASSERT_TRUE(
      npu_->InjectFault({FaultInjection::Kind::kFault, DRM_LNPU_ENGINE_DMA, 1})
          .ok());
  ASSERT_TRUE(
      npu_->InjectFault({FaultInjection::Kind::kHang, DRM_LNPU_ENGINE_DMA, 1})
          .ok());
  Submission nop = Nop(*file_, DRM_LNPU_ENGINE_DMA);
  uint64_t first = 0, second = 0;
  ASSERT_EQ(Submit(*file_, nop, &first), 0);
  EXPECT_EQ(WaitJob(*file_, first), -EIO);
  ASSERT_EQ(Submit(*file_, nop, &second), 0);
  EXPECT_EQ(WaitJob(*file_, second), -ECANCELED);
  EXPECT_EQ(npu_->reset_count(), 1u);
}

TEST_F(FaultInjectionTest, InvalidInjectionIsRejected) {
  EXPECT_THAT(std::string(npu_->InjectFault({FaultInjection::Kind::kHang,
                                             DRM_LNPU_ENGINE_COUNT, 1})
                              .message()),
              HasSubstr("engine 2"));
  EXPECT_THAT(std::string(npu_->InjectFault({FaultInjection::Kind::kHang,
                                             DRM_LNPU_ENGINE_DMA, 0})
                              .message()),
              HasSubstr("count is 0"));
  // Nothing was injected.
  Submission nop = Nop(*file_, DRM_LNPU_ENGINE_DMA);
  uint64_t fence = 0;
  ASSERT_EQ(Submit(*file_, nop, &fence), 0);
  EXPECT_EQ(WaitJob(*file_, fence), 0);
}

TEST_F(FaultInjectionTest, DestroyingTheDeviceReleasesAHungEngine) {
  auto npu = SoftNpu::Create(SmallDeviceOptions());  // 5 s timeout
  auto file = npu->Open();
  ASSERT_TRUE(npu->InjectFault({FaultInjection::Kind::kHang,
                                DRM_LNPU_ENGINE_COMPUTE, 1})
                  .ok());
  TestBuffer cmd = CreateBuffer(*file, 4096, DRM_LNPU_BO_CMDBUF);
  Submission nop;
  nop.cmd_handle = cmd.handle;
  nop.cmd_size = CommandStream().Nop().WriteTo(cmd);
  ASSERT_EQ(Submit(*file, nop), 0);
  const int64_t start = MonotonicNowNs();
  file.reset();
  npu.reset();  // must not wait for the 5 s timeout
  EXPECT_LT(MonotonicNowNs() - start, int64_t{2'000'000'000});
}

TEST(ParseFaultInjectionsTest, ParsesKindsEnginesAndCounts) {
  absl::StatusOr<std::vector<FaultInjection>> parsed =
      ParseFaultInjections("hang:compute:1,fault:dma:3,fault:compute");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].kind, FaultInjection::Kind::kHang);
  EXPECT_EQ((*parsed)[0].engine, uint32_t{DRM_LNPU_ENGINE_COMPUTE});
  EXPECT_EQ((*parsed)[0].count, 1u);
  EXPECT_EQ((*parsed)[1].kind, FaultInjection::Kind::kFault);
  EXPECT_EQ((*parsed)[1].engine, uint32_t{DRM_LNPU_ENGINE_DMA});
  EXPECT_EQ((*parsed)[1].count, 3u);
  EXPECT_EQ((*parsed)[2].count, 1u);
}

TEST(ParseFaultInjectionsTest, RejectsMalformedEntries) {
  for (const char* spec :
       {"", "hang", "stall:compute:1", "hang:npu:1", "hang:dma:0",
        "hang:dma:-1", "hang:dma:x", "hang:dma:1:2", "hang:dma:1,"}) {
    absl::StatusOr<std::vector<FaultInjection>> parsed =
        ParseFaultInjections(spec);
    EXPECT_FALSE(parsed.ok()) << spec;
    EXPECT_THAT(std::string(parsed.status().message()),
                HasSubstr("kind:engine")) << spec;
  }
}

}  // namespace
}  // namespace lnpu::softnpu::testing
