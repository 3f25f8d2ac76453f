// The device the software NPU's UAPI tests run against: a fresh in-process
// software NPU, or, when LNPU_TEST_DEVICE names a node (/dev/accel/accel0),
// the lnpu kernel module (kernel_iface/kmod/) behind it, so that every test
// that does not need the model's internals proves the kernel enforces the
// same rules with the same errnos.
//
// Kernel mode: counters are reported relative to the TestNpu's creation
// (the kernel's are device-wide and cumulative); pausing and fault
// injection go through the module's parameters (/sys/module/lnpu/
// parameters/{pause,inject}, root only); the device's options are the
// module's (tools/scripts/vm_guest.sh loads it with the options the tests
// assume: 64 MiB, 200 ms job timeout); rejection and fault messages are
// the software NPU's alone (EXPECT_REJECTION checks them only there); a
// file's mappings are unmapped when it closes (UnmapOnCloseFile).
#ifndef TESTS_SOFTNPU_TEST_NPU_H_
#define TESTS_SOFTNPU_TEST_NPU_H_

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kernel_iface/driver/linux_kernel_file.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tests/test_device.h"

namespace lnpu::softnpu::testing {

// A kernel file whose mappings die with it, as the software NPU's do (the
// tests rely on it; a real mapping outlives its file and holds its BO).
class UnmapOnCloseFile final : public KernelFile {
 public:
  explicit UnmapOnCloseFile(std::unique_ptr<KernelFile> file)
      : file_(std::move(file)) {}
  ~UnmapOnCloseFile() override {
    for (const auto& [addr, length] : mappings_) file_->Munmap(addr, length);
  }
  int Ioctl(unsigned long request, void* arg) override {
    return file_->Ioctl(request, arg);
  }
  int Mmap(uint64_t length, uint64_t offset, void** addr) override {
    const int err = file_->Mmap(length, offset, addr);
    if (err == 0) mappings_.emplace(*addr, length);
    return err;
  }
  int Munmap(void* addr, uint64_t length) override {
    auto it = mappings_.find(addr);
    if (it == mappings_.end() || it->second != length) return EINVAL;
    mappings_.erase(it);
    return file_->Munmap(addr, length);
  }
  std::string Describe() const override { return file_->Describe(); }
  std::string FdInfo() const override { return file_->FdInfo(); }

 private:
  std::unique_ptr<KernelFile> file_;
  std::map<void*, uint64_t> mappings_;
};

class TestNpu {
 public:
  // The node of LNPU_TEST_DEVICE, or "" for the software NPU.
  static std::string KernelNode() {
    const std::string device = lnpu::testing::TestDevice();
    return device == "soft" ? "" : device;
  }

  static std::shared_ptr<TestNpu> Create(const SoftNpuOptions& options) {
    auto npu = std::shared_ptr<TestNpu>(new TestNpu);
    const std::string node = KernelNode();
    if (node.empty()) {
      npu->soft_ = SoftNpu::Create(options);
      return npu;
    }
    auto control = LinuxKernelFile::Open(node);
    if (!control.ok()) {
      ADD_FAILURE() << "LNPU_TEST_DEVICE: " << control.status();
      npu->soft_ = SoftNpu::Create(options);
      return npu;
    }
    npu->node_ = node;
    npu->control_ = *std::move(control);
    npu->resets_at_start_ = npu->Param(DRM_LNPU_PARAM_RESETS);
    npu->completed_at_start_ = npu->Param(DRM_LNPU_PARAM_JOBS_COMPLETED);
    return npu;
  }

  ~TestNpu() {
    if (paused_ != 0) WriteModuleParameter("pause", "0");
  }

  bool is_kernel() const { return soft_ == nullptr; }

  std::unique_ptr<KernelFile> Open() {
    if (!is_kernel()) return soft_->Open();
    auto file = LinuxKernelFile::Open(node_);
    EXPECT_TRUE(file.ok()) << file.status();
    if (!file.ok()) return nullptr;
    return std::make_unique<UnmapOnCloseFile>(*std::move(file));
  }

  void PauseEngine(uint32_t engine) {
    if (!is_kernel()) return soft_->PauseEngine(engine);
    paused_ |= 1u << engine;
    WriteModuleParameter("pause", std::to_string(paused_));
  }

  void ResumeEngine(uint32_t engine) {
    if (!is_kernel()) return soft_->ResumeEngine(engine);
    paused_ &= ~(1u << engine);
    WriteModuleParameter("pause", std::to_string(paused_));
  }

  absl::Status InjectFault(const FaultInjection& injection) {
    if (!is_kernel()) return soft_->InjectFault(injection);
    if (absl::Status status = injection.Validate(); !status.ok()) {
      return status;
    }
    const std::string spec =
        std::string(injection.kind == FaultInjection::Kind::kHang ? "hang"
                                                                  : "fault") +
        (injection.engine == DRM_LNPU_ENGINE_DMA ? ":dma:" : ":compute:") +
        std::to_string(injection.count);
    return WriteModuleParameter("inject", spec)
               ? absl::OkStatus()
               : absl::InternalError("cannot write the inject parameter");
  }

  uint64_t memory_used() {
    return is_kernel() ? Param(DRM_LNPU_PARAM_MEMORY_USED)
                       : soft_->memory_used();
  }
  uint64_t memory_imported() {
    return is_kernel() ? Param(DRM_LNPU_PARAM_MEMORY_IMPORTED)
                       : soft_->memory_imported();
  }
  uint64_t reset_count() {
    return is_kernel() ? Param(DRM_LNPU_PARAM_RESETS) - resets_at_start_
                       : soft_->reset_count();
  }
  uint64_t jobs_completed() {
    return is_kernel()
               ? Param(DRM_LNPU_PARAM_JOBS_COMPLETED) - completed_at_start_
               : soft_->job_counters().completed.load();
  }
  std::string last_rejection_message() const {
    return is_kernel() ? "" : soft_->last_rejection_message();
  }
  std::string last_fault_message() const {
    return is_kernel() ? "" : soft_->last_fault_message();
  }

 private:
  TestNpu() = default;

  uint64_t Param(uint32_t param) {
    drm_lnpu_get_param get{};
    get.param = param;
    EXPECT_EQ(control_->Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &get), 0);
    return get.value;
  }

  static bool WriteModuleParameter(const std::string& name,
                                   const std::string& value) {
    std::ofstream out("/sys/module/lnpu/parameters/" + name);
    out << value;
    out.flush();
    EXPECT_TRUE(out.good()) << "writing " << name << "=" << value;
    return out.good();
  }

  std::shared_ptr<SoftNpu> soft_;
  std::string node_;
  std::unique_ptr<KernelFile> control_;
  uint32_t paused_ = 0;
  uint64_t resets_at_start_ = 0;
  uint64_t completed_at_start_ = 0;
};

// Checks the software NPU's message for the latest rejected ioctl; a kernel
// only has the errno, which the test checks on its own.
#define EXPECT_REJECTION(npu, matcher) \
  if ((npu)->is_kernel()) {            \
  } else                               \
    EXPECT_THAT((npu)->last_rejection_message(), matcher)

#define EXPECT_FAULT_MESSAGE(npu, matcher) \
  if ((npu)->is_kernel()) {                \
  } else                                   \
    EXPECT_THAT((npu)->last_fault_message(), matcher)

}  // namespace lnpu::softnpu::testing

#endif  // TESTS_SOFTNPU_TEST_NPU_H_
