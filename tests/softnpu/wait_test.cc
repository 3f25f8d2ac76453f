// WAIT: deadlines, WAIT_ANY, several fences, errors, old fences, waiters
// that run the jobs they wait for.
#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
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

// Threads held in a signal handler (blocked in read() of a pipe, which is
// async-signal-safe) stand for threads the scheduler keeps off the CPU.
int hold_pipe[2] = {-1, -1};
std::atomic<int> held_threads{0};
std::atomic<int> released_threads{0};
void HoldThread(int) {
  const int saved_errno = errno;
  held_threads.fetch_add(1);
  char byte;
  while (read(hold_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
  released_threads.fetch_add(1);
  errno = saved_errno;
}

// Holds the software NPU's threads (named "lnpu-...": engine workers,
// watchdogs, compute workers) until the destructor.
class OtherThreadsHeld {
 public:
  OtherThreadsHeld() {
    EXPECT_EQ(pipe(hold_pipe), 0);
    struct sigaction hold {};
    hold.sa_handler = HoldThread;
    sigemptyset(&hold.sa_mask);
    EXPECT_EQ(sigaction(SIGUSR2, &hold, &previous_), 0);
    held_threads = 0;
    released_threads = 0;
    DIR* tasks = opendir("/proc/self/task");
    EXPECT_NE(tasks, nullptr);
    while (const dirent* entry = tasks != nullptr ? readdir(tasks) : nullptr) {
      const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid <= 0) continue;
      std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
      std::string name;
      if (!std::getline(comm, name) || name.rfind("lnpu-", 0) != 0) continue;
      if (syscall(SYS_tgkill, getpid(), tid, SIGUSR2) == 0) ++count_;
    }
    if (tasks != nullptr) closedir(tasks);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (held_threads.load() < count_ && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    EXPECT_EQ(held_threads.load(), count_) << "signalled threads that did not stop";
  }
  ~OtherThreadsHeld() {
    const std::string bytes(count_, 'x');
    EXPECT_EQ(write(hold_pipe[1], bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
    while (released_threads.load() < held_threads.load()) std::this_thread::yield();
    sigaction(SIGUSR2, &previous_, nullptr);
    close(hold_pipe[0]);
    close(hold_pipe[1]);
  }
  int count() const { return count_; }

 private:
  struct sigaction previous_ {};
  int count_ = 0;
};

// With every device thread held, a waiter whose deadline lies beyond the
// job timeout runs the jobs itself (both engines, one chained on the
// other); without that the wait would last until the threads are released.
TEST_F(WaitTest, TheWaiterRunsTheJobsWhenTheEngineThreadsCannotRun) {
  if (npu_->is_kernel()) GTEST_SKIP() << "the kernel module runs jobs on its own threads only";
  // Idle device threads sleep outside their locks, where the signals land.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::atomic<bool> done{false};
  int job_error = -1;
  bool done_while_held = false;
  std::thread waiter;
  {
    OtherThreadsHeld held;
    // Two engine threads, two watchdogs, one compute worker (of this test's
    // device; others' may be held too).
    ASSERT_GE(held.count(), 5);
    waiter = std::thread([&] {
      const uint64_t compute = SubmitNop(DRM_LNPU_ENGINE_COMPUTE);
      Submission job;
      job.engine = DRM_LNPU_ENGINE_DMA;
      job.cmd_handle = cmd_.handle;
      job.cmd_size = 8;
      job.in_fences = {compute};
      uint64_t dma = 0;
      EXPECT_EQ(Submit(*file_, job, &dma), 0);
      job_error = WaitJob(*file_, dma);
      done = true;
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    done_while_held = done.load();
  }  // releases the held threads: a stuck wait ends now
  waiter.join();
  EXPECT_TRUE(done_while_held) << "the wait needed the held engine threads";
  EXPECT_EQ(job_error, 0);
}

// A waiter runs only its own file's jobs: another file's job at the head
// of the queue waits for the engine's worker, and so does the waiter.
TEST(WaitOwnJobsTest, TheWaiterLeavesOtherFilesJobsToTheEngine) {
  SoftNpuOptions options = SmallDeviceOptions();
  options.job_timeout_ms = 100;  // waits with deadlines beyond it run jobs
  auto npu = TestNpu::Create(options);
  if (npu->is_kernel()) GTEST_SKIP() << "the kernel module runs jobs on its own threads only";
  auto other = npu->Open();
  auto own = npu->Open();
  TestBuffer other_cmd = CreateBuffer(*other, 4096, DRM_LNPU_BO_CMDBUF);
  TestBuffer own_cmd = CreateBuffer(*own, 4096, DRM_LNPU_BO_CMDBUF);
  Submission job;
  job.engine = DRM_LNPU_ENGINE_COMPUTE;
  job.cmd_size = 8;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uint64_t other_fence = 0, own_fence = 0;
  {
    OtherThreadsHeld held;
    ASSERT_GE(held.count(), 5);
    job.cmd_handle = other_cmd.handle;
    CommandStream().Nop().WriteTo(other_cmd);
    ASSERT_EQ(Submit(*other, job, &other_fence), 0);
    job.cmd_handle = own_cmd.handle;
    CommandStream().Nop().WriteTo(own_cmd);
    ASSERT_EQ(Submit(*own, job, &own_fence), 0);
    const int64_t start = MonotonicNowNs();
    EXPECT_EQ(Wait(*own, {own_fence}, DeadlineInMs(300)), ETIMEDOUT)
        << "the waiter ran the other file's job (and then its own)";
    EXPECT_GE(MonotonicNowNs() - start, 300'000'000 - 1'000'000);
  }
  EXPECT_EQ(WaitJob(*own, own_fence), 0);
  EXPECT_EQ(WaitJob(*other, other_fence), 0);
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

// The doorbell latency (SoftNpuOptions::start_delay_us): an idle engine
// leaves a job that may start to a waiter of its file for the start delay,
// then its own worker starts it. Waits whose deadline lies within the job
// timeout do not run jobs, so they see only the worker.
class StartDelayTest : public ::testing::Test {
 protected:
  static constexpr int64_t kMs = 1'000'000;

  // A device whose engines leave jobs to waiters for `delay_ms`, with files
  // `own_` and `other_` and a NOP command buffer in each.
  void Start(int64_t delay_ms) {
    SoftNpuOptions options = SmallDeviceOptions();
    options.start_delay_us = static_cast<uint32_t>(delay_ms * 1000);
    npu_ = SoftNpu::Create(options);
    own_ = npu_->Open();
    other_ = npu_->Open();
    own_cmd_ = CreateBuffer(*own_, 4096, DRM_LNPU_BO_CMDBUF);
    other_cmd_ = CreateBuffer(*other_, 4096, DRM_LNPU_BO_CMDBUF);
    CommandStream().Nop().WriteTo(own_cmd_);
    CommandStream().Nop().WriteTo(other_cmd_);
  }

  uint64_t SubmitNop(KernelFile& file, const TestBuffer& cmd) {
    Submission job;
    job.cmd_handle = cmd.handle;
    job.cmd_size = 8;
    uint64_t fence = 0;
    EXPECT_EQ(Submit(file, job, &fence), 0);
    return fence;
  }

  std::shared_ptr<SoftNpu> npu_;
  std::unique_ptr<KernelFile> own_;
  std::unique_ptr<KernelFile> other_;
  TestBuffer own_cmd_;
  TestBuffer other_cmd_;
};

TEST_F(StartDelayTest, TheWorkerStartsAJobNoWaiterRunsAfterTheDelay) {
  Start(50);
  const int64_t start = MonotonicNowNs();
  const uint64_t fence = SubmitNop(*own_, own_cmd_);
  EXPECT_EQ(Wait(*own_, {fence}, DeadlineInMs(3000)), 0);
  EXPECT_GE(MonotonicNowNs() - start, 50 * kMs - kMs) << "started before the delay";
}

TEST_F(StartDelayTest, AWaiterRunsItsJobWithoutTheDelay) {
  Start(1000);
  const int64_t start = MonotonicNowNs();
  EXPECT_EQ(WaitJob(*own_, SubmitNop(*own_, own_cmd_)), 0);
  EXPECT_LT(MonotonicNowNs() - start, 500 * kMs) << "the job waited for the worker";
}

TEST_F(StartDelayTest, AJobBehindAnotherFilesJobStartsWhenThatEnds) {
  Start(1000);
  const int64_t start = MonotonicNowNs();
  const uint64_t own_fence = SubmitNop(*own_, own_cmd_);
  const uint64_t other_fence = SubmitNop(*other_, other_cmd_);
  // This waiter runs its own job, and leaves the other file's to the
  // worker at once.
  EXPECT_EQ(WaitJob(*own_, own_fence), 0);
  EXPECT_EQ(Wait(*other_, {other_fence}, DeadlineInMs(3000)), 0);
  EXPECT_LT(MonotonicNowNs() - start, 500 * kMs) << "the other file's job waited for the delay";
}

TEST_F(StartDelayTest, AResumedEngineStartsItsHeldJobAtOnce) {
  Start(1000);
  npu_->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t fence = SubmitNop(*own_, own_cmd_);
  EXPECT_EQ(Wait(*own_, {fence}, DeadlineInMs(50)), ETIMEDOUT) << "ran while paused";
  const int64_t resumed = MonotonicNowNs();
  npu_->ResumeEngine(DRM_LNPU_ENGINE_COMPUTE);
  EXPECT_EQ(Wait(*own_, {fence}, DeadlineInMs(3000)), 0);
  EXPECT_LT(MonotonicNowNs() - resumed, 500 * kMs) << "the held job waited for the delay";
}

TEST_F(StartDelayTest, TheWorkerRunsQueuedJobsBackToBack) {
  Start(50);
  std::vector<uint64_t> fences;
  for (int i = 0; i < 5; ++i) fences.push_back(SubmitNop(*own_, own_cmd_));
  const int64_t start = MonotonicNowNs();
  EXPECT_EQ(Wait(*own_, {fences.back()}, DeadlineInMs(3000)), 0);
  // One delay for the first job, none between the others.
  EXPECT_LT(MonotonicNowNs() - start, 4 * 50 * kMs) << "a delay before each job";
}

}  // namespace
}  // namespace lnpu::softnpu::testing
