// The x86 instruction-set features the quantized-matmul paths need, read
// with CPUID and XGETBV so that a feature counts only when the OS also
// saves its register state. One implementation for g++ and clang (clang
// 14's __builtin_cpu_supports knows neither "f16c" nor "avxvnni").
// x86-64 builds only.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_X86_CPU_FEATURES_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_X86_CPU_FEATURES_H_

namespace lnpu::softnpu::compute {

enum class X86Vendor { kOther, kIntel, kAmd };

struct X86CpuFeatures {
  // Who made the CPU and its display family and model (CPUID leaf 1, the
  // extended fields folded in): AMD family 0x19 is Zen 3 and Zen 4, 0x1A
  // Zen 5. Kernels tune their memory access by them (x86_gemv_walk.h).
  X86Vendor vendor = X86Vendor::kOther;
  unsigned family = 0;
  unsigned model = 0;
  bool avx2 = false;      // with FMA and F16C, and the OS saving YMM state
  bool avx_vnni = false;  // AVX-VNNI (256-bit vpdpbusd), implies avx2
  // AVX-512 F/BW/DQ/VL with the OS saving the opmask and ZMM state;
  // implies avx2.
  bool avx512 = false;
  bool avx512_vnni = false;  // implies avx512
  // AMX-TILE and AMX-INT8 reported by CPUID (the OS permission is asked
  // separately, arch_prctl(ARCH_REQ_XCOMP_PERM)).
  bool amx_int8 = false;
};

// Environment variable: a comma-separated list of features to treat as
// absent ("amx", "avx512vnni", "avx512", "avxvnni", "avx2"; a feature's
// absence also removes those that imply it), so that the kernels of
// another CPU class run here, e.g. "amx" for an AMD Zen 4, "avx512" for an
// AVX2-only CPU (Highway's AVX-512 targets are disabled with it). An
// unknown name is ignored with a line on stderr. Read once, with the first
// call below, which ComputeContext makes before any kernel runs.
inline constexpr char kX86FeaturesOffVariable[] = "LNPU_X86_FEATURES_OFF";

// This CPU's features, less those turned off by kX86FeaturesOffVariable;
// computed once, thread-safe, valid during static initialization.
const X86CpuFeatures& GetX86CpuFeatures();

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_X86_CPU_FEATURES_H_
