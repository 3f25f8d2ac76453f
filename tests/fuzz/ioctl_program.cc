#include "tests/fuzz/ioctl_program.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernel_iface/driver/kernel_file.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tests/fuzz/fuzz_input.h"

namespace lnpu::fuzz {
namespace {

constexpr uint64_t kPage = 4096;
// At most this many buffers, mappings and fences are remembered per file
// for selectors; older entries are forgotten (their objects stay alive).
constexpr size_t kMaxRecords = 64;
// Jobs end within the 20 ms job timeout plus one command, which the 64 KiB
// device memory keeps far below a second; waiting longer means a hang.
constexpr int64_t kHangNs = 5'000'000'000;

int64_t MonotonicNowNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

uint64_t AsUserPointer(const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

// User memory that USERPTR imports may name: writable pages, read-only
// pages and inaccessible pages, in that order. It outlives the device.
class UserMemory {
 public:
  static constexpr uint64_t kWritablePages = 16;
  static constexpr uint64_t kReadOnlyPages = 4;
  static constexpr uint64_t kInaccessiblePages = 4;
  static constexpr uint64_t kBytes =
      (kWritablePages + kReadOnlyPages + kInaccessiblePages) * kPage;

  UserMemory() {
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<uint8_t*>(p);
    mprotect(read_only(), kReadOnlyPages * kPage, PROT_READ);
    mprotect(inaccessible(), kInaccessiblePages * kPage, PROT_NONE);
  }
  ~UserMemory() {
    if (base_ != nullptr) munmap(base_, kBytes);
  }
  UserMemory(const UserMemory&) = delete;
  UserMemory& operator=(const UserMemory&) = delete;

  bool ok() const { return base_ != nullptr; }
  uint8_t* writable() const { return base_; }
  uint8_t* read_only() const { return base_ + kWritablePages * kPage; }
  uint8_t* inaccessible() const { return read_only() + kReadOnlyPages * kPage; }
  uint8_t* end() const { return base_ + kBytes; }

 private:
  uint8_t* base_ = nullptr;
};

// A buffer this harness created, as the driver described it.
struct BoRecord {
  uint32_t handle = 0;
  uint32_t flags = 0;
  uint64_t size = 0;
  uint64_t device_addr = 0;
  uint64_t mmap_offset = 0;
  bool open = true;
  // The last command stream written into it.
  uint32_t stream_offset = 0;
  uint32_t stream_bytes = 0;
};

struct MappingRecord {
  uint8_t* addr = nullptr;
  uint64_t length = 0;
  uint32_t handle = 0;  // of the buffer, for the stream position
};

struct FileState {
  std::unique_ptr<KernelFile> file;
  std::deque<BoRecord> bos;
  std::deque<MappingRecord> mappings;
  std::deque<uint64_t> fences;  // most recent last
  uint64_t next_fence = 1;
  // Last fence per engine: waiting for these waits for every job.
  std::array<uint64_t, DRM_LNPU_ENGINE_COUNT> last_fence{};
};

// One command field, as laid out in the UAPI struct after the header.
enum class Field : uint8_t { kAddr, kBytes, kDim, kDtype, kF32, kMode, kPad };

constexpr size_t FieldWidth(Field f) {
  return f == Field::kAddr || f == Field::kBytes ? 8 : 4;
}

template <size_t N>
constexpr size_t CommandBytes(const std::array<Field, N>& fields) {
  size_t bytes = sizeof(lnpu_cmd_header);
  for (Field f : fields) bytes += FieldWidth(f);
  return bytes;
}

using F = Field;
constexpr std::array<Field, 7> kGatherFields = {
    F::kAddr, F::kAddr, F::kAddr, F::kDtype, F::kDim, F::kDim, F::kDim};
constexpr std::array<Field, 7> kRmsNormFields = {
    F::kAddr, F::kAddr, F::kAddr, F::kDim, F::kDim, F::kF32, F::kPad};
constexpr std::array<Field, 8> kMatmulFields = {
    F::kAddr, F::kAddr, F::kAddr, F::kAddr, F::kDim, F::kDim, F::kDim,
    F::kDtype};
constexpr std::array<Field, 12> kRopeFields = {
    F::kAddr, F::kAddr, F::kAddr, F::kDim,  F::kDim, F::kDim,
    F::kDim,  F::kF32,  F::kF32,  F::kMode, F::kPad, F::kAddr};
constexpr std::array<Field, 19> kAttentionFields = {
    F::kAddr, F::kAddr, F::kAddr, F::kAddr, F::kAddr,  F::kAddr, F::kAddr,
    F::kDim,  F::kDim,  F::kDim,  F::kDim,  F::kDim,   F::kDtype, F::kF32,
    F::kF32,  F::kAddr, F::kAddr, F::kDim,  F::kPad};
constexpr std::array<Field, 6> kScaleFields = {F::kAddr, F::kAddr, F::kDim,
                                               F::kF32,  F::kF32,  F::kPad};
constexpr std::array<Field, 5> kElementwiseFields = {F::kAddr, F::kAddr,
                                                     F::kAddr, F::kDim,
                                                     F::kPad};
constexpr std::array<Field, 3> kCopyFields = {F::kAddr, F::kAddr, F::kBytes};
constexpr std::array<Field, 11> kScatterFields = {
    F::kAddr, F::kAddr, F::kAddr, F::kBytes, F::kBytes, F::kDim,
    F::kDim,  F::kDim,  F::kDim,  F::kDim,   F::kPad};

// The tables must follow the UAPI structs exactly.
static_assert(CommandBytes(kGatherFields) == sizeof(lnpu_cmd_gather_rows));
static_assert(CommandBytes(kRmsNormFields) == sizeof(lnpu_cmd_rms_norm));
static_assert(CommandBytes(kMatmulFields) == sizeof(lnpu_cmd_matmul));
static_assert(CommandBytes(kRopeFields) == sizeof(lnpu_cmd_rope));
static_assert(CommandBytes(kAttentionFields) == sizeof(lnpu_cmd_attention));
static_assert(CommandBytes(kElementwiseFields) == sizeof(lnpu_cmd_swiglu));
static_assert(CommandBytes(kElementwiseFields) == sizeof(lnpu_cmd_add));
static_assert(CommandBytes(kElementwiseFields) == sizeof(lnpu_cmd_geglu));
static_assert(CommandBytes(kScaleFields) == sizeof(lnpu_cmd_scale));
static_assert(CommandBytes(kCopyFields) == sizeof(lnpu_cmd_copy));
static_assert(CommandBytes(kScatterFields) == sizeof(lnpu_cmd_scatter_rows));
static_assert(LNPU_OP_COUNT == 12, "new opcode: add its field table");

// The fields of `opcode` after its header; empty for NOP and unknown ones.
absl::Span<const Field> CommandFields(uint32_t opcode) {
  switch (opcode) {
    case LNPU_OP_GATHER_ROWS: return kGatherFields;
    case LNPU_OP_RMS_NORM: return kRmsNormFields;
    case LNPU_OP_MATMUL: return kMatmulFields;
    case LNPU_OP_ROPE: return kRopeFields;
    case LNPU_OP_ATTENTION: return kAttentionFields;
    case LNPU_OP_SWIGLU:
    case LNPU_OP_GEGLU:
    case LNPU_OP_ADD: return kElementwiseFields;
    case LNPU_OP_SCALE: return kScaleFields;
    case LNPU_OP_COPY: return kCopyFields;
    case LNPU_OP_SCATTER_ROWS: return kScatterFields;
    default: return {};
  }
}

size_t CommandStructSize(uint32_t opcode) {
  const absl::Span<const Field> fields = CommandFields(opcode);
  size_t bytes = sizeof(lnpu_cmd_header);
  for (Field f : fields) bytes += FieldWidth(f);
  return bytes;
}

// The request number `request` with its size field replaced by `size`.
unsigned long WithSize(unsigned long request, size_t size) {
  return (request & ~(static_cast<unsigned long>(_IOC_SIZEMASK)
                      << _IOC_SIZESHIFT)) |
         (static_cast<unsigned long>(size) << _IOC_SIZESHIFT);
}

class Program {
 public:
  Program(FuzzInput& in, ProgramReport& report)
      : in_(in), report_(report) {}

  void Run(const softnpu::SoftNpuOptions& device_options) {
    if (!user_memory_.ok()) return;  // no host memory: nothing to test
    device_ = softnpu::SoftNpu::Create(device_options);
    for (FileState& f : files_) f.file = device_->Open();
    max_job_bos_ = QueryLimit(DRM_LNPU_PARAM_MAX_JOB_BOS);
    max_fences_ = QueryLimit(DRM_LNPU_PARAM_MAX_IN_FENCES);
    while (!in_.empty() && report_.violation.empty()) {
      ++report_.operations;
      Step(static_cast<Op>(in_.U8() % static_cast<uint8_t>(Op::kCount)));
    }
    if (report_.violation.empty()) CollectJobResults();
    // Files first (their jobs may still run), then the device, which
    // cancels what is queued and joins its engines; the user memory last.
    for (FileState& f : files_) f.file.reset();
    device_.reset();
  }

 private:
  FileState& file() { return files_[current_]; }
  FileState& other_file() { return files_[1 - current_]; }

  template <typename... Args>
  void Violation(const absl::FormatSpec<Args...>& format, const Args&... args) {
    if (report_.violation.empty()) {
      report_.violation = absl::StrFormat(format, args...);
    }
  }

  // Fails the program unless `error` is one of `allowed`.
  void Expect(const char* what, int error, std::initializer_list<int> allowed) {
    if (std::find(allowed.begin(), allowed.end(), error) == allowed.end()) {
      Violation("%s returned errno %d (%s), which the UAPI does not allow",
                what, error, std::strerror(error));
    }
  }

  uint64_t QueryLimit(uint32_t param) {
    drm_lnpu_get_param args{};
    args.param = param;
    if (Ioctl(files_[0], DRM_IOCTL_LNPU_GET_PARAM, &args) != 0) {
      Violation("GET_PARAM %u failed on a fresh file", param);
    }
    return args.value;
  }

  int Ioctl(FileState& f, unsigned long request, void* arg) {
    ++report_.ioctls;
    return f.file->Ioctl(request, arg);
  }

  // Performs `request` on a copy of *args in a heap block of exactly the
  // size the (abi-altered) request encodes, so that reading past it is an
  // AddressSanitizer report; copies the result back. Sets *truncated when
  // the request encodes a smaller struct: then the driver returns only its
  // leading fields and the rest of *args is stale.
  template <typename T>
  int CallWithAbi(unsigned long request, T* args, uint8_t abi,
                  bool* truncated) {
    size_t size = sizeof(T);
    if (abi >= 0xF0 && abi <= 0xF7) {
      const size_t shrink = 8 * size_t{abi - 0xEFu};
      size = shrink + 8 <= sizeof(T) ? sizeof(T) - shrink : 8;
    } else if (abi >= 0xF8) {
      size = sizeof(T) + 8 * (abi - 0xF7);
    }
    *truncated = size < sizeof(T);
    std::vector<uint8_t> block(size, 0);
    std::memcpy(block.data(), args, std::min(size, sizeof(T)));
    if (abi == 0xFF) block.back() = 0xA5;
    const int error = Ioctl(file(), WithSize(request, size), block.data());
    std::memcpy(args, block.data(), std::min(size, sizeof(T)));
    return error;
  }

  uint32_t DecodePad() {
    const uint8_t b = in_.U8();
    return b == 0xFF ? in_.U32() : 0;
  }

  uint32_t DecodeHandle() {
    const uint8_t s = in_.U8();
    if (s < 0xF0) {
      return file().bos.empty() ? 0 : file().bos[s % file().bos.size()].handle;
    }
    if (s < 0xF8) {
      const auto& bos = other_file().bos;
      return bos.empty() ? 0 : bos[s % bos.size()].handle;
    }
    if (s < 0xFF) return s - 0xF8;
    return in_.U32();
  }

  uint64_t DecodeFence() {
    const uint8_t s = in_.U8();
    const auto& fences = file().fences;
    if (s < 0xF0) {
      return fences.empty() ? 1 : fences[fences.size() - 1 - s % fences.size()];
    }
    if (s < 0xFF) return file().next_fence + (s - 0xF0);
    return in_.U64();
  }

  // A count against `limit`; *null_array is set for the null-pointer form.
  uint32_t DecodeCount(uint64_t limit, bool* null_array) {
    const uint8_t c = in_.U8();
    *null_array = false;
    if (c < 0xF0) return static_cast<uint32_t>(c % (limit + 1));
    if (c < 0xFE) return static_cast<uint32_t>(limit + (c - 0xF0));
    if (c == 0xFE) {
      *null_array = true;
      return in_.U8();
    }
    return in_.U32();
  }

  BoRecord* FindBo(FileState& f, uint32_t handle) {
    for (BoRecord& bo : f.bos) {
      if (bo.handle == handle) return &bo;
    }
    return nullptr;
  }

  template <typename T>
  static void Remember(std::deque<T>& records,
                       typename std::deque<T>::value_type record) {
    records.push_back(std::move(record));
    if (records.size() > kMaxRecords) records.pop_front();
  }

  void Step(Op op) {
    switch (op) {
      case Op::kGetParam: return GetParam();
      case Op::kBoCreate: return BoCreate();
      case Op::kBoInfo: return BoInfo();
      case Op::kGemClose: return GemClose();
      case Op::kMmap: return Mmap();
      case Op::kMunmap: return Munmap();
      case Op::kFill: return Fill();
      case Op::kWriteCommands: return WriteCommands();
      case Op::kSubmit: return Submit();
      case Op::kWait: return Wait();
      case Op::kVersion: return Version();
      case Op::kBadIoctl: return BadIoctl();
      case Op::kSwitchFile:
        current_ = 1 - current_;
        return;
      case Op::kReopenFile: return ReopenFile();
      case Op::kCount: return;
    }
  }

  void GetParam() {
    drm_lnpu_get_param args{};
    const uint8_t b = in_.U8();
    args.param = b < 0xF0 ? b % (DRM_LNPU_PARAM_COUNT + 2) : in_.U32();
    args.pad = DecodePad();
    bool truncated = false;
    const int error = CallWithAbi(DRM_IOCTL_LNPU_GET_PARAM, &args, in_.U8(),
                                  &truncated);
    Expect("GET_PARAM", error, {0, EINVAL});
    if (!truncated && args.pad == 0 && args.param < DRM_LNPU_PARAM_COUNT &&
        error != 0) {
      Violation("GET_PARAM of known param %u failed with errno %d",
                args.param, error);
    }
  }

  void BoCreate() {
    drm_lnpu_bo_create args{};
    const uint8_t mode = in_.U8();
    const uint64_t v = in_.U64();
    switch (mode % 4) {
      case 0: args.size = v % 65536 + 1; break;
      case 1: args.size = kPage * (v % 16 + 1); break;
      case 2: args.size = v; break;
      default: args.size = 0; break;
    }
    const uint8_t flags = in_.U8();
    args.flags = flags < 0xF0 ? flags & 7u : in_.U32();
    const uint8_t user = in_.U8();
    const uint64_t page = (v % UserMemory::kWritablePages) * kPage;
    uint8_t* user_ptr = nullptr;
    switch (user % 5) {
      case 1: user_ptr = user_memory_.writable() + page; break;
      case 2: user_ptr = user_memory_.read_only(); break;
      case 3: user_ptr = user_memory_.inaccessible(); break;
      case 4: user_ptr = user_memory_.writable() + 8; break;
      default: break;
    }
    args.user_ptr = AsUserPointer(user_ptr);
    // An import never reaches past the user memory: the memory beyond may
    // be mapped for other purposes of this process.
    if (user_ptr != nullptr) {
      args.size = std::min<uint64_t>(
          args.size, static_cast<uint64_t>(user_memory_.end() - user_ptr));
    }
    bool truncated = false;
    const int error =
        CallWithAbi(DRM_IOCTL_LNPU_BO_CREATE, &args, in_.U8(), &truncated);
    Expect("BO_CREATE", error, {0, EINVAL, EFAULT, ENOMEM, ENOSPC});
    // A truncated struct does not return the handle: the buffer lives on
    // unnamed until the file closes, as it would for such user space.
    if (error != 0 || truncated) return;
    if (args.handle == 0 || args.device_addr == 0 ||
        args.device_addr % kPage != 0) {
      return Violation("BO_CREATE returned handle %u, device address 0x%x",
                       args.handle, args.device_addr);
    }
    drm_lnpu_bo_info info{};
    info.handle = args.handle;
    if (Ioctl(file(), DRM_IOCTL_LNPU_BO_INFO, &info) != 0) {
      return Violation("BO_INFO of new handle %u failed", args.handle);
    }
    if (info.device_addr != args.device_addr || info.size < args.size ||
        info.size % kPage != 0 || info.flags != args.flags) {
      return Violation(
          "BO_INFO of new handle %u disagrees with BO_CREATE (size %u for "
          "%u requested, flags 0x%x for 0x%x, address 0x%x for 0x%x)",
          args.handle, info.size, args.size, info.flags, args.flags,
          info.device_addr, args.device_addr);
    }
    Remember(file().bos, BoRecord{.handle = args.handle,
                                  .flags = info.flags,
                                  .size = info.size,
                                  .device_addr = info.device_addr,
                                  .mmap_offset = info.mmap_offset});
  }

  void BoInfo() {
    drm_lnpu_bo_info args{};
    args.handle = DecodeHandle();
    bool truncated = false;
    const int error =
        CallWithAbi(DRM_IOCTL_LNPU_BO_INFO, &args, in_.U8(), &truncated);
    Expect("BO_INFO", error, {0, ENOENT, EINVAL});
    const BoRecord* bo = FindBo(file(), args.handle);
    if (truncated || bo == nullptr) return;
    if (bo->open && error != 0) {
      Violation("BO_INFO of open handle %u failed with errno %d", bo->handle,
                error);
    } else if (!bo->open && error != ENOENT) {
      Violation("BO_INFO of closed handle %u returned errno %d, not ENOENT",
                bo->handle, error);
    } else if (error == 0 && (args.size != bo->size ||
                              args.device_addr != bo->device_addr ||
                              args.mmap_offset != bo->mmap_offset)) {
      Violation("BO_INFO of handle %u changed since BO_CREATE", bo->handle);
    }
  }

  void GemClose() {
    drm_gem_close args{};
    args.handle = DecodeHandle();
    args.pad = DecodePad();
    const int error = Ioctl(file(), DRM_IOCTL_GEM_CLOSE, &args);
    Expect("GEM_CLOSE", error, {0, ENOENT, EINVAL});
    BoRecord* bo = FindBo(file(), args.handle);
    if (bo == nullptr || args.pad != 0) return;
    if (bo->open != (error == 0)) {
      Violation("GEM_CLOSE of %s handle %u returned errno %d",
                bo->open ? "open" : "closed", bo->handle, error);
    }
    bo->open = false;
  }

  void Mmap() {
    const uint32_t handle = DecodeHandle();
    const BoRecord* bo = FindBo(file(), handle);
    const uint64_t base = bo == nullptr ? 0 : bo->mmap_offset;
    const uint64_t size = bo == nullptr ? kPage : bo->size;
    uint64_t offset = base;
    const uint8_t offset_mode = in_.U8() % 3;
    if (offset_mode == 1) offset = in_.U64();
    if (offset_mode == 2) offset = base + kPage;
    const uint8_t length_mode = in_.U8() % 3;
    const uint32_t v = in_.U32();
    uint64_t length = size;
    if (length_mode == 1) length = v % size + 1;
    if (length_mode == 2) length = v;
    void* addr = nullptr;
    ++report_.ioctls;
    const int error = file().file->Mmap(length, offset, &addr);
    Expect("mmap", error, {0, EINVAL, ENOENT, ENOMEM});
    if (error != 0) return;
    if (addr == nullptr) return Violation("mmap succeeded with a null address");
    // Whatever was mapped, the harness only writes `length` bytes of it;
    // the mapping is undone by Munmap or dies with the file.
    Remember(file().mappings,
             MappingRecord{static_cast<uint8_t*>(addr), length, handle});
    if (file().mappings.size() == kMaxRecords) {
      // Forgotten mappings would stay until the file closes: keep them
      // balanced by unmapping the oldest remembered one now.
      const MappingRecord oldest = file().mappings.front();
      file().mappings.pop_front();
      ++report_.ioctls;
      if (file().file->Munmap(oldest.addr, oldest.length) != 0) {
        Violation("munmap of a live mapping failed");
      }
    }
  }

  void Munmap() {
    const uint8_t s = in_.U8();
    auto& mappings = file().mappings;
    ++report_.ioctls;
    if (s < 0xF0 && !mappings.empty()) {
      const size_t i = s % mappings.size();
      const MappingRecord m = mappings[i];
      mappings.erase(mappings.begin() + static_cast<ptrdiff_t>(i));
      const int error = file().file->Munmap(m.addr, m.length);
      if (error != 0) Violation("munmap of a live mapping: errno %d", error);
      return;
    }
    uint8_t* addr =
        mappings.empty() ? user_memory_.writable() : mappings.back().addr;
    const uint64_t length = mappings.empty() ? kPage : mappings.back().length;
    const int error = s % 2 == 0 ? file().file->Munmap(addr + 1, length)
                                 : file().file->Munmap(addr, length + 1);
    Expect("munmap of a non-mapping", error, {EINVAL});
  }

  // The memory a Fill or WriteCommands targets: a live mapping or the
  // writable user memory (last). *handle is the mapping's buffer, or 0.
  absl::Span<uint8_t> DecodeTarget(uint32_t* handle) {
    const auto& mappings = file().mappings;
    const size_t i = in_.U8() % (mappings.size() + 1);
    if (i == mappings.size()) {
      *handle = 0;
      return {user_memory_.writable(), UserMemory::kWritablePages * kPage};
    }
    *handle = mappings[i].handle;
    return {mappings[i].addr, mappings[i].length};
  }

  // Waits until every job of both files ended, so that host writes race no
  // job. A wait beyond kHangNs is reported as a hang.
  void Quiesce() {
    for (FileState& f : files_) {
      for (uint64_t fence : f.last_fence) {
        if (fence == 0) continue;
        drm_lnpu_wait args{};
        args.fences = AsUserPointer(&fence);
        args.fence_count = 1;
        args.timeout_ns = MonotonicNowNs() + kHangNs;
        const int error = Ioctl(f, DRM_IOCTL_LNPU_WAIT, &args);
        if (error == ETIMEDOUT) {
          return Violation("fence %u still pending after %d s: hang", fence,
                           kHangNs / 1'000'000'000);
        }
        if (error != 0) {
          return Violation("WAIT for issued fence %u: errno %d", fence, error);
        }
      }
    }
  }

  void Fill() {
    uint32_t handle = 0;
    const absl::Span<uint8_t> target = DecodeTarget(&handle);
    const uint16_t offset = in_.U16();
    const uint8_t kind = in_.U8() % 4;
    const uint16_t length = in_.U16();
    absl::Span<const uint8_t> raw;
    if (kind == 0) raw = in_.Bytes(length);
    Quiesce();
    if (!report_.violation.empty() || offset >= target.size()) return;
    const size_t n = std::min<size_t>(length, target.size() - offset);
    uint8_t* out = target.data() + offset;
    switch (kind) {
      case 0:
        std::memcpy(out, raw.data(), std::min(n, raw.size()));
        break;
      case 1:
        for (size_t i = 0; i + 4 <= n; i += 4) {
          const float value = static_cast<float>((i / 4) % 16) * 0.25f - 1.0f;
          std::memcpy(out + i, &value, 4);
        }
        break;
      case 2:
        for (size_t i = 0; i + 4 <= n; i += 4) {
          const int32_t value = static_cast<int32_t>((i / 4) % 8);
          std::memcpy(out + i, &value, 4);
        }
        break;
      default:
        std::memset(out, 0, n);
        break;
    }
  }

  uint64_t DecodeAddr() {
    const uint8_t b = in_.U8();
    const uint16_t o = in_.U16();
    const auto& bos = file().bos;
    if (b == 0xFF) return in_.U64();
    if (b >= 0xF0 || bos.empty()) return 0;
    const BoRecord& bo = bos[b % bos.size()];
    if (b >= 0xE0) return bo.device_addr + 1;
    return bo.device_addr + (uint64_t{4} * o) % (bo.size + 64);
  }

  // Appends one decoded field to `command`.
  void AppendField(Field field, std::vector<uint8_t>& command) {
    uint64_t value = 0;
    switch (field) {
      case Field::kAddr:
        value = DecodeAddr();
        break;
      case Field::kBytes: {
        const uint8_t b = in_.U8();
        value = b < 0xF0 ? 4u * b : b < 0xFF ? kPage * (b - 0xEF) : in_.U64();
        break;
      }
      case Field::kDim: {
        const uint8_t b = in_.U8();
        value = b < 0xF0 ? b : b < 0xFF ? 256u << (b - 0xF0) : in_.U32();
        break;
      }
      case Field::kDtype: {
        const uint8_t b = in_.U8();
        value = b < 0xF0 ? b % 6u : in_.U32();
        break;
      }
      case Field::kF32: {
        static constexpr float kValues[8] = {
            1e-5f, 1.0f, 1e4f, 0.0f, -1.0f, 0.5f,
            std::numeric_limits<float>::quiet_NaN(),
            std::numeric_limits<float>::infinity()};
        const uint8_t b = in_.U8();
        uint32_t bits = 0;
        if (b < 0xF0) {
          std::memcpy(&bits, &kValues[b % 8], 4);
        } else {
          bits = in_.U32();
        }
        value = bits;
        break;
      }
      case Field::kMode: {
        const uint8_t b = in_.U8();
        value = b < 0xF0 ? b % 2u : in_.U32();
        break;
      }
      case Field::kPad:
        value = DecodePad();
        break;
    }
    const size_t width = FieldWidth(field);
    const size_t at = command.size();
    command.resize(at + width);
    for (size_t i = 0; i < width; ++i) {
      command[at + i] = static_cast<uint8_t>(value >> (8 * i));
    }
  }

  void WriteCommands() {
    uint32_t handle = 0;
    const absl::Span<uint8_t> target = DecodeTarget(&handle);
    const uint32_t offset = in_.U16() & ~7u;
    const int count = in_.U8() % 16 + 1;
    std::vector<uint8_t> stream;
    for (int i = 0; i < count; ++i) {
      const uint8_t op = in_.U8();
      const uint16_t opcode = op < 0xF0 ? op % LNPU_OP_COUNT : in_.U16();
      lnpu_cmd_header header{};
      header.opcode = opcode;
      const uint8_t flags = in_.U8();
      header.flags = flags < 0xF0 ? flags & 3u : in_.U16();
      const uint8_t size_mode = in_.U8();
      header.size = size_mode == 0xFF
                        ? in_.U32()
                        : static_cast<uint32_t>(CommandStructSize(opcode));
      std::vector<uint8_t> command(sizeof(header));
      std::memcpy(command.data(), &header, sizeof(header));
      for (Field field : CommandFields(opcode)) AppendField(field, command);
      stream.insert(stream.end(), command.begin(), command.end());
    }
    Quiesce();
    if (!report_.violation.empty() || offset >= target.size()) return;
    const size_t n = std::min(stream.size(), target.size() - offset);
    std::memcpy(target.data() + offset, stream.data(), n);
    if (BoRecord* bo = FindBo(file(), handle); bo != nullptr && handle != 0) {
      bo->stream_offset = offset;
      bo->stream_bytes = static_cast<uint32_t>(n);
    }
  }

  void Submit() {
    drm_lnpu_submit args{};
    const uint8_t engine = in_.U8();
    args.engine = engine < 0xF0 ? engine % 2u : in_.U32();
    args.cmd_handle = DecodeHandle();
    switch (in_.U8() % 3) {
      case 0:
        if (const BoRecord* bo = FindBo(file(), args.cmd_handle)) {
          args.cmd_offset = bo->stream_offset;
          args.cmd_size = bo->stream_bytes;
        }
        break;
      case 1:
        args.cmd_offset = uint32_t{in_.U16()} * 8;
        args.cmd_size = uint32_t{in_.U16()} * 8;
        break;
      default:
        args.cmd_offset = in_.U32();
        args.cmd_size = in_.U32();
        break;
    }
    bool null_bos = false;
    args.bo_count = DecodeCount(max_job_bos_, &null_bos);
    std::vector<uint32_t> handles;
    for (uint32_t i = 0; i < std::min<uint32_t>(args.bo_count, 16); ++i) {
      handles.push_back(DecodeHandle());
    }
    // The array holds exactly what the driver may read: bo_count entries,
    // or none when bo_count is over the limit (the driver must reject it
    // before reading).
    std::vector<uint32_t> bo_array(
        args.bo_count <= max_job_bos_ ? args.bo_count : 0);
    for (size_t i = 0; i < bo_array.size(); ++i) {
      bo_array[i] = handles.empty() ? 0 : handles[i % handles.size()];
    }
    bool null_fences = false;
    args.in_fence_count = DecodeCount(max_fences_, &null_fences);
    std::vector<uint64_t> fences;
    for (uint32_t i = 0; i < std::min<uint32_t>(args.in_fence_count, 8); ++i) {
      fences.push_back(DecodeFence());
    }
    std::vector<uint64_t> fence_array(
        args.in_fence_count <= max_fences_ ? args.in_fence_count : 0);
    for (size_t i = 0; i < fence_array.size(); ++i) {
      fence_array[i] = fences.empty() ? 1 : fences[i % fences.size()];
    }
    // A non-null pointer even for an empty array (the driver may not read).
    static const uint64_t kNothing = 0;
    args.bo_handles = null_bos ? 0
                      : bo_array.empty() ? AsUserPointer(&kNothing)
                                         : AsUserPointer(bo_array.data());
    args.in_fences = null_fences ? 0
                     : fence_array.empty() ? AsUserPointer(&kNothing)
                                           : AsUserPointer(fence_array.data());
    args.flags = DecodePad();
    args.out_fence_fd = static_cast<int32_t>(DecodePad());
    // The fields appended in 1.3 cost bytes only when flags are set, so
    // programs that submit with flags 0 (every seed) decode as before.
    if (args.flags != 0) {
      args.profile_handle = DecodeHandle();
      args.pad = DecodePad();
    }
    bool truncated = false;
    const int error =
        CallWithAbi(DRM_IOCTL_LNPU_SUBMIT, &args, in_.U8(), &truncated);
    // EOPNOTSUPP: DRM_LNPU_SUBMIT_PROFILE on a device without
    // DRM_LNPU_CAP_PROFILING.
    Expect("SUBMIT", error, {0, EINVAL, ENOENT, EFAULT, ECANCELED, EOPNOTSUPP});
    if (error != 0) return;
    // Success needs out_fence_fd 0 on entry: anything else is the
    // descriptor DRM_LNPU_SUBMIT_OUT_FENCE_FD asked for, which is ours.
    if (args.out_fence_fd > 0) close(args.out_fence_fd);
    ++report_.jobs_submitted;
    FileState& f = file();
    const uint64_t fence = f.next_fence++;
    if (!truncated && args.fence != fence) {
      return Violation("SUBMIT returned fence %u, expected %u", args.fence,
                       fence);
    }
    if (args.engine < DRM_LNPU_ENGINE_COUNT) f.last_fence[args.engine] = fence;
    Remember(f.fences, fence);
  }

  void Wait() {
    drm_lnpu_wait args{};
    bool null_fences = false;
    args.fence_count = DecodeCount(max_fences_, &null_fences);
    std::vector<uint64_t> fences;
    for (uint32_t i = 0; i < std::min<uint32_t>(args.fence_count, 8); ++i) {
      fences.push_back(DecodeFence());
    }
    std::vector<uint64_t> fence_array(
        args.fence_count <= max_fences_ ? args.fence_count : 0);
    for (size_t i = 0; i < fence_array.size(); ++i) {
      fence_array[i] = fences.empty() ? 1 : fences[i % fences.size()];
    }
    static const uint64_t kNothing = 0;
    args.fences = null_fences ? 0
                  : fence_array.empty() ? AsUserPointer(&kNothing)
                                        : AsUserPointer(fence_array.data());
    const uint8_t flags = in_.U8();
    args.flags = flags < 0xF0 ? flags & 1u : in_.U32();
    const uint8_t mode = in_.U8() % 4;
    const uint16_t v = in_.U16();
    switch (mode) {
      case 0: args.timeout_ns = MonotonicNowNs() - 1; break;
      case 1: args.timeout_ns = 0; break;
      case 2: args.timeout_ns = -1 - int64_t{v}; break;
      default: args.timeout_ns = MonotonicNowNs() + 2000 * int64_t{v}; break;
    }
    bool truncated = false;
    const int error = CallWithAbi(DRM_IOCTL_LNPU_WAIT, &args, in_.U8(),
                                  &truncated);
    Expect("WAIT", error, {0, ETIMEDOUT, ENOENT, EINVAL, EFAULT});
    if (error != 0 || truncated) return;
    if (args.job_error != 0 && args.job_error != -EIO &&
        args.job_error != -ECANCELED) {
      Violation("WAIT returned job_error %d", args.job_error);
    } else if ((args.flags & DRM_LNPU_WAIT_ANY) != 0 &&
               args.signalled >= args.fence_count) {
      Violation("WAIT_ANY returned signalled %u of %u fences", args.signalled,
                args.fence_count);
    }
  }

  void Version() {
    char name[256], date[256], desc[256];
    drm_version args{};
    args.name_len = in_.U8();
    args.date_len = in_.U8();
    args.desc_len = in_.U8();
    const uint8_t nulls = in_.U8();
    args.name = (nulls & 1) ? nullptr : name;
    args.date = (nulls & 2) ? nullptr : date;
    args.desc = (nulls & 4) ? nullptr : desc;
    const size_t name_room = args.name_len;
    const int error = Ioctl(file(), DRM_IOCTL_VERSION, &args);
    if (error != 0) return Violation("VERSION failed with errno %d", error);
    if (args.name != nullptr && name_room >= 4 &&
        std::memcmp(name, LNPU_DRIVER_NAME, 4) != 0) {
      Violation("VERSION names driver \"%s\", not lnpu",
                std::string(name, 4));
    }
  }

  void BadIoctl() {
    const uint8_t form = in_.U8();
    alignas(8) uint8_t zeros[512] = {};
    if (form == 0xFF) {
      static constexpr unsigned long kKnown[] = {
          DRM_IOCTL_VERSION,        DRM_IOCTL_GEM_CLOSE,
          DRM_IOCTL_LNPU_GET_PARAM, DRM_IOCTL_LNPU_BO_CREATE,
          DRM_IOCTL_LNPU_BO_INFO,   DRM_IOCTL_LNPU_SUBMIT,
          DRM_IOCTL_LNPU_WAIT};
      const unsigned long request = kKnown[in_.U8() % 7];
      const int error = Ioctl(file(), request, nullptr);
      if (error != EFAULT) {
        Violation("ioctl 0x%x with a null argument returned errno %d, not "
                  "EFAULT",
                  request, error);
      }
      return;
    }
    unsigned long request = in_.U32();
    if (_IOC_TYPE(request) == DRM_IOCTL_BASE) {
      request ^= static_cast<unsigned long>(1) << _IOC_TYPESHIFT;
    }
    const int error = Ioctl(file(), request, zeros);
    if (error != ENOTTY) {
      Violation("non-DRM ioctl 0x%x returned errno %d, not ENOTTY", request,
                error);
    }
  }

  void ReopenFile() {
    FileState& f = file();
    f = FileState{};
    f.file = device_->Open();
  }

  // Waits for every remembered fence of each file; counts the results.
  void CollectJobResults() {
    for (FileState& f : files_) {
      for (uint64_t fence : f.fences) {
        drm_lnpu_wait args{};
        args.fences = AsUserPointer(&fence);
        args.fence_count = 1;
        args.timeout_ns = MonotonicNowNs() + kHangNs;
        const int error = Ioctl(f, DRM_IOCTL_LNPU_WAIT, &args);
        if (error != 0) {
          return Violation("final WAIT for fence %u: errno %d", fence, error);
        }
        ++(args.job_error == 0 ? report_.jobs_completed : report_.jobs_failed);
      }
    }
  }

  FuzzInput& in_;
  ProgramReport& report_;
  UserMemory user_memory_;  // declared first: outlives the device
  std::shared_ptr<softnpu::SoftNpu> device_;
  std::array<FileState, 2> files_;
  int current_ = 0;
  uint64_t max_job_bos_ = 0;
  uint64_t max_fences_ = 0;
};

}  // namespace

softnpu::SoftNpuOptions FuzzDeviceOptions() {
  softnpu::SoftNpuOptions options;
  options.memory_bytes = 64 * 1024;
  options.job_timeout_ms = 20;
  options.compute_threads = 2;
  // Jobs start at once on the engines' threads, concurrently with the
  // program's next ioctls, rather than after a delay left to waiters.
  options.start_delay_us = 0;
  return options;
}

ProgramReport RunIoctlProgram(absl::Span<const uint8_t> input) {
  return RunIoctlProgram(input, FuzzDeviceOptions());
}

ProgramReport RunIoctlProgram(absl::Span<const uint8_t> input,
                              const softnpu::SoftNpuOptions& device_options) {
  ProgramReport report;
  FuzzInput in(input);
  Program(in, report).Run(device_options);
  return report;
}

}  // namespace lnpu::fuzz
