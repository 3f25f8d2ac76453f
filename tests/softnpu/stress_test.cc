// Concurrency: several threads and files creating, mapping, importing,
// submitting, waiting and closing at once. (The no-op round-trip latency is
// measured by softnpu_latency_benchmark.)
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

// Counts a failure of `worker` in `round` and reports what failed (with the
// ioctl's negative errno or the job's error, if any). Workers report from
// their own threads, so each failure names its step.
void Fail(std::atomic<int>* failures, int worker, int round, const char* what, int error = 0) {
  failures->fetch_add(1);
  ADD_FAILURE() << "worker " << worker << ", round " << round << ": " << what
                << (error != 0 ? std::string(" failed: ") + std::strerror(std::abs(error)) : "");
}

// One worker: `iterations` rounds of create, fill, copy on an engine,
// wait, check and close, on `file` (possibly shared with other workers).
void CopyRounds(KernelFile& file, int worker, int iterations,
                std::atomic<int>* failures) {
  for (int round = 0; round < iterations; ++round) {
    const uint64_t size = 4096 * (1 + (worker + round) % 4);
    TestBuffer cmd = CreateBuffer(file, 4096, DRM_LNPU_BO_CMDBUF);
    TestBuffer src = CreateBuffer(file, size);
    TestBuffer dst = CreateBuffer(file, size);
    if (cmd.handle == 0 || src.handle == 0 || dst.handle == 0) {
      Fail(failures, worker, round, "BO_CREATE failed");
      return;
    }
    for (uint64_t i = 0; i < size; ++i) {
      src.data[i] = static_cast<uint8_t>(worker * 31 + round + i);
    }
    Submission job;
    job.engine = round % 2 == 0 ? DRM_LNPU_ENGINE_DMA : DRM_LNPU_ENGINE_COMPUTE;
    job.cmd_handle = cmd.handle;
    job.cmd_size = CommandStream()
                       .Copy(src.device_addr, dst.device_addr, size)
                       .WriteTo(cmd);
    job.bo_handles = {src.handle, dst.handle};
    uint64_t fence = 0;
    if (const int err = Submit(file, job, &fence); err != 0) {
      Fail(failures, worker, round, "SUBMIT", err);
    } else if (const int waited = WaitJob(file, fence); waited != 0) {
      Fail(failures, worker, round, "WAIT (or the job's error)", waited);
    } else if (std::memcmp(src.data, dst.data, size) != 0) {
      Fail(failures, worker, round, "the copy differs from its source");
    }
    for (const TestBuffer* buffer : {&cmd, &src, &dst}) {
      if (file.Munmap(buffer->data, buffer->size) != 0 ||
          CloseHandle(file, buffer->handle) != 0) {
        Fail(failures, worker, round, "munmap or GEM_CLOSE");
      }
    }
  }
}

TEST(SoftNpuStressTest, ThreadsAndFilesWorkConcurrently) {
  auto npu = SoftNpu::Create(SmallDeviceOptions());
  constexpr int kThreads = 6;
  constexpr int kIterations = 40;
  std::atomic<int> failures{0};
  auto shared_file = npu->Open();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (t < 2) {
        CopyRounds(*shared_file, t, kIterations, &failures);
      } else {
        for (int reopen = 0; reopen < 2; ++reopen) {
          auto own = npu->Open();
          CopyRounds(*own, t, kIterations / 2, &failures);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  shared_file.reset();
  EXPECT_EQ(npu->memory_used(), 0u);
}

// One worker on its own file: `iterations` rounds of importing user memory
// (read-only every other round), copying it into a device buffer and back
// into a writable import, checking and closing.
void ImportRounds(SoftNpu& npu, int worker, int iterations,
                  std::atomic<int>* failures) {
  auto file = npu.Open();
  UserMemory user(2 * 4096);
  TestBuffer cmd = CreateBuffer(*file, 4096, DRM_LNPU_BO_CMDBUF);
  TestBuffer dst = CreateBuffer(*file, 4096);
  for (int round = 0; round < iterations; ++round) {
    std::memset(user.data(), worker * 16 + round, 4096);
    const uint32_t read_only = round % 2 == 0 ? DRM_LNPU_BO_READ_ONLY : 0;
    drm_lnpu_bo_create src{}, back{};
    if (const int err = Import(*file, user.data(), 4096, read_only, &src); err != 0) {
      Fail(failures, worker, round, "USERPTR import of the source", err);
      return;
    }
    if (const int err = Import(*file, user.data() + 4096, 4096, 0, &back); err != 0) {
      Fail(failures, worker, round, "USERPTR import of the destination", err);
      return;
    }
    Submission job;
    job.engine = round % 3 == 0 ? DRM_LNPU_ENGINE_COMPUTE : DRM_LNPU_ENGINE_DMA;
    job.cmd_handle = cmd.handle;
    job.cmd_size = CommandStream()
                       .Copy(src.device_addr, dst.device_addr, 4096)
                       .Copy(dst.device_addr, back.device_addr, 4096)
                       .WriteTo(cmd);
    job.bo_handles = {src.handle, dst.handle, back.handle};
    uint64_t fence = 0;
    // Close the imports while the job may still be queued: the job keeps
    // them alive.
    const int submitted = Submit(*file, job, &fence);
    if (CloseHandle(*file, src.handle) != 0 || CloseHandle(*file, back.handle) != 0) {
      Fail(failures, worker, round, "GEM_CLOSE of an import");
    }
    if (submitted != 0) {
      Fail(failures, worker, round, "SUBMIT", submitted);
    } else if (const int waited = WaitJob(*file, fence); waited != 0) {
      Fail(failures, worker, round, "WAIT (or the job's error)", waited);
    } else if (std::memcmp(user.data(), user.data() + 4096, 4096) != 0) {
      Fail(failures, worker, round, "the copy back differs from the source");
    }
    if (file->FdInfo().find("drm-driver:\tlnpu\n") != 0) {
      Fail(failures, worker, round, "fdinfo does not start with drm-driver");
    }
  }
}

TEST(SoftNpuStressTest, ImportsAcrossFilesWorkConcurrently) {
  auto npu = SoftNpu::Create(SmallDeviceOptions());
  constexpr int kThreads = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { ImportRounds(*npu, t, 40, &failures); });
  }
  // Meanwhile: plain device-memory traffic on a shared file.
  auto shared_file = npu->Open();
  CopyRounds(*shared_file, kThreads, 20, &failures);
  for (std::thread& thread : threads) thread.join();
  const JobCounters& counters = npu->job_counters();
  // A timed-out job (the engine's job timeout) or a refused import says so
  // here.
  EXPECT_EQ(failures.load(), 0) << "timed out: " << counters.timed_out.load()
                                << ", last fault: " << npu->last_fault_message()
                                << ", last rejection: " << npu->last_rejection_message();
  EXPECT_EQ(counters.submitted.load(), kThreads * 40u + 20u);
  EXPECT_EQ(counters.completed.load(), counters.submitted.load());
  shared_file.reset();
  EXPECT_EQ(npu->memory_used(), 0u);
  EXPECT_EQ(npu->memory_imported(), 0u);
}

TEST(SoftNpuStressTest, PauseAndResumeWhileSubmitting) {
  auto npu = SoftNpu::Create(SmallDeviceOptions());
  auto file = npu->Open();
  TestBuffer cmd = CreateBuffer(*file, 4096, DRM_LNPU_BO_CMDBUF);
  CommandStream().Nop().WriteTo(cmd);
  std::atomic<bool> done{false};
  std::thread toggler([&] {
    while (!done.load()) {
      npu->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
      std::this_thread::yield();
      npu->ResumeEngine(DRM_LNPU_ENGINE_COMPUTE);
    }
  });
  Submission nop;
  nop.cmd_handle = cmd.handle;
  nop.cmd_size = 8;
  for (int i = 0; i < 300; ++i) {
    uint64_t fence = 0;
    ASSERT_EQ(Submit(*file, nop, &fence), 0);
    ASSERT_EQ(WaitJob(*file, fence), 0);
  }
  done.store(true);
  toggler.join();
}

}  // namespace
}  // namespace lnpu::softnpu::testing
