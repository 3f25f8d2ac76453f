// How the x86 GEMV loops of decode walk memory on this CPU class: how many
// column chunks a GEMV loop hands out per thread, and how the panel GEMVs
// (Q8_0 and Q4_0 weights in the *_P16 and *_P16S layouts) read a chunk:
// how many panel streams one call of 1-2 activation rows reads together,
// and how far ahead of its loads a call of any row count prefetches. The
// best walk differs between CPU classes by a third of the decode speed
// (docs/performance.md, "GEMV walk on AMD EPYC (Zen 4)"), so it is chosen
// per CPU, with an environment override for measuring and porting. The
// walk changes no result: each column's sums are the same in any order
// and any chunk. x86-64 builds only.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_X86_GEMV_WALK_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_X86_GEMV_WALK_H_

#include <cstddef>
#include <string_view>

#include "absl/status/statusor.h"
#include "kernel_iface/softnpu/compute/x86_cpu_features.h"

namespace lnpu::softnpu::compute {

struct X86GemvWalk {
  // Panel streams per GEMV call of 1-2 rows, at most: 1, 2 or 4 (the
  // kernel may use fewer: 2 for two rows of Q8_0). Each stream is its own
  // run of whole panels, far from the others.
  size_t streams = 4;
  // How far ahead of each load a stream prefetches (prefetcht0), for
  // every row count: 64 .. 16384 bytes, a multiple of 64; at most the next
  // panel's start.
  size_t prefetch_bytes = 2048;
  // Column chunks per thread of a GEMV loop on CPUs of one kind, 1 .. 16
  // (matmul.cc; mixed cores always take 4: cpu_kinds.h). Each chunk is one
  // GEMV call, its streams starting cold; more chunks even out the
  // threads' finishing times.
  size_t chunks_per_thread = 1;

  friend bool operator==(const X86GemvWalk&, const X86GemvWalk&) = default;
};

// The walk measured best for a CPU class: AMD Zen 4 (family 0x19, its
// models) 1 stream prefetched 256 bytes ahead in 2 chunks per thread,
// since its hardware prefetchers follow one stream and lose to far
// software prefetches, and a one-stream call starts cheaply; AMD Zen 3
// (family 0x19, the other models) 2 streams prefetched 1 KiB ahead in 2
// chunks per thread; every other CPU 4 streams prefetched 2 KiB ahead in
// 1 chunk per thread (measured best on Intel Sapphire Rapids-class and
// AMD Zen 5 VMs).
X86GemvWalk X86GemvWalkFor(const X86CpuFeatures& cpu);

// Environment variable: "STREAMS:PREFETCH_BYTES:CHUNKS_PER_THREAD", e.g.
// "1:256:4", replacing the CPU's walk. Read once, with the first call of
// GetX86GemvWalk; a malformed value is ignored with a line on stderr.
inline constexpr char kX86GemvWalkVariable[] = "LNPU_GEMV_WALK";

// "STREAMS:PREFETCH_BYTES:CHUNKS_PER_THREAD" with the ranges of
// X86GemvWalk, or InvalidArgument naming what is wrong.
absl::StatusOr<X86GemvWalk> ParseX86GemvWalk(std::string_view text);

// This process's walk: kX86GemvWalkVariable's when set and valid, else
// X86GemvWalkFor(GetX86CpuFeatures()). Computed once, thread-safe.
const X86GemvWalk& GetX86GemvWalk();

// The most weight bytes a panel GEMV step (its streams together) may read
// between two reads of one activation line and still find that line in
// L1: half this CPU's L1 data cache (sysconf; 32 KiB where unknown).
// Steps that read more prefetch their activation rows ahead
// (quant_matmul_x86-inl.h). Computed once, thread-safe.
size_t ActivationReuseLimitBytes();

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_X86_GEMV_WALK_H_
