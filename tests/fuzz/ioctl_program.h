// Ioctl programs: how fuzz input bytes drive the software NPU.
//
// An input is a sequence of operations, each introduced by one byte (the
// Op, modulo Op::kCount) followed by its fields. RunIoctlProgram() decodes
// and performs them, one at a time, on a fresh small device
// (FuzzDeviceOptions()) with two open files, then closes everything. Every
// field is decoded so that most byte values give a meaningful value (a live
// handle, an address inside a live buffer, a small dimension) and a few
// "escape" values give an arbitrary one; the encodings are below, and
// tests/fuzz/seed_corpus.cc writes them.
//
// Field encodings (all integers little-endian; see FuzzInput):
//   handle   u8 s: s < 0xF0: the (s % n)-th buffer this file created
//            (closed ones included); 0xF0..0xF7 a buffer of the other file;
//            0xF8..0xFE the value s - 0xF8 (0 and tiny made-up handles);
//            0xFF then u32: that value.
//   fence    u8 s: s < 0xF0: the (s % n)-th most recent fence of this file;
//            0xF0..0xFE: a fence not issued yet (next + s - 0xF0);
//            0xFF then u64: that value.
//   count    u8 c: c < 0xF0: c % (limit + 1); 0xF0..0xFD: limit + c - 0xF0
//            (past the limit); 0xFE then u8: that count with a null array
//            pointer; 0xFF then u32: that count.
//   pad      u8 b: 0 unless b == 0xFF, then u32: that value.
//   abi      u8 b: b < 0xF0: the ioctl as defined; 0xF0..0xF7: the request
//            encodes a struct 8 * (b - 0xEF) bytes smaller (older user
//            space); 0xF8..0xFF: 8 * (b - 0xF7) bytes larger with zero
//            tail, non-zero tail for 0xFF (newer user space).
//   dim      u8 b: b < 0xF0: b; 0xF0..0xFE: 256 << (b - 0xF0); 0xFF then
//            u32.
//   bytes    u8 b: b < 0xF0: 4 * b; 0xF0..0xFE: 4096 * (b - 0xEF); 0xFF
//            then u64.
//   addr     u8 b then u16 o: b < 0xE0: device address of the (b % n)-th
//            buffer of this file plus (4 * o) % (size + 64); 0xE0..0xEF:
//            that address of buffer (b % n) plus 1 (misaligned); 0xF0..0xFE:
//            0; 0xFF then u64: that value. Without buffers: 0.
//   dtype    u8 b: b < 0xF0: b % 6; else u32.
//   f32      u8 b: b < 0xF0: one of 1e-5, 1, 1e4, 0, -1, 0.5, NaN, +inf;
//            else u32 bit pattern.
//
// Thread-safety: RunIoctlProgram may run on several threads at once.
#ifndef TESTS_FUZZ_IOCTL_PROGRAM_H_
#define TESTS_FUZZ_IOCTL_PROGRAM_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "kernel_iface/softnpu/soft_npu.h"

namespace lnpu::fuzz {

// The first byte of each operation, modulo kCount.
enum class Op : uint8_t {
  // param: u8 (b < 0xF0: b % (DRM_LNPU_PARAM_COUNT + 2), else u32), pad, abi.
  kGetParam = 0,
  // size: u8 mode, u64 v (mode % 4: 0 -> v % 65536 + 1, 1 -> 4096 * (v % 16
  // + 1), 2 -> v, 3 -> 0); flags: u8 (b < 0xF0: b & 7, else u32);
  // user_ptr: u8 (% 5: 0 none, 1 writable user memory at page v % 16,
  // 2 read-only user memory, 3 inaccessible memory, 4 misaligned; an
  // import's size is cut to end at the end of the user memory); abi.
  kBoCreate = 1,
  kBoInfo = 2,    // handle, abi
  kGemClose = 3,  // handle, pad
  // handle; offset u8 (% 3: 0 its mmap offset, 1 u64 value, 2 its offset +
  // 4096); length u8 + u32 v (% 3: 0 whole buffer, 1 v % size + 1, 2 v).
  kMmap = 4,
  // u8 s: s < 0xF0: unmap the (s % n)-th live mapping; else an address or
  // length that is not a mapping.
  kMunmap = 5,
  // target u8 (s % (mappings + 1); the last is the writable user memory),
  // u16 offset, u8 kind (% 4: 0 raw bytes from the input, 1 F32 values
  // (i % 16) * 0.25 - 1, 2 I32 values i % 8, 3 zeros), u16 length.
  // Waits for all jobs first, so no job races the write.
  kFill = 6,
  // target as kFill, u16 offset (rounded down to 8), u8 count (% 16 + 1),
  // then each command: u8 opcode (b < 0xF0: b % LNPU_OP_COUNT, else u16),
  // u8 header flags (b < 0xF0: b & 3, else u16), u8 size (0xFF then u32:
  // that size; else the opcode's struct size), then its fields in struct
  // order (addr, dim, dtype, bytes, f32, pad or u8 mode per field).
  // Remembers where the stream went, for kSubmit.
  kWriteCommands = 7,
  // engine u8 (b < 0xF0: b % 2, else u32); cmd handle; stream u8 (% 3:
  // 0 the last stream written into that buffer, 1 u16 offset * 8 and u16
  // size * 8, 2 u32 offset and u32 size); bo count (limit MAX_JOB_BOS)
  // and that many handles (at most 16 decoded, the rest repeat them);
  // in-fence count (limit MAX_IN_FENCES) and fences (at most 8 decoded);
  // flags pad; pad; abi.
  kSubmit = 8,
  // fence count (limit MAX_IN_FENCES; at most 8 decoded) and fences; flags
  // u8 (b < 0xF0: b & 1, else u32); deadline u8 m + u16 v (% 4: 0 in the
  // past, 1 zero, 2 negative, 3 now + 2 us * v); abi.
  kWait = 9,
  // name, date, desc buffer lengths (u8 each), u8 null-buffer mask.
  kVersion = 10,
  // u8 form: 0xFF then u8 i: known ioctl i % 7 with a null argument;
  // else u32 request, made a non-DRM ioctl number (its type byte is
  // changed if it is DRM's).
  kBadIoctl = 11,
  kSwitchFile = 12,  // later operations use the other open file
  kReopenFile = 13,  // closes this file (jobs may still run) and opens anew
  kCount = 14,
};

// The device every program runs on: 64 KiB of device memory (so that no
// command can take long), a 20 ms job timeout and two compute threads.
softnpu::SoftNpuOptions FuzzDeviceOptions();

struct ProgramReport {
  uint64_t operations = 0;
  uint64_t ioctls = 0;           // every Ioctl/Mmap/Munmap call made
  uint64_t jobs_submitted = 0;   // SUBMITs that returned 0
  uint64_t jobs_completed = 0;   // waited jobs with job_error 0
  uint64_t jobs_failed = 0;      // waited jobs with job_error != 0
  // Empty, or the first broken contract of the UAPI that was observed (an
  // errno the ioctl may not return, an inconsistent result, a hang).
  std::string violation;
};

// Decodes and runs `input` (see above) on a device made with
// `device_options` (FuzzDeviceOptions() unless given). Never crashes on any
// input; returns what happened.
ProgramReport RunIoctlProgram(absl::Span<const uint8_t> input);
ProgramReport RunIoctlProgram(absl::Span<const uint8_t> input,
                              const softnpu::SoftNpuOptions& device_options);

}  // namespace lnpu::fuzz

#endif  // TESTS_FUZZ_IOCTL_PROGRAM_H_
