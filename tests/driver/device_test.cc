// The user-space driver against a mock kernel: what it passes through the
// seam, how it maps errno values to statuses, and Buffer lifetimes.
#include "kernel_iface/driver/device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernel_iface/driver/device_usage.h"
#include "kernel_iface/driver/linux_kernel_file.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu {
namespace {

using ::testing::_;
using ::testing::DoAll;
using ::testing::HasSubstr;
using ::testing::Invoke;
using ::testing::Return;

class MockKernelFile : public KernelFile {
 public:
  MOCK_METHOD(int, Ioctl, (unsigned long request, void* arg), (override));
  MOCK_METHOD(int, Mmap, (uint64_t length, uint64_t offset, void** addr),
              (override));
  MOCK_METHOD(int, Munmap, (void* addr, uint64_t length), (override));
  MOCK_METHOD(std::string, Describe, (), (const, override));
  MOCK_METHOD(std::string, FdInfo, (), (const, override));
};

class DeviceTest : public ::testing::Test {
 protected:
  DeviceTest() {
    auto file = std::make_unique<::testing::StrictMock<MockKernelFile>>();
    kernel_ = file.get();
    ON_CALL(*kernel_, Describe()).WillByDefault(Return("mock"));
    EXPECT_CALL(*kernel_, Describe()).Times(::testing::AnyNumber());
    device_ = std::make_unique<Device>(std::move(file));
  }

  // Expects BO_CREATE + BO_INFO for a buffer of `size` and answers them.
  void ExpectCreate(uint32_t handle, uint64_t size, uint64_t rounded) {
    EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_BO_CREATE, _))
        .WillOnce(Invoke([=](unsigned long, void* arg) {
          auto* create = static_cast<drm_lnpu_bo_create*>(arg);
          EXPECT_EQ(create->size, size);
          create->handle = handle;
          create->device_addr = 0x10000;
          return 0;
        }));
    EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_BO_INFO, _))
        .WillOnce(Invoke([=](unsigned long, void* arg) {
          auto* info = static_cast<drm_lnpu_bo_info*>(arg);
          EXPECT_EQ(info->handle, handle);
          info->size = rounded;
          info->mmap_offset = 0x100000;
          info->device_addr = 0x10000;
          return 0;
        }));
  }

  void ExpectClose(uint32_t handle) {
    EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_GEM_CLOSE, _))
        .WillOnce(Invoke([=](unsigned long, void* arg) {
          EXPECT_EQ(static_cast<drm_gem_close*>(arg)->handle, handle);
          return 0;
        }));
  }

  MockKernelFile* kernel_;
  std::unique_ptr<Device> device_;
};

TEST_F(DeviceTest, GetParamPassesIdAndReturnsValue) {
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_GET_PARAM, _))
      .WillOnce(Invoke([](unsigned long, void* arg) {
        auto* p = static_cast<drm_lnpu_get_param*>(arg);
        EXPECT_EQ(p->param, DRM_LNPU_PARAM_MEMORY_SIZE);
        EXPECT_EQ(p->pad, 0u);
        p->value = 1234;
        return 0;
      }));
  auto value = device_->GetParam(DRM_LNPU_PARAM_MEMORY_SIZE);
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, 1234u);
}

TEST_F(DeviceTest, ErrnoBecomesMatchingStatus) {
  struct Case {
    int err;
    absl::StatusCode code;
  };
  for (const Case& c : {Case{ENOENT, absl::StatusCode::kNotFound},
                        Case{EINVAL, absl::StatusCode::kInvalidArgument},
                        Case{EFAULT, absl::StatusCode::kInvalidArgument},
                        Case{ENOMEM, absl::StatusCode::kResourceExhausted},
                        Case{ENOSPC, absl::StatusCode::kResourceExhausted},
                        Case{ETIMEDOUT, absl::StatusCode::kDeadlineExceeded},
                        Case{ECANCELED, absl::StatusCode::kAborted},
                        Case{ENOTTY, absl::StatusCode::kUnimplemented},
                        Case{EIO, absl::StatusCode::kInternal}}) {
    EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_GET_PARAM, _))
        .WillOnce(Return(c.err));
    auto value = device_->GetParam(DRM_LNPU_PARAM_DEVICE_ID);
    EXPECT_EQ(value.status().code(), c.code) << std::strerror(c.err);
    EXPECT_THAT(std::string(value.status().message()),
                HasSubstr("DRM_IOCTL_LNPU_GET_PARAM"));
  }
}

TEST_F(DeviceTest, CreateBufferReportsRoundedSizeAndClosesOnDestruction) {
  ExpectCreate(7, 100, 4096);
  {
    auto buffer = device_->CreateBuffer(100);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    EXPECT_EQ(buffer->handle(), 7u);
    EXPECT_EQ(buffer->size(), 4096u);
    EXPECT_EQ(buffer->device_addr(), 0x10000u);
    ExpectClose(7);
  }
}

TEST_F(DeviceTest, OutOfMemoryNamesSizeAndAdvice) {
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_BO_CREATE, _))
      .WillOnce(Return(ENOMEM));
  auto buffer = device_->CreateBuffer(1ull << 40);
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(buffer.status().message()),
              HasSubstr(std::to_string(1ull << 40)));
}

TEST_F(DeviceTest, MapOnceUnmapAndCloseOnDestruction) {
  ExpectCreate(3, 4096, 4096);
  std::vector<uint8_t> memory(4096);
  auto buffer = device_->CreateBuffer(4096);
  ASSERT_TRUE(buffer.ok());
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_BO_INFO, _))
      .WillOnce(Invoke([](unsigned long, void* arg) {
        auto* info = static_cast<drm_lnpu_bo_info*>(arg);
        info->size = 4096;
        info->mmap_offset = 0x200000;
        return 0;
      }));
  EXPECT_CALL(*kernel_, Mmap(4096, 0x200000, _))
      .WillOnce(DoAll(::testing::SetArgPointee<2>(memory.data()), Return(0)));
  auto span = buffer->Map();
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->data(), memory.data());
  auto again = buffer->Map();  // no second ioctl or mmap
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data(), memory.data());
  EXPECT_EQ(buffer->mapped().size(), 4096u);

  EXPECT_CALL(*kernel_, Munmap(memory.data(), 4096)).WillOnce(Return(0));
  ExpectClose(3);
  *buffer = Buffer();  // move-assigning an empty buffer releases the old one
  EXPECT_FALSE(buffer->valid());
}

TEST_F(DeviceTest, MovedFromBufferDoesNotCloseTwice) {
  ExpectCreate(9, 64, 4096);
  auto buffer = device_->CreateBuffer(64);
  ASSERT_TRUE(buffer.ok());
  Buffer moved = std::move(*buffer);
  EXPECT_FALSE(buffer->valid());
  EXPECT_TRUE(moved.valid());
  ExpectClose(9);
}

TEST_F(DeviceTest, SubmitFillsEveryField) {
  ExpectCreate(5, 4096, 4096);
  auto cmd = device_->CreateBuffer(4096, DRM_LNPU_BO_CMDBUF);
  ASSERT_TRUE(cmd.ok());
  const std::vector<uint32_t> handles = {11, 12};
  const std::vector<uint64_t> fences = {4};
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_SUBMIT, _))
      .WillOnce(Invoke([&](unsigned long, void* arg) {
        auto* s = static_cast<drm_lnpu_submit*>(arg);
        EXPECT_EQ(s->engine, uint32_t{DRM_LNPU_ENGINE_DMA});
        EXPECT_EQ(s->cmd_handle, 5u);
        EXPECT_EQ(s->cmd_offset, 64u);
        EXPECT_EQ(s->cmd_size, 128u);
        EXPECT_EQ(s->bo_count, 2u);
        EXPECT_EQ(reinterpret_cast<const uint32_t*>(s->bo_handles)[1], 12u);
        EXPECT_EQ(s->in_fence_count, 1u);
        EXPECT_EQ(reinterpret_cast<const uint64_t*>(s->in_fences)[0], 4u);
        EXPECT_EQ(s->flags, 0u);
        EXPECT_EQ(s->out_fence_fd, 0);
        s->fence = 77;
        return 0;
      }));
  SubmitArgs args;
  args.engine = DRM_LNPU_ENGINE_DMA;
  args.cmd = &*cmd;
  args.cmd_offset = 64;
  args.cmd_size = 128;
  args.bo_handles = handles;
  args.in_fences = fences;
  auto fence = device_->Submit(args);
  ASSERT_TRUE(fence.ok()) << fence.status();
  EXPECT_EQ(*fence, 77u);
  ExpectClose(5);
}

TEST_F(DeviceTest, SubmitWithoutCommandBufferIsRejectedBeforeTheKernel) {
  SubmitArgs args;
  EXPECT_EQ(device_->Submit(args).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DeviceTest, WaitTranslatesJobErrors) {
  struct Case {
    int job_error;
    absl::StatusCode code;
  };
  for (const Case& c : {Case{0, absl::StatusCode::kOk},
                        Case{-EIO, absl::StatusCode::kInternal},
                        Case{-ECANCELED, absl::StatusCode::kAborted}}) {
    EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_WAIT, _))
        .WillOnce(Invoke([&](unsigned long, void* arg) {
          auto* w = static_cast<drm_lnpu_wait*>(arg);
          EXPECT_EQ(w->fence_count, 1u);
          EXPECT_EQ(reinterpret_cast<const uint64_t*>(w->fences)[0], 3u);
          EXPECT_GT(w->timeout_ns, 0);
          w->job_error = c.job_error;
          return 0;
        }));
    EXPECT_EQ(device_->Wait(3, absl::Now() + absl::Seconds(1)).code(), c.code);
  }
}

TEST_F(DeviceTest, AbortedWaitSaysWhatHappenedAndWhatToDo) {
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_WAIT, _))
      .WillOnce(Invoke([](unsigned long, void* arg) {
        static_cast<drm_lnpu_wait*>(arg)->job_error = -ECANCELED;
        return 0;
      }));
  const absl::Status status = device_->Wait(3, absl::InfiniteFuture());
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(status.message()), HasSubstr("job timeout"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("reopen the device"));
}

// Answers GET_PARAM(CAPABILITIES) with `caps`.
void ExpectCapabilities(MockKernelFile& kernel, uint64_t caps) {
  EXPECT_CALL(kernel, Ioctl(DRM_IOCTL_LNPU_GET_PARAM, _))
      .WillOnce(Invoke([=](unsigned long, void* arg) {
        auto* p = static_cast<drm_lnpu_get_param*>(arg);
        EXPECT_EQ(p->param, uint32_t{DRM_LNPU_PARAM_CAPABILITIES});
        p->value = caps;
        return 0;
      }));
}

TEST_F(DeviceTest, ImportPassesPointerAndFlagsAndNeverUnmapsUserMemory) {
  alignas(4096) static uint8_t user[8192];
  ExpectCapabilities(*kernel_, DRM_LNPU_CAP_USERPTR);
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_BO_CREATE, _))
      .WillOnce(Invoke([&](unsigned long, void* arg) {
        auto* create = static_cast<drm_lnpu_bo_create*>(arg);
        EXPECT_EQ(create->size, sizeof(user));
        EXPECT_EQ(create->flags,
                  DRM_LNPU_BO_USERPTR | DRM_LNPU_BO_READ_ONLY);
        EXPECT_EQ(create->user_ptr, reinterpret_cast<uintptr_t>(user));
        create->handle = 4;
        create->device_addr = 0x20000;
        return 0;
      }));
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_BO_INFO, _))
      .WillOnce(Invoke([&](unsigned long, void* arg) {
        static_cast<drm_lnpu_bo_info*>(arg)->size = sizeof(user);
        return 0;
      }));
  auto buffer =
      device_->ImportUserMemory(user, sizeof(user), DRM_LNPU_BO_READ_ONLY);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  EXPECT_EQ(buffer->device_addr(), 0x20000u);
  // Map() is the user's memory itself: no BO_INFO, no mmap.
  auto span = buffer->Map();
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->data(), user);
  EXPECT_EQ(span->size(), sizeof(user));
  ExpectClose(4);  // and no Munmap: the StrictMock would fail on one
}

TEST_F(DeviceTest, ImportWithoutUserptrCapabilityIsUnimplemented) {
  alignas(4096) static uint8_t user[4096];
  ExpectCapabilities(*kernel_, DRM_LNPU_CAP_IN_FENCES);
  auto buffer = device_->ImportUserMemory(user, sizeof(user));
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(buffer.status().message()),
              HasSubstr("DRM_LNPU_CAP_USERPTR"));
}

TEST_F(DeviceTest, ImportErrorNamesTheUserMemory) {
  ExpectCapabilities(*kernel_, DRM_LNPU_CAP_USERPTR);
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_BO_CREATE, _))
      .WillOnce(Return(EFAULT));
  auto buffer = device_->ImportUserMemory(
      reinterpret_cast<void*>(uintptr_t{0x1001}), 4096);
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(buffer.status().message()),
              HasSubstr("user memory at 0x1001"));
}

TEST_F(DeviceTest, UsageParsesTheKernelsFdInfo) {
  // As /proc/<pid>/fdinfo/<fd> shows it: generic lines first.
  EXPECT_CALL(*kernel_, FdInfo())
      .WillOnce(Return("pos:\t0\nflags:\t02100002\nmnt_id:\t26\n"
                       "ino:\t1093\ndrm-driver:\tlnpu\n"
                       "drm-client-id:\t17\n"
                       "drm-engine-compute:\t123456 ns\n"
                       "drm-engine-dma:\t789 ns\n"
                       "drm-total-memory:\t2068 KiB\n"
                       "drm-shared-memory:\t0\n"
                       "drm-resident-memory:\t2 MiB\n"
                       "drm-total-userptr:\t1 GiB\n"
                       "drm-purgeable-memory:\t0\n"
                       "lnpu-jobs-submitted:\t42\n"));
  auto usage = device_->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->driver, "lnpu");
  EXPECT_EQ(usage->client_id, 17u);
  EXPECT_EQ(usage->compute_busy_ns, 123456u);
  EXPECT_EQ(usage->dma_busy_ns, 789u);
  EXPECT_EQ(usage->memory_total_bytes, 2068u * 1024);
  EXPECT_EQ(usage->memory_shared_bytes, 0u);
  EXPECT_EQ(usage->memory_resident_bytes, 2u << 20);
  EXPECT_EQ(usage->userptr_total_bytes, 1u << 30);
  EXPECT_EQ(usage->jobs_submitted, 42u);
}

TEST_F(DeviceTest, UsageOfADeviceWithoutFiguresIsUnimplemented) {
  EXPECT_CALL(*kernel_, FdInfo()).WillOnce(Return("pos:\t0\nflags:\t02\n"));
  auto usage = device_->Usage();
  EXPECT_EQ(usage.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(usage.status().message()), HasSubstr("mock"));
}

TEST(ParseFdInfoTest, MalformedValuesAreErrorsNamingTheLine) {
  for (const char* line :
       {"drm-engine-dma:\t12 ms", "drm-total-memory:\t-1", "drm-client-id:",
        "drm-total-memory:\t5 KiB extra", "drm-engine-compute:\tten ns",
        "drm-total-memory:\t99999999999999999999 MiB",
        "lnpu-jobs-submitted:\t3 KiB"}) {
    auto usage = ParseFdInfo(absl::StrCat("drm-driver:\tlnpu\n", line, "\n"));
    EXPECT_EQ(usage.status().code(), absl::StatusCode::kInternal) << line;
    EXPECT_THAT(std::string(usage.status().message()), HasSubstr(line));
  }
}

TEST(ParseFdInfoTest, MissingFiguresAreZeroAndUnknownKeysSkipped) {
  auto usage = ParseFdInfo(
      "drm-driver: lnpu\ndrm-engine-capacity-compute:\t4\n"
      "drm-cycles-compute:\t99\nlnpu-private:\tx\n");
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->driver, "lnpu");
  EXPECT_EQ(usage->compute_busy_ns, 0u);
  EXPECT_EQ(usage->memory_total_bytes, 0u);
}

// The driver against the software NPU: imports, usage and a hung job.
class SoftNpuDeviceTest : public ::testing::Test {
 protected:
  static softnpu::SoftNpuOptions Options() {
    softnpu::SoftNpuOptions options;
    options.memory_bytes = 16ull << 20;
    options.compute_threads = 1;
    options.job_timeout_ms = 100;
    return options;
  }
  SoftNpuDeviceTest()
      : npu_(softnpu::SoftNpu::Create(Options())), device_(npu_->Open()) {}
  ~SoftNpuDeviceTest() override {
    EXPECT_EQ(npu_->memory_used(), 0u);
    EXPECT_EQ(npu_->memory_imported(), 0u);
  }

  // Submits one COPY job on the DMA engine touching `buffers`; with
  // `fence_fd`, through SubmitWithFenceFd, storing the descriptor there.
  absl::StatusOr<uint64_t> SubmitCopy(const Buffer& src, const Buffer& dst,
                                      uint64_t bytes, FenceFd* fence_fd = nullptr) {
    absl::StatusOr<Buffer> cmd = device_.CreateBuffer(4096, DRM_LNPU_BO_CMDBUF);
    if (!cmd.ok()) return cmd.status();
    absl::StatusOr<absl::Span<uint8_t>> stream = cmd->Map();
    if (!stream.ok()) return stream.status();
    lnpu_cmd_copy copy{};
    copy.hdr = {LNPU_OP_COPY, 0, sizeof(copy)};
    copy.src = src.device_addr();
    copy.dst = dst.device_addr();
    copy.bytes = bytes;
    std::memcpy(stream->data(), &copy, sizeof(copy));
    const uint32_t handles[] = {src.handle(), dst.handle()};
    SubmitArgs args;
    args.engine = DRM_LNPU_ENGINE_DMA;
    args.cmd = &*cmd;
    args.cmd_size = sizeof(copy);
    args.bo_handles = handles;
    // The job keeps the closed cmd alive.
    if (fence_fd == nullptr) return device_.Submit(args);
    absl::StatusOr<SubmittedJob> job = device_.SubmitWithFenceFd(args);
    if (!job.ok()) return job.status();
    *fence_fd = std::move(job->fence_fd);
    return job->fence;
  }

  std::shared_ptr<softnpu::SoftNpu> npu_;
  Device device_;
};

TEST_F(SoftNpuDeviceTest, ImportedWeightsAreReadInPlace) {
  void* user = mmap(nullptr, 8192, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(user, MAP_FAILED);
  std::memset(user, 0x42, 8192);
  ASSERT_EQ(mprotect(user, 8192, PROT_READ), 0);  // like mapped weights
  {
    absl::StatusOr<Buffer> weights =
        device_.ImportUserMemory(user, 8192, DRM_LNPU_BO_READ_ONLY);
    ASSERT_TRUE(weights.ok()) << weights.status();
    absl::StatusOr<Buffer> out = device_.CreateBuffer(8192);
    ASSERT_TRUE(out.ok());
    absl::StatusOr<uint64_t> fence = SubmitCopy(*weights, *out, 8192);
    ASSERT_TRUE(fence.ok()) << fence.status();
    ASSERT_TRUE(device_.Wait(*fence, absl::InfiniteFuture()).ok());
    absl::StatusOr<absl::Span<uint8_t>> data = out->Map();
    ASSERT_TRUE(data.ok());
    EXPECT_EQ((*data)[8191], 0x42);
    // Writing into the read-only import is refused at submit.
    absl::StatusOr<uint64_t> write = SubmitCopy(*out, *weights, 8);
    EXPECT_EQ(write.status().code(), absl::StatusCode::kInvalidArgument);
    absl::StatusOr<DeviceUsage> usage = device_.Usage();
    ASSERT_TRUE(usage.ok()) << usage.status();
    EXPECT_EQ(usage->userptr_total_bytes, 8192u);
    EXPECT_EQ(usage->memory_total_bytes, 8192u);
    EXPECT_GT(usage->dma_busy_ns, 0u);
  }
  // The driver left the user's mapping alone.
  EXPECT_EQ(static_cast<uint8_t*>(user)[0], 0x42);
  ASSERT_EQ(munmap(user, 8192), 0);
}

TEST_F(SoftNpuDeviceTest, FenceFdWaitsForTheJob) {
  absl::StatusOr<Buffer> a = device_.CreateBuffer(4096);
  absl::StatusOr<Buffer> b = device_.CreateBuffer(4096);
  ASSERT_TRUE(a.ok() && b.ok());
  std::memcpy(a->Map()->data(), "fd", 3);
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  FenceFd fence_fd;
  absl::StatusOr<uint64_t> fence = SubmitCopy(*a, *b, 3, &fence_fd);
  ASSERT_TRUE(fence.ok()) << fence.status();
  ASSERT_TRUE(fence_fd.valid());
  EXPECT_EQ(fence_fd.Wait(absl::Now() + absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  ASSERT_TRUE(fence_fd.Wait(absl::Now() + absl::Seconds(20)).ok());
  EXPECT_STREQ(reinterpret_cast<const char*>(b->Map()->data()), "fd");
  EXPECT_TRUE(device_.Wait(*fence, absl::InfinitePast()).ok()) << "ended";
  // Moving hands the descriptor over; Release gives it to the caller.
  FenceFd moved = std::move(fence_fd);
  EXPECT_FALSE(fence_fd.valid());
  EXPECT_EQ(fence_fd.Wait(absl::InfiniteFuture()).code(),
            absl::StatusCode::kFailedPrecondition);
  const int raw = moved.Release();
  EXPECT_FALSE(moved.valid());
  EXPECT_EQ(close(raw), 0);
}

TEST_F(DeviceTest, SubmitWithFenceFdAsksForTheDescriptor) {
  ExpectCreate(5, 4096, 4096);
  auto cmd = device_->CreateBuffer(4096, DRM_LNPU_BO_CMDBUF);
  ASSERT_TRUE(cmd.ok());
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_SUBMIT, _))
      .WillOnce(Invoke([&](unsigned long, void* arg) {
        auto* s = static_cast<drm_lnpu_submit*>(arg);
        EXPECT_EQ(s->flags, DRM_LNPU_SUBMIT_OUT_FENCE_FD);
        EXPECT_EQ(s->out_fence_fd, 0);
        s->fence = 3;
        s->out_fence_fd = pipe_fds[0];
        return 0;
      }))
      .WillOnce(Return(EINVAL));  // a device older than UAPI 1.3
  SubmitArgs args;
  args.cmd = &*cmd;
  args.cmd_size = 8;
  {
    auto job = device_->SubmitWithFenceFd(args);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->fence, 3u);
    EXPECT_EQ(job->fence_fd.get(), pipe_fds[0]);
  }
  EXPECT_EQ(close(pipe_fds[0]), -1) << "the FenceFd closed the descriptor";
  EXPECT_EQ(close(pipe_fds[1]), 0);
  auto old = device_->SubmitWithFenceFd(args);
  EXPECT_EQ(old.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(old.status().message()), HasSubstr("flags 0x1"));
  ExpectClose(5);
}

TEST_F(DeviceTest, SubmitWithAProfileBufferAsksForProfiling) {
  ExpectCreate(5, 4096, 4096);
  auto cmd = device_->CreateBuffer(4096, DRM_LNPU_BO_CMDBUF);
  ASSERT_TRUE(cmd.ok());
  ExpectCreate(6, 4096, 4096);
  auto profile = device_->CreateBuffer(4096);
  ASSERT_TRUE(profile.ok());
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_SUBMIT, _))
      .WillOnce(Invoke([&](unsigned long, void* arg) {
        auto* s = static_cast<drm_lnpu_submit*>(arg);
        EXPECT_EQ(s->flags, DRM_LNPU_SUBMIT_PROFILE);
        EXPECT_EQ(s->profile_handle, 6u);
        EXPECT_EQ(s->pad, 0u);
        s->fence = 4;
        return 0;
      }))
      .WillOnce(Return(EOPNOTSUPP));  // a device without DRM_LNPU_CAP_PROFILING
  SubmitArgs args;
  args.cmd = &*cmd;
  args.cmd_size = 8;
  args.profile = &*profile;
  auto fence = device_->Submit(args);
  ASSERT_TRUE(fence.ok()) << fence.status();
  EXPECT_EQ(*fence, 4u);
  auto refused = device_->Submit(args);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("flags 0x2"));
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_GEM_CLOSE, _)).Times(2).WillRepeatedly(Return(0));
}

TEST_F(SoftNpuDeviceTest, HungJobReachesTheWaiterAsAborted) {
  ASSERT_TRUE(npu_->InjectFault({softnpu::FaultInjection::Kind::kHang,
                                 DRM_LNPU_ENGINE_DMA, 1})
                  .ok());
  absl::StatusOr<Buffer> a = device_.CreateBuffer(4096);
  absl::StatusOr<Buffer> b = device_.CreateBuffer(4096);
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<uint64_t> fence = SubmitCopy(*a, *b, 4096);
  ASSERT_TRUE(fence.ok()) << fence.status();
  const absl::Status status = device_.Wait(*fence, absl::InfiniteFuture());
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("job timeout"));
  // The file is banned; submitting again says so.
  absl::StatusOr<uint64_t> again = SubmitCopy(*a, *b, 4096);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("reopen"));
  absl::StatusOr<uint64_t> resets = device_.GetParam(DRM_LNPU_PARAM_RESETS);
  ASSERT_TRUE(resets.ok());
  EXPECT_EQ(*resets, 1u);
  // Another file of the same device works.
  Device other(npu_->Open());
  absl::StatusOr<uint64_t> jobs = other.GetParam(DRM_LNPU_PARAM_JOBS_SUBMITTED);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(*jobs, 1u);
}

TEST_F(DeviceTest, WaitTimeoutIsDeadlineExceededAndAnyFlagPassed) {
  EXPECT_CALL(*kernel_, Ioctl(DRM_IOCTL_LNPU_WAIT, _))
      .WillOnce(Invoke([](unsigned long, void* arg) {
        auto* w = static_cast<drm_lnpu_wait*>(arg);
        EXPECT_EQ(w->flags, uint32_t{DRM_LNPU_WAIT_ANY});
        EXPECT_EQ(w->fence_count, 2u);
        return ETIMEDOUT;
      }));
  const uint64_t fences[] = {1, 2};
  EXPECT_EQ(device_->Wait(fences, absl::Now(), /*any=*/true).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(DeviceOpenTest, MissingNodeIsUnavailableWithAdvice) {
  auto device = Device::Open("/dev/accel/does-not-exist");
  EXPECT_EQ(device.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(device.status().message()), HasSubstr("soft"));
}

TEST(DeviceOpenTest, NonDrmNodeIsRefused) {
  auto device = Device::Open("/dev/null");
  EXPECT_EQ(device.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(device.status().message()),
              HasSubstr("not a DRM accel node"));
}

TEST(DeviceOpenTest, SoftwareNpuAnswersVersionAndParams) {
  auto device = Device::Open("soft");
  ASSERT_TRUE(device.ok()) << device.status();
  auto version = (*device)->GetParam(DRM_LNPU_PARAM_UAPI_VERSION);
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version >> 16, uint64_t{LNPU_UAPI_VERSION_MAJOR});
  auto caps = (*device)->GetParam(DRM_LNPU_PARAM_CAPABILITIES);
  ASSERT_TRUE(caps.ok());
  EXPECT_NE(*caps & DRM_LNPU_CAP_SOFTWARE, 0u);
}

TEST(DeviceOpenTest, RejectedArgumentsCarryTheDevicesReason) {
  auto device = Device::Open("soft");
  ASSERT_TRUE(device.ok()) << device.status();
  // Unknown flag bits: EINVAL, and the software NPU's log says which.
  absl::StatusOr<Buffer> buffer = (*device)->CreateBuffer(4096, 0x80000000u);
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(buffer.status().message()), HasSubstr("the device says: EINVAL (22): BO_CREATE: unknown flags 0x80000000"));
}

TEST(DeviceOpenTest, AutoFallsBackToSoftwareNpuWithoutNodes) {
  if (!ListAccelNodes().empty()) GTEST_SKIP() << "this machine has accel nodes";
  auto device = Device::Open("auto");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_THAT((*device)->Describe(), HasSubstr("software"));
}

}  // namespace
}  // namespace lnpu
