// Latency of the software NPU's submit -> run -> signal -> wait round trip:
// a NOP job, and a decode-shaped step (compute NOP, DMA NOP chained on its
// fence, one wait). Run by hand:
//   build/tests/softnpu/softnpu_latency_benchmark
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "benchmark/benchmark.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::softnpu {
namespace {

[[noreturn]] void Fail(const char* what, int err) {
  std::fprintf(stderr, "%s failed: %s\n", what, std::strerror(err));
  std::abort();
}

// A device and one open file with a command buffer holding one NOP.
class NopDevice {
 public:
  NopDevice() {
    SoftNpuOptions options;
    options.memory_bytes = 64ull << 20;
    options.compute_threads = 2;
    npu_ = SoftNpu::Create(options);
    file_ = npu_->Open();
    drm_lnpu_bo_create create{};
    create.size = 4096;
    create.flags = DRM_LNPU_BO_CMDBUF;
    Check("BO_CREATE", file_->Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create));
    drm_lnpu_bo_info info{};
    info.handle = create.handle;
    Check("BO_INFO", file_->Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info));
    void* data = nullptr;
    Check("mmap", file_->Mmap(4096, info.mmap_offset, &data));
    lnpu_cmd_nop nop{};
    nop.hdr = {LNPU_OP_NOP, 0, sizeof(nop)};
    std::memcpy(data, &nop, sizeof(nop));
    cmd_handle_ = create.handle;
  }

  uint64_t Submit(uint32_t engine, const uint64_t* in_fence) {
    drm_lnpu_submit submit{};
    submit.engine = engine;
    submit.cmd_handle = cmd_handle_;
    submit.cmd_size = sizeof(lnpu_cmd_nop);
    submit.in_fences = reinterpret_cast<uintptr_t>(in_fence);
    submit.in_fence_count = in_fence == nullptr ? 0 : 1;
    Check("SUBMIT", file_->Ioctl(DRM_IOCTL_LNPU_SUBMIT, &submit));
    return submit.fence;
  }

  void Wait(uint64_t fence) {
    drm_lnpu_wait wait{};
    wait.fences = reinterpret_cast<uintptr_t>(&fence);
    wait.fence_count = 1;
    wait.timeout_ns = INT64_MAX;
    Check("WAIT", file_->Ioctl(DRM_IOCTL_LNPU_WAIT, &wait));
    if (wait.job_error != 0) Fail("the NOP job", -wait.job_error);
  }

 private:
  static void Check(const char* what, int err) {
    if (err != 0) Fail(what, err);
  }

  std::shared_ptr<SoftNpu> npu_;
  std::unique_ptr<KernelFile> file_;
  uint32_t cmd_handle_ = 0;
};

void BM_NopRoundTrip(benchmark::State& state) {
  NopDevice device;
  for (auto _ : state) {
    device.Wait(device.Submit(DRM_LNPU_ENGINE_COMPUTE, nullptr));
  }
}
BENCHMARK(BM_NopRoundTrip)->UseRealTime();

void BM_DecodeShapedStep(benchmark::State& state) {
  NopDevice device;
  for (auto _ : state) {
    const uint64_t compute = device.Submit(DRM_LNPU_ENGINE_COMPUTE, nullptr);
    device.Wait(device.Submit(DRM_LNPU_ENGINE_DMA, &compute));
  }
}
BENCHMARK(BM_DecodeShapedStep)->UseRealTime();

}  // namespace
}  // namespace lnpu::softnpu

BENCHMARK_MAIN();
