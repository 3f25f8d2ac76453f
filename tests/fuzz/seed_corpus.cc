#include "tests/fuzz/seed_corpus.h"

#include <initializer_list>
#include <utility>

#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/ioctl_program.h"

namespace lnpu::fuzz {
namespace {

// Field values in the encodings of ioctl_program.h. Each writes itself.
struct Dim {
  uint32_t value;
  void WriteTo(FuzzInputWriter& w) const {
    if (value < 0xF0) {
      w.U8(static_cast<uint8_t>(value));
    } else {
      w.U8(0xFF).U32(value);
    }
  }
};
// Byte offset `offset` (a multiple of 4) into the `bo`-th buffer of the
// current file; a null address with bo < 0.
struct Addr {
  int bo;
  uint32_t offset = 0;
  void WriteTo(FuzzInputWriter& w) const {
    if (bo < 0) {
      w.U8(0xF0).U16(0);
    } else {
      w.U8(static_cast<uint8_t>(bo)).U16(static_cast<uint16_t>(offset / 4));
    }
  }
};
struct Bytes {
  uint64_t value;  // a multiple of 4 below 960, else written in full
  void WriteTo(FuzzInputWriter& w) const {
    if (value % 4 == 0 && value / 4 < 0xF0) {
      w.U8(static_cast<uint8_t>(value / 4));
    } else {
      w.U8(0xFF).U64(value);
    }
  }
};
// Small codes: a dtype (b % 6), an f32 table index, a mode, a zero pad.
struct Code {
  uint8_t value;
  void WriteTo(FuzzInputWriter& w) const { w.U8(value); }
};
constexpr Code kF32Eps{0}, kF32One{1}, kF32TenThousand{2}, kF32Zero{3}, kF32Half{5};
constexpr Code kDtypeF32{LNPU_DTYPE_F32}, kDtypeF16{LNPU_DTYPE_F16},
    kDtypeQ8_0{LNPU_DTYPE_Q8_0}, kDtypeQ4_0{LNPU_DTYPE_Q4_0}, kZero{0},
    kRopeNorm{LNPU_ROPE_MODE_NORM}, kRopeNeox{LNPU_ROPE_MODE_NEOX};
// A dtype outside the small codes (b % 6), e.g. LNPU_DTYPE_I8.
struct WideDtype {
  uint32_t value;
  void WriteTo(FuzzInputWriter& w) const { w.U8(0xFF).U32(value); }
};
// Since 1.4: Q8_0 blocks in panels of 16 rows, 64-byte aligned, stored in
// whole panels (a partial last one padded).
constexpr WideDtype kDtypeQ8_0P16{LNPU_DTYPE_Q8_0_P16};
// Since 1.5: Q4_0 blocks in the same panels.
constexpr WideDtype kDtypeQ4_0P16{LNPU_DTYPE_Q4_0_P16};
// Since 1.7: both with the scales in the quant stream (the same sizes and
// rules).
constexpr WideDtype kDtypeQ8_0P16S{LNPU_DTYPE_Q8_0_P16S};
constexpr WideDtype kDtypeQ4_0P16S{LNPU_DTYPE_Q4_0_P16S};

class ProgramWriter {
 public:
  ProgramWriter& GetParam(uint8_t param, uint8_t abi = 0) {
    return Begin(Op::kGetParam).U8(param).U8(0).U8(abi);
  }
  // size_mode 0: v % 65536 + 1 bytes; 1: 4096 * (v % 16 + 1) bytes.
  // user: the user_ptr code of Op::kBoCreate.
  ProgramWriter& BoCreate(uint8_t size_mode, uint64_t v, uint8_t flags,
                          uint8_t user = 0, uint8_t abi = 0) {
    return Begin(Op::kBoCreate).U8(size_mode).U64(v).U8(flags).U8(user).U8(
        abi);
  }
  // handle_selector: see "handle" in ioctl_program.h.
  ProgramWriter& BoInfo(uint8_t handle_selector, uint8_t abi = 0) {
    return Begin(Op::kBoInfo).U8(handle_selector).U8(abi);
  }
  ProgramWriter& GemClose(uint8_t handle_selector) {
    return Begin(Op::kGemClose).U8(handle_selector).U8(0);
  }
  ProgramWriter& MmapWhole(uint8_t handle_selector) {
    return Begin(Op::kMmap).U8(handle_selector).U8(0).U8(0).U32(0);
  }
  ProgramWriter& Munmap(uint8_t selector) {
    return Begin(Op::kMunmap).U8(selector);
  }
  // kind 1: F32 ramp, 2: I32 i % 8, 3: zeros.
  ProgramWriter& Fill(uint8_t target, uint16_t offset, uint8_t kind,
                      uint16_t length) {
    return Begin(Op::kFill).U8(target).U16(offset).U8(kind).U16(length);
  }
  ProgramWriter& FillRaw(uint8_t target, uint16_t offset,
                         std::initializer_list<uint8_t> bytes) {
    Begin(Op::kFill).U8(target).U16(offset).U8(0).U16(
        static_cast<uint16_t>(bytes.size()));
    for (uint8_t b : bytes) U8(b);
    return *this;
  }
  // Starts a kWriteCommands of `count` commands; follow with Command().
  ProgramWriter& WriteCommands(uint8_t target, uint16_t offset,
                               uint8_t count) {
    return Begin(Op::kWriteCommands).U8(target).U16(offset).U8(count - 1);
  }
  template <typename... Fields>
  ProgramWriter& Command(uint8_t opcode, uint8_t flags, Fields... fields) {
    U8(opcode).U8(flags).U8(0);
    (fields.WriteTo(w_), ...);
    return *this;
  }
  // Submits the last stream written into the buffer `cmd_selector` names.
  ProgramWriter& Submit(uint8_t engine, uint8_t cmd_selector,
                        std::initializer_list<uint8_t> bo_selectors,
                        std::initializer_list<uint8_t> fence_selectors = {},
                        uint8_t abi = 0) {
    Begin(Op::kSubmit).U8(engine).U8(cmd_selector).U8(0);
    U8(static_cast<uint8_t>(bo_selectors.size()));
    for (uint8_t s : bo_selectors) U8(s);
    U8(static_cast<uint8_t>(fence_selectors.size()));
    for (uint8_t s : fence_selectors) U8(s);
    return U8(0).U8(0).U8(abi);
  }
  // Submits the last stream written into the command buffer (record 1)
  // with the data buffer (record 0) on `engine` and waits for it.
  ProgramWriter& SubmitAndWait(uint8_t engine) {
    return Submit(engine, 1, {0}).Wait(1, 0, 50000);
  }
  // Waits up to 2 us * `ticks` for the `count` most recent fences.
  ProgramWriter& Wait(uint8_t count, uint8_t flags, uint16_t ticks,
                      uint8_t abi = 0) {
    Begin(Op::kWait).U8(count);
    for (uint8_t i = 0; i < count; ++i) U8(i);
    return U8(flags).U8(3).U16(ticks).U8(abi);
  }
  // A WAIT whose fields are `bytes`.
  ProgramWriter& WaitRaw(std::initializer_list<uint8_t> bytes) {
    Begin(Op::kWait);
    for (uint8_t b : bytes) U8(b);
    return *this;
  }
  ProgramWriter& Version(uint8_t name_len, uint8_t null_mask) {
    return Begin(Op::kVersion).U8(name_len).U8(8).U8(32).U8(null_mask);
  }
  ProgramWriter& NullArgument(uint8_t ioctl_index) {
    return Begin(Op::kBadIoctl).U8(0xFF).U8(ioctl_index);
  }
  ProgramWriter& UnknownIoctl(uint32_t request) {
    return Begin(Op::kBadIoctl).U8(0).U32(request);
  }
  ProgramWriter& SwitchFile() { return Begin(Op::kSwitchFile); }
  ProgramWriter& ReopenFile() { return Begin(Op::kReopenFile); }

  std::vector<uint8_t> Take() const { return w_.bytes(); }

 private:
  ProgramWriter& Begin(Op op) { return U8(static_cast<uint8_t>(op)); }
  ProgramWriter& U8(uint8_t v) { w_.U8(v); return *this; }
  ProgramWriter& U16(uint16_t v) { w_.U16(v); return *this; }
  ProgramWriter& U32(uint32_t v) { w_.U32(v); return *this; }
  ProgramWriter& U64(uint64_t v) { w_.U64(v); return *this; }

  FuzzInputWriter w_;
};

// Buffers of the compute seeds: 0 = data (32 KiB), 1 = commands (4 KiB).
constexpr int kData = 0;
constexpr uint8_t kDataHandle = 0, kCmdHandle = 1;
// Mappings: 0 = data, 1 = commands.
constexpr uint8_t kDataMap = 0, kCmdMap = 1;

// Creates, maps and fills the data and command buffers.
ProgramWriter& SetUpBuffers(ProgramWriter& p) {
  return p.BoCreate(1, 7, 0)
      .BoCreate(1, 0, DRM_LNPU_BO_CMDBUF)
      .MmapWhole(kDataHandle)
      .MmapWhole(kCmdHandle)
      .Fill(kDataMap, 0, 1, 4096)     // F32 operands
      .Fill(kDataMap, 4096, 2, 64)    // I32 indices/positions 0..7
      .Fill(kDataMap, 7168, 3, 64);   // mask: no cache slot visible
}

// Every compute opcode on small valid operands, one job.
std::vector<uint8_t> ComputeChain() {
  ProgramWriter p;
  SetUpBuffers(p)
      .WriteCommands(kCmdMap, 0, 9)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 1024},
               Addr{-1}, Addr{kData, 2048}, Dim{2}, Dim{8}, Dim{8}, kDtypeF32)
      .Command(LNPU_OP_RMS_NORM, 0, Addr{kData, 2048}, Addr{kData, 1024},
               Addr{kData, 2048}, Dim{2}, Dim{8}, kF32Eps, kZero)
      .Command(LNPU_OP_ROPE, 0, Addr{kData, 2048}, Addr{kData, 2048},
               Addr{kData, 4096}, Dim{2}, Dim{2}, Dim{4}, Dim{4},
               kF32TenThousand, kF32One, kZero, kZero, Addr{-1})
      .Command(LNPU_OP_ATTENTION, 0, Addr{kData, 2048}, Addr{kData, 0},
               Addr{kData, 256}, Addr{kData, 6144}, Addr{kData, 6400},
               Addr{kData, 7168}, Addr{kData, 8192}, Dim{2}, Dim{4}, Dim{2},
               Dim{1}, Dim{4}, kDtypeF32, kF32Half, kF32Zero, Addr{-1}, Addr{-1}, Dim{0}, kZero)
      .Command(LNPU_OP_SWIGLU, 0, Addr{kData, 8192}, Addr{kData, 2048},
               Addr{kData, 8448}, Dim{16}, kZero)
      .Command(LNPU_OP_ADD, 0, Addr{kData, 8448}, Addr{kData, 2048},
               Addr{kData, 8704}, Dim{16}, kZero)
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, 0}, Addr{kData, 4096},
               Addr{kData, 9008}, kDtypeF32, Dim{8}, Dim{2}, Dim{2})
      .Command(LNPU_OP_COPY, 0, Addr{kData, 0}, Addr{kData, 12288},
               Bytes{64})
      .Command(LNPU_OP_NOP, 0)
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// A compute job, then a DMA job (COPY, SCATTER_ROWS) that waits for it
// through an in-fence, then both fences at once and WAIT_ANY.
std::vector<uint8_t> DmaChain() {
  ProgramWriter p;
  SetUpBuffers(p)
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_COPY, 0, Addr{kData, 0}, Addr{kData, 2048},
               Bytes{256})
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 512, 2)
      .Command(LNPU_OP_SCATTER_ROWS, 0, Addr{kData, 2048},
               Addr{kData, 16384}, Addr{kData, 4096}, Bytes{0}, Bytes{0},
               Dim{32}, Dim{2}, Dim{1}, Dim{8}, Dim{0}, kZero)
      .Command(LNPU_OP_COPY, 0, Addr{kData, 16384}, Addr{kData, 20480},
               Bytes{256})
      .Submit(DRM_LNPU_ENGINE_DMA, kCmdHandle, {kDataHandle}, {0})
      .Wait(2, 0, 50000)
      .Wait(2, DRM_LNPU_WAIT_ANY, 50000);
  return p.Take();
}

// A job whose GATHER_ROWS index lies outside its table faults (-EIO); a
// later job that waits for it through an in-fence is cancelled.
std::vector<uint8_t> Faults() {
  ProgramWriter p;
  SetUpBuffers(p)
      .FillRaw(kDataMap, 4096, {9, 0, 0, 0})
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, 0}, Addr{kData, 4096},
               Addr{kData, 9008}, kDtypeF32, Dim{8}, Dim{2}, Dim{1})
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 256, 1)
      .Command(LNPU_OP_NOP, 0)
      .Submit(DRM_LNPU_ENGINE_DMA, kCmdHandle, {}, {0})
      .Wait(2, 0, 50000);
  return p.Take();
}

// Panel operands (LNPU_DTYPE_Q8_0_P16 since 1.4, _Q4_0_P16 since 1.5, the
// _P16S forms since 1.7, B
// bytes per block and row: 34 or 18) SUBMIT rejects (EINVAL), each in a
// job of its own: a MATMUL weight and a GATHER_ROWS table 32 bytes past
// the 64-byte alignment; a weight one panel short of the data buffer's end
// (n = 32 with k = 32: 32B bytes, 16B + 32 left); a weight and a table of
// 17 rows whose plain rows (17B bytes) would fit in the 32B - 64 bytes
// left but whose whole panels (32B) do not; k not a multiple of 32. Then a
// weight ending exactly at the buffer's end, which runs.
std::vector<uint8_t> PanelRejections(WideDtype dtype, uint32_t block_bytes) {
  constexpr uint32_t kEnd = 32768;  // the data buffer's size
  const uint32_t panels = 32 * block_bytes;  // 2 panels of one block
  ProgramWriter p;
  SetUpBuffers(p)
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 32}, Addr{-1},
               Addr{kData, 12288}, Dim{2}, Dim{32}, Dim{4}, dtype)
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, 32}, Addr{kData, 4096},
               Addr{kData, 12288}, dtype, Dim{32}, Dim{8}, Dim{8})
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0},
               Addr{kData, kEnd - (16 * block_bytes + 32)}, Addr{-1},
               Addr{kData, 12288}, Dim{2}, Dim{32}, Dim{32}, dtype)
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, kEnd - (panels - 64)},
               Addr{-1}, Addr{kData, 12288}, Dim{2}, Dim{32}, Dim{17}, dtype)
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, kEnd - (panels - 64)},
               Addr{kData, 4096}, Addr{kData, 12288}, dtype, Dim{32}, Dim{17}, Dim{8})
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 2048},
               Addr{-1}, Addr{kData, 12288}, Dim{2}, Dim{48}, Dim{4}, dtype)
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 0, 1)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, kEnd - panels},
               Addr{-1}, Addr{kData, 12288}, Dim{2}, Dim{32}, Dim{32}, dtype)
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// Parameters, VERSION, unknown and null-argument ioctls, unknown handles
// and fences.
std::vector<uint8_t> ParamsAndErrors() {
  ProgramWriter p;
  for (uint8_t param = 0; param < DRM_LNPU_PARAM_COUNT + 2; ++param) {
    p.GetParam(param);
  }
  p.Version(255, 0).Version(2, 0).Version(16, 7);
  for (uint8_t i = 0; i < 7; ++i) p.NullArgument(i);
  p.UnknownIoctl(0xC0106450)  // DRM type, number 0x50: type changed
      .UnknownIoctl(0x12345678)
      .BoInfo(0xF9)
      .GemClose(0xFA)
      .WaitRaw({1, 0xF3, 0, 3, 0, 0, 0});
  return p.Take();
}

// USERPTR imports (writable, read-only, inaccessible, misaligned), a DMA
// job reading an import, and buffers of the other file.
std::vector<uint8_t> UserptrAndFiles() {
  ProgramWriter p;
  p.BoCreate(1, 0, DRM_LNPU_BO_CMDBUF)  // record 0
      .BoCreate(1, 0, 0)                // record 1: plain data
      .BoCreate(1, 0, DRM_LNPU_BO_USERPTR, 1)
      .BoCreate(1, 1, DRM_LNPU_BO_USERPTR | DRM_LNPU_BO_READ_ONLY, 2)
      .BoCreate(1, 0, DRM_LNPU_BO_USERPTR, 2)  // writable read-only memory
      .BoCreate(1, 0, DRM_LNPU_BO_USERPTR, 3)  // inaccessible memory
      .BoCreate(1, 0, DRM_LNPU_BO_USERPTR, 4)  // misaligned
      .BoCreate(1, 0, DRM_LNPU_BO_USERPTR, 0)  // null
      .BoCreate(0, 100, 0, 1)                  // user_ptr without USERPTR
      .Fill(0, 0, 1, 4096)  // no mapping yet: the user memory
      .MmapWhole(0)
      .WriteCommands(0, 0, 2)
      .Command(LNPU_OP_COPY, 0, Addr{2, 0}, Addr{1, 0}, Bytes{512})
      .Command(LNPU_OP_COPY, 0, Addr{1, 0}, Addr{2, 2048}, Bytes{512})
      .Submit(DRM_LNPU_ENGINE_DMA, 0, {1, 2})
      .Wait(1, 0, 50000)
      .SwitchFile()
      .BoCreate(1, 0, 0)
      .BoInfo(0xF0)  // a handle of the first file
      .SwitchFile()
      .ReopenFile()
      .BoInfo(0);
  return p.Take();
}

// A mapping keeps its buffer alive after GEM_CLOSE; munmap of a
// non-mapping; a file closed while its job is queued.
std::vector<uint8_t> MappingLifetime() {
  ProgramWriter p;
  SetUpBuffers(p)
      .GemClose(kDataHandle)
      .Fill(kDataMap, 0, 2, 4096)
      .BoInfo(kDataHandle)
      .Munmap(0)
      .Munmap(0xF1)
      .WriteCommands(0, 0, 2)  // the command mapping is now the first
      .Command(LNPU_OP_NOP, 0)
      .Command(LNPU_OP_NOP, 0)
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {})
      .ReopenFile();
  return p.Take();
}

// Requests that encode older (smaller) and newer (larger) structs.
std::vector<uint8_t> AbiSizes() {
  ProgramWriter p;
  p.GetParam(DRM_LNPU_PARAM_UAPI_VERSION, 0xF1)
      .GetParam(DRM_LNPU_PARAM_MEMORY_SIZE, 0xF8)
      .GetParam(DRM_LNPU_PARAM_MEMORY_SIZE, 0xFF)
      .BoCreate(1, 0, DRM_LNPU_BO_CMDBUF, 0, 0xF0)  // the 1.0 struct
      .BoCreate(1, 0, 0, 0, 0xF9)
      .BoInfo(0, 0xF8)
      .MmapWhole(0)
      .WriteCommands(0, 0, 1)
      .Command(LNPU_OP_NOP, 0)
      .Submit(DRM_LNPU_ENGINE_COMPUTE, 0, {}, {}, 0xFA)
      .Wait(1, 0, 50000, 0xF8);
  return p.Take();
}


// One seed per opcode: each of its flags, dtypes and modes on valid
// operands, in one job per engine that runs it, all completing. Inputs are
// read from the F32 ramp at [0, 4096), indices/positions from 4096, the
// mask from 7168; each command writes its own 1 KiB at Out(i).
constexpr uint32_t Out(uint32_t i) { return 8192 + 1024 * i; }

// Data and command buffers, a mask with slots 0, 1 and 3 visible.
ProgramWriter& SetUpOpcodeSeed(ProgramWriter& p) {
  return SetUpBuffers(p).FillRaw(kDataMap, 7168, {1, 1, 0, 1});
}

std::vector<uint8_t> OpNop() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 2)
      .Command(LNPU_OP_NOP, 0)
      .Command(LNPU_OP_NOP, 0)
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 512, 1)
      .Command(LNPU_OP_NOP, 0)
      .Submit(DRM_LNPU_ENGINE_DMA, kCmdHandle, {kDataHandle})
      .Wait(2, 0, 50000);
  return p.Take();
}

// F32 and F16 tables; Q8_0_P16 tables of one whole panel and of a partial
// last panel (20 rows of 64: 2 panels, 2176 bytes).
std::vector<uint8_t> OpGatherRows() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 4)
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, 0}, Addr{kData, 4096},
               Addr{kData, Out(0)}, kDtypeF32, Dim{8}, Dim{8}, Dim{4})
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, 0}, Addr{kData, 4096},
               Addr{kData, Out(1)}, kDtypeF16, Dim{8}, Dim{8}, Dim{16})
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, 0}, Addr{kData, 4096},
               Addr{kData, Out(2)}, kDtypeQ8_0P16, Dim{32}, Dim{8}, Dim{8})
      .Command(LNPU_OP_GATHER_ROWS, 0, Addr{kData, 0}, Addr{kData, 4096},
               Addr{kData, Out(3)}, kDtypeQ8_0P16, Dim{64}, Dim{20}, Dim{4})
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

std::vector<uint8_t> OpRmsNorm() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 3)
      .Command(LNPU_OP_RMS_NORM, 0, Addr{kData, 0}, Addr{kData, 256},
               Addr{kData, Out(0)}, Dim{2}, Dim{8}, kF32Eps, kZero)
      .Command(LNPU_OP_RMS_NORM, 0, Addr{kData, 0}, Addr{kData, 256},
               Addr{kData, Out(1)}, Dim{1}, Dim{64}, kF32One, kZero)
      // In place.
      .Command(LNPU_OP_RMS_NORM, 0, Addr{kData, Out(0)}, Addr{kData, 256},
               Addr{kData, Out(0)}, Dim{2}, Dim{8}, kF32Eps, kZero)
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// F32, F16, Q8_0, Q4_0 and Q8_0_P16 weights; plain, accumulating, with a
// bias, both. The second Q8_0_P16 weight (n = 20 of k = 64) ends in a
// partial panel.
std::vector<uint8_t> OpMatmul() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 9)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 1024},
               Addr{-1}, Addr{kData, Out(0)}, Dim{2}, Dim{8}, Dim{8},
               kDtypeF32)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 1024},
               Addr{-1}, Addr{kData, Out(1)}, Dim{2}, Dim{8}, Dim{8},
               kDtypeF16)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 2048},
               Addr{-1}, Addr{kData, Out(2)}, Dim{2}, Dim{32}, Dim{4},
               kDtypeQ8_0)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 2048},
               Addr{-1}, Addr{kData, Out(3)}, Dim{2}, Dim{32}, Dim{4},
               kDtypeQ4_0)
      .Command(LNPU_OP_MATMUL, LNPU_MATMUL_ACCUMULATE, Addr{kData, 0},
               Addr{kData, 1024}, Addr{-1}, Addr{kData, Out(0)}, Dim{2},
               Dim{8}, Dim{8}, kDtypeF32)
      .Command(LNPU_OP_MATMUL, LNPU_MATMUL_BIAS, Addr{kData, 0},
               Addr{kData, 2048}, Addr{kData, 3072}, Addr{kData, Out(4)},
               Dim{2}, Dim{32}, Dim{4}, kDtypeQ8_0)
      .Command(LNPU_OP_MATMUL, LNPU_MATMUL_ACCUMULATE | LNPU_MATMUL_BIAS,
               Addr{kData, 0}, Addr{kData, 1024}, Addr{kData, 3072},
               Addr{kData, Out(1)}, Dim{2}, Dim{8}, Dim{8}, kDtypeF16)
      .Command(LNPU_OP_MATMUL, 0, Addr{kData, 0}, Addr{kData, 2048},
               Addr{-1}, Addr{kData, Out(5)}, Dim{2}, Dim{32}, Dim{4},
               kDtypeQ8_0P16)
      .Command(LNPU_OP_MATMUL, LNPU_MATMUL_ACCUMULATE | LNPU_MATMUL_BIAS,
               Addr{kData, 0}, Addr{kData, 0}, Addr{kData, 3072},
               Addr{kData, Out(6)}, Dim{3}, Dim{64}, Dim{20}, kDtypeQ8_0P16)
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// NORM and NEOX, partial rotation, Llama 3 frequency factors, in place.
std::vector<uint8_t> OpRope() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 4)
      .Command(LNPU_OP_ROPE, 0, Addr{kData, 0}, Addr{kData, Out(0)},
               Addr{kData, 4096}, Dim{2}, Dim{2}, Dim{8}, Dim{8},
               kF32TenThousand, kF32One, kRopeNorm, kZero, Addr{-1})
      .Command(LNPU_OP_ROPE, 0, Addr{kData, 0}, Addr{kData, Out(1)},
               Addr{kData, 4096}, Dim{2}, Dim{2}, Dim{8}, Dim{4},
               kF32TenThousand, kF32Half, kRopeNeox, kZero, Addr{-1})
      .Command(LNPU_OP_ROPE, LNPU_ROPE_FREQ_FACTORS, Addr{kData, 0},
               Addr{kData, Out(2)}, Addr{kData, 4096}, Dim{2}, Dim{2},
               Dim{8}, Dim{8}, kF32TenThousand, kF32One, kRopeNorm, kZero,
               Addr{kData, 3104})  // ramp values 1, 1.25, 1.5, 1.75
      .Command(LNPU_OP_ROPE, 0, Addr{kData, Out(0)}, Addr{kData, Out(0)},
               Addr{kData, 4096}, Dim{2}, Dim{2}, Dim{8}, Dim{8},
               kF32TenThousand, kF32One, kRopeNeox, kZero, Addr{-1})
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// KV caches of F32, F16 and I8 (groups of head_dim 4: 8 bytes a group),
// multi-head and grouped-query, three of four slots visible.
std::vector<uint8_t> OpAttention() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 4)
      .Command(LNPU_OP_ATTENTION, 0, Addr{kData, 0}, Addr{kData, 256},
               Addr{kData, 512}, Addr{kData, 1024}, Addr{kData, 2048},
               Addr{kData, 7168}, Addr{kData, Out(0)}, Dim{2}, Dim{4},
               Dim{2}, Dim{1}, Dim{4}, kDtypeF32, kF32Half, kF32Zero, Addr{-1}, Addr{-1}, Dim{0}, kZero)
      .Command(LNPU_OP_ATTENTION, 0, Addr{kData, 0}, Addr{kData, 256},
               Addr{kData, 512}, Addr{kData, 1024}, Addr{kData, 2048},
               Addr{kData, 7168}, Addr{kData, Out(1)}, Dim{2}, Dim{4},
               Dim{2}, Dim{2}, Dim{4}, kDtypeF16, kF32Half, kF32Zero, Addr{-1}, Addr{-1}, Dim{0}, kZero)
      .Command(LNPU_OP_ATTENTION, 0, Addr{kData, 0}, Addr{kData, 256},
               Addr{kData, 512}, Addr{kData, 1024}, Addr{kData, 2048},
               Addr{kData, 7168}, Addr{kData, Out(2)}, Dim{2}, Dim{4},
               Dim{4}, Dim{2}, Dim{4}, WideDtype{LNPU_DTYPE_I8}, kF32Half,
               kF32Zero, Addr{-1}, Addr{-1}, Dim{0}, kZero)
      // Since 1.3: a soft cap of 1 and a sliding window of 2 positions
      // (positions and slot positions: the integers at 4096).
      .Command(LNPU_OP_ATTENTION, LNPU_ATTENTION_WINDOW, Addr{kData, 0},
               Addr{kData, 256}, Addr{kData, 512}, Addr{kData, 1024},
               Addr{kData, 2048}, Addr{kData, 7168}, Addr{kData, Out(3)}, Dim{2},
               Dim{4}, Dim{2}, Dim{1}, Dim{4}, kDtypeF32, kF32Half, kF32One,
               Addr{kData, 4096}, Addr{kData, 4096}, Dim{2}, kZero)
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// `opcode` (SWIGLU, GEGLU or ADD) on separate operands and in place.
std::vector<uint8_t> OpElementwise(uint8_t opcode) {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 2)
      .Command(opcode, 0, Addr{kData, 0}, Addr{kData, 256},
               Addr{kData, Out(0)}, Dim{64}, kZero)
      .Command(opcode, 0, Addr{kData, Out(0)}, Addr{kData, 512},
               Addr{kData, Out(0)}, Dim{1}, kZero)
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// Since 1.3: SCALE without and with a soft cap, in place.
std::vector<uint8_t> OpScale() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 2)
      .Command(LNPU_OP_SCALE, 0, Addr{kData, 0}, Addr{kData, Out(0)}, Dim{64},
               kF32Half, kF32Zero, kZero)
      .Command(LNPU_OP_SCALE, 0, Addr{kData, Out(0)}, Addr{kData, Out(0)}, Dim{64},
               kF32TenThousand, kF32One, kZero)
      .SubmitAndWait(DRM_LNPU_ENGINE_COMPUTE);
  return p.Take();
}

// Both engines; overlapping ranges (memmove).
std::vector<uint8_t> OpCopy() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .WriteCommands(kCmdMap, 0, 2)
      .Command(LNPU_OP_COPY, 0, Addr{kData, 0}, Addr{kData, Out(0)},
               Bytes{512})
      .Command(LNPU_OP_COPY, 0, Addr{kData, Out(0)},
               Addr{kData, Out(0) + 4}, Bytes{256})
      .Submit(DRM_LNPU_ENGINE_COMPUTE, kCmdHandle, {kDataHandle})
      .WriteCommands(kCmdMap, 512, 2)
      .Command(LNPU_OP_COPY, 0, Addr{kData, 0}, Addr{kData, Out(1)},
               Bytes{4})
      .Command(LNPU_OP_COPY, 0, Addr{kData, Out(1) + 8},
               Addr{kData, Out(1)}, Bytes{256})
      .Submit(DRM_LNPU_ENGINE_DMA, kCmdHandle, {kDataHandle})
      .Wait(2, 0, 50000);
  return p.Take();
}

// Plain, F32 -> F16 and F32 -> I8 rows over two blocks, a skipped row
// (negative index).
std::vector<uint8_t> OpScatterRows() {
  ProgramWriter p;
  SetUpOpcodeSeed(p)
      .FillRaw(kDataMap, 4160, {1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 3, 0, 0, 0})
      .WriteCommands(kCmdMap, 0, 4)
      .Command(LNPU_OP_SCATTER_ROWS, 0, Addr{kData, 0}, Addr{kData, Out(0)},
               Addr{kData, 4096}, Bytes{0}, Bytes{0}, Dim{32}, Dim{2},
               Dim{1}, Dim{8}, Dim{0}, kZero)
      .Command(LNPU_OP_SCATTER_ROWS, 0, Addr{kData, 0}, Addr{kData, Out(1)},
               Addr{kData, 4160}, Bytes{256}, Bytes{512}, Dim{16}, Dim{3},
               Dim{2}, Dim{8}, Dim{0}, kZero)
      .Command(LNPU_OP_SCATTER_ROWS, LNPU_SCATTER_F32_TO_F16, Addr{kData, 0},
               Addr{kData, Out(2)}, Addr{kData, 4160}, Bytes{256},
               Bytes{256}, Dim{16}, Dim{3}, Dim{2}, Dim{8}, Dim{0}, kZero)
      .Command(LNPU_OP_SCATTER_ROWS, LNPU_SCATTER_F32_TO_I8, Addr{kData, 0},
               Addr{kData, Out(3)}, Addr{kData, 4160}, Bytes{256},
               Bytes{256}, Dim{32}, Dim{3}, Dim{2}, Dim{8}, Dim{4}, kZero)
      .SubmitAndWait(DRM_LNPU_ENGINE_DMA);
  return p.Take();
}

}  // namespace

std::vector<OpcodeSeed> OpcodeSeeds() {
  std::vector<OpcodeSeed> seeds = {
      {LNPU_OP_NOP, "op_nop", OpNop},
      {LNPU_OP_GATHER_ROWS, "op_gather_rows", OpGatherRows},
      {LNPU_OP_RMS_NORM, "op_rms_norm", OpRmsNorm},
      {LNPU_OP_MATMUL, "op_matmul", OpMatmul},
      {LNPU_OP_ROPE, "op_rope", OpRope},
      {LNPU_OP_ATTENTION, "op_attention", OpAttention},
      {LNPU_OP_SWIGLU, "op_swiglu", [] { return OpElementwise(LNPU_OP_SWIGLU); }},
      {LNPU_OP_ADD, "op_add", [] { return OpElementwise(LNPU_OP_ADD); }},
      {LNPU_OP_COPY, "op_copy", OpCopy},
      {LNPU_OP_SCATTER_ROWS, "op_scatter_rows", OpScatterRows},
      {LNPU_OP_GEGLU, "op_geglu", [] { return OpElementwise(LNPU_OP_GEGLU); }},
      {LNPU_OP_SCALE, "op_scale", OpScale},
  };
  static_assert(LNPU_OP_COUNT == 12, "new opcode: add its seed");
  return seeds;
}

std::vector<Seed> SeedCorpus() {
  std::vector<Seed> seeds;
  seeds.push_back({"abi_sizes", AbiSizes()});
  seeds.push_back({"compute_chain", ComputeChain()});
  seeds.push_back({"dma_chain", DmaChain()});
  seeds.push_back({"faults", Faults()});
  seeds.push_back({"mapping_lifetime", MappingLifetime()});
  seeds.push_back({"params_and_errors", ParamsAndErrors()});
  seeds.push_back({"q8_0_p16_rejections", PanelRejections(kDtypeQ8_0P16, 34)});
  seeds.push_back({"q4_0_p16_rejections", PanelRejections(kDtypeQ4_0P16, 18)});
  seeds.push_back({"q8_0_p16s_rejections", PanelRejections(kDtypeQ8_0P16S, 34)});
  seeds.push_back({"q4_0_p16s_rejections", PanelRejections(kDtypeQ4_0P16S, 18)});
  seeds.push_back({"userptr_and_files", UserptrAndFiles()});
  for (const OpcodeSeed& op : OpcodeSeeds()) {
    seeds.push_back({op.name, op.program()});
  }
  return seeds;
}

}  // namespace lnpu::fuzz
