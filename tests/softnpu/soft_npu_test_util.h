// Helpers for the software NPU tests: buffers created and mapped through
// the UAPI, command streams, submit and wait wrappers, and a fixture that
// checks that every test returns all device memory.
#ifndef TESTS_SOFTNPU_SOFT_NPU_TEST_UTIL_H_
#define TESTS_SOFTNPU_SOFT_NPU_TEST_UTIL_H_

#include <sys/mman.h>
#include <time.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_iface/driver/kernel_file.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tests/softnpu/test_npu.h"

namespace lnpu::softnpu::testing {

inline int64_t MonotonicNowNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// An absolute CLOCK_MONOTONIC deadline `ms` from now.
inline int64_t DeadlineInMs(int64_t ms) {
  return MonotonicNowNs() + ms * 1'000'000;
}

// A deadline no test should reach.
inline int64_t LongDeadline() { return DeadlineInMs(20'000); }

struct TestBuffer {
  uint32_t handle = 0;
  uint32_t flags = 0;
  uint64_t size = 0;
  uint64_t device_addr = 0;
  uint64_t mmap_offset = 0;
  uint8_t* data = nullptr;  // mapped whole; the mapping dies with the file
};

// Creates and maps a buffer; ADD_FAILUREs (and returns handle 0) on error.
inline TestBuffer CreateBuffer(KernelFile& file, uint64_t size,
                               uint32_t flags = 0) {
  TestBuffer buffer;
  drm_lnpu_bo_create create{};
  create.size = size;
  create.flags = flags;
  if (int err = file.Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create); err != 0) {
    ADD_FAILURE() << "BO_CREATE of " << size << " bytes failed: " << err;
    return buffer;
  }
  drm_lnpu_bo_info info{};
  info.handle = create.handle;
  if (int err = file.Ioctl(DRM_IOCTL_LNPU_BO_INFO, &info); err != 0) {
    ADD_FAILURE() << "BO_INFO failed: " << err;
    return buffer;
  }
  void* addr = nullptr;
  if (int err = file.Mmap(info.size, info.mmap_offset, &addr); err != 0) {
    ADD_FAILURE() << "mmap failed: " << err;
    return buffer;
  }
  buffer.handle = create.handle;
  buffer.flags = info.flags;
  buffer.size = info.size;
  buffer.device_addr = info.device_addr;
  buffer.mmap_offset = info.mmap_offset;
  buffer.data = static_cast<uint8_t*>(addr);
  return buffer;
}

inline int CloseHandle(KernelFile& file, uint32_t handle) {
  drm_gem_close close{};
  close.handle = handle;
  return file.Ioctl(DRM_IOCTL_GEM_CLOSE, &close);
}

inline uint64_t GetParam(KernelFile& file, uint32_t param) {
  drm_lnpu_get_param get{};
  get.param = param;
  EXPECT_EQ(file.Ioctl(DRM_IOCTL_LNPU_GET_PARAM, &get), 0) << param;
  return get.value;
}

// A command stream under construction.
class CommandStream {
 public:
  template <typename T>
  CommandStream& Add(const T& command) {
    static_assert(sizeof(T) % 8 == 0);
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &command, sizeof(T));
    return *this;
  }
  CommandStream& Nop() {
    lnpu_cmd_nop nop{};
    nop.hdr = {LNPU_OP_NOP, 0, sizeof(nop)};
    return Add(nop);
  }
  CommandStream& Copy(uint64_t src, uint64_t dst, uint64_t bytes) {
    lnpu_cmd_copy copy{};
    copy.hdr = {LNPU_OP_COPY, 0, sizeof(copy)};
    copy.src = src;
    copy.dst = dst;
    copy.bytes = bytes;
    return Add(copy);
  }
  uint32_t size() const { return static_cast<uint32_t>(bytes_.size()); }
  const uint8_t* data() const { return bytes_.data(); }

  // Writes the stream into a mapped command buffer at `offset`; returns
  // size().
  uint32_t WriteTo(const TestBuffer& cmd, uint32_t offset = 0) const {
    EXPECT_LE(offset + bytes_.size(), cmd.size);
    std::memcpy(cmd.data + offset, bytes_.data(), bytes_.size());
    return size();
  }

 private:
  std::vector<uint8_t> bytes_;
};

// Page-aligned anonymous memory of this process, to import as USERPTR.
class UserMemory {
 public:
  // `bytes` (a multiple of 4096) mapped with `prot` (PROT_READ, ...).
  explicit UserMemory(uint64_t bytes, int prot = PROT_READ | PROT_WRITE)
      : bytes_(bytes) {
    void* addr = mmap(nullptr, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(addr, MAP_FAILED);
    data_ = addr == MAP_FAILED ? nullptr : static_cast<uint8_t*>(addr);
  }
  ~UserMemory() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  UserMemory(const UserMemory&) = delete;
  UserMemory& operator=(const UserMemory&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t bytes_;
  uint8_t* data_;
};

// BO_CREATE of a USERPTR import; returns the errno, *created the result.
inline int Import(KernelFile& file, const void* user_ptr, uint64_t size,
                  uint32_t extra_flags = 0,
                  drm_lnpu_bo_create* created = nullptr) {
  drm_lnpu_bo_create create{};
  create.size = size;
  create.flags = DRM_LNPU_BO_USERPTR | extra_flags;
  create.user_ptr = reinterpret_cast<uintptr_t>(user_ptr);
  const int err = file.Ioctl(DRM_IOCTL_LNPU_BO_CREATE, &create);
  if (created != nullptr) *created = create;
  return err;
}

inline lnpu_cmd_scatter_rows MakeScatterRows(uint64_t src, uint64_t dst,
                                             uint64_t indices,
                                             uint32_t row_bytes, uint32_t rows,
                                             uint32_t blocks,
                                             uint32_t dst_rows) {
  lnpu_cmd_scatter_rows scatter{};
  scatter.hdr = {LNPU_OP_SCATTER_ROWS, 0, sizeof(scatter)};
  scatter.src = src;
  scatter.dst = dst;
  scatter.indices = indices;
  scatter.src_block_stride = uint64_t{rows} * row_bytes;
  scatter.dst_block_stride = uint64_t{dst_rows} * row_bytes;
  scatter.row_bytes = row_bytes;
  scatter.rows = rows;
  scatter.blocks = blocks;
  scatter.dst_rows = dst_rows;
  return scatter;
}

// The arguments of a submit; the vectors must outlive Args().
struct Submission {
  uint32_t engine = DRM_LNPU_ENGINE_COMPUTE;
  uint32_t cmd_handle = 0;
  uint32_t cmd_offset = 0;
  uint32_t cmd_size = 0;
  std::vector<uint32_t> bo_handles;
  std::vector<uint64_t> in_fences;

  drm_lnpu_submit Args() const {
    drm_lnpu_submit args{};
    args.bo_handles = reinterpret_cast<uintptr_t>(bo_handles.data());
    args.in_fences = reinterpret_cast<uintptr_t>(in_fences.data());
    args.bo_count = static_cast<uint32_t>(bo_handles.size());
    args.in_fence_count = static_cast<uint32_t>(in_fences.size());
    args.engine = engine;
    args.cmd_handle = cmd_handle;
    args.cmd_offset = cmd_offset;
    args.cmd_size = cmd_size;
    return args;
  }
};

// Submits; returns the errno and stores the fence in *fence.
inline int Submit(KernelFile& file, const Submission& submission,
                  uint64_t* fence = nullptr) {
  drm_lnpu_submit args = submission.Args();
  const int err = file.Ioctl(DRM_IOCTL_LNPU_SUBMIT, &args);
  if (fence != nullptr) *fence = args.fence;
  return err;
}

inline int Wait(KernelFile& file, const std::vector<uint64_t>& fences,
                int64_t deadline_ns, uint32_t flags = 0,
                drm_lnpu_wait* result = nullptr) {
  drm_lnpu_wait args{};
  args.fences = reinterpret_cast<uintptr_t>(fences.data());
  args.fence_count = static_cast<uint32_t>(fences.size());
  args.flags = flags;
  args.timeout_ns = deadline_ns;
  const int err = file.Ioctl(DRM_IOCTL_LNPU_WAIT, &args);
  if (result != nullptr) *result = args;
  return err;
}

// Waits for one fence and returns its job_error (or a positive errno if
// the wait itself failed).
inline int WaitJob(KernelFile& file, uint64_t fence) {
  drm_lnpu_wait result{};
  const int err = Wait(file, {fence}, LongDeadline(), 0, &result);
  return err != 0 ? err : result.job_error;
}

inline SoftNpuOptions SmallDeviceOptions() {
  SoftNpuOptions options;
  options.memory_bytes = 64ull << 20;
  options.compute_threads = 2;
  return options;
}

// A fresh device (or the kernel node of LNPU_TEST_DEVICE, test_npu.h) with
// one open file; at the end every file must have given all memory back.
class SoftNpuTest : public ::testing::Test {
 protected:
  explicit SoftNpuTest(const SoftNpuOptions& options = SmallDeviceOptions())
      : npu_(TestNpu::Create(options)), file_(npu_->Open()) {}

  void TearDown() override {
    file_.reset();
    EXPECT_EQ(npu_->memory_used(), 0u) << "a test leaked device memory";
  }

  std::shared_ptr<TestNpu> npu_;
  std::unique_ptr<KernelFile> file_;
};

}  // namespace lnpu::softnpu::testing

#endif  // TESTS_SOFTNPU_SOFT_NPU_TEST_UTIL_H_
