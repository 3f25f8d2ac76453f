#include "kernel_iface/softnpu/compute/x86_cpu_features.h"

#include <cpuid.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "hwy/targets.h"

namespace lnpu::softnpu::compute {
namespace {

bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

// XCR0, the register state the OS saves; 0 without OSXSAVE.
uint64_t ReadXcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

// CPUID leaf 0's vendor string (EBX, EDX, ECX).
X86Vendor DetectVendor() {
  unsigned max_leaf = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &max_leaf, &ebx, &ecx, &edx)) return X86Vendor::kOther;
  char name[12];
  std::memcpy(name, &ebx, 4);
  std::memcpy(name + 4, &edx, 4);
  std::memcpy(name + 8, &ecx, 4);
  const std::string_view vendor(name, sizeof(name));
  if (vendor == "GenuineIntel") return X86Vendor::kIntel;
  if (vendor == "AuthenticAMD") return X86Vendor::kAmd;
  return X86Vendor::kOther;
}

X86CpuFeatures Detect() {
  X86CpuFeatures f;
  f.vendor = DetectVendor();
  unsigned eax = 0, ebx = 0, ecx1 = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx1, &edx)) return f;
  const unsigned base_family = (eax >> 8) & 0xF;
  f.family = base_family == 0xF ? base_family + ((eax >> 20) & 0xFF) : base_family;
  f.model = (eax >> 4) & 0xF;
  if (base_family == 0x6 || base_family == 0xF) f.model |= ((eax >> 16) & 0xF) << 4;
  const bool fma = Bit(ecx1, 12), osxsave = Bit(ecx1, 27), f16c = Bit(ecx1, 29);
  if (!osxsave) return f;
  const uint64_t xcr0 = ReadXcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;             // SSE and AVX state
  const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM
  unsigned ebx7 = 0, ecx7 = 0, edx7 = 0, eax71 = 0, unused = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx7, &ecx7, &edx7)) return f;
  __get_cpuid_count(7, 1, &eax71, &unused, &unused, &unused);
  f.avx2 = os_ymm && fma && f16c && Bit(ebx7, 5);
  f.avx_vnni = f.avx2 && Bit(eax71, 4);
  f.avx512 = f.avx2 && os_zmm && Bit(ebx7, 16) && Bit(ebx7, 17) &&
             Bit(ebx7, 30) && Bit(ebx7, 31);  // F, DQ, BW, VL
  f.avx512_vnni = f.avx512 && Bit(ecx7, 11);
  f.amx_int8 = Bit(edx7, 24) && Bit(edx7, 25);  // AMX-TILE, AMX-INT8
  return f;
}

// `f` without the features named in `off` (kFeaturesOffVariable), and
// without those that imply them.
X86CpuFeatures TurnOff(X86CpuFeatures f, std::string_view off) {
  while (!off.empty()) {
    const size_t comma = off.find(',');
    const std::string_view name = off.substr(0, comma);
    off = comma == std::string_view::npos ? std::string_view() : off.substr(comma + 1);
    if (name == "amx") {
      f.amx_int8 = false;
    } else if (name == "avx512vnni") {
      f.avx512_vnni = false;
    } else if (name == "avx512") {
      f.avx512 = f.avx512_vnni = false;
    } else if (name == "avxvnni") {
      f.avx_vnni = false;
    } else if (name == "avx2") {
      f = X86CpuFeatures{.vendor = f.vendor, .family = f.family, .model = f.model};
    } else if (!name.empty()) {
      std::fprintf(stderr,
                   "lnpu: %s: unknown feature \"%.*s\" ignored (known: amx, avx512vnni, "
                   "avx512, avxvnni, avx2)\n",
                   kX86FeaturesOffVariable, static_cast<int>(name.size()), name.data());
    }
  }
  return f;
}

}  // namespace

const X86CpuFeatures& GetX86CpuFeatures() {
  static const X86CpuFeatures features = [] {
    const char* off = std::getenv(kX86FeaturesOffVariable);
    const X86CpuFeatures f = TurnOff(Detect(), off == nullptr ? "" : off);
    // Highway's dispatch (the F32/F16 and element-wise kernels) follows.
    if (!f.avx512) hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL);
    if (!f.avx2) hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL | HWY_AVX2);
    return f;
  }();
  return features;
}

}  // namespace lnpu::softnpu::compute
