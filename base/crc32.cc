#include "base/crc32.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

namespace lnpu {
namespace {

constexpr std::array<uint32_t, 256> MakeTable(uint32_t polynomial) {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? polynomial ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrc32Table = MakeTable(0xEDB88320u);
constexpr std::array<uint32_t, 256> kCrc32cTable = MakeTable(0x82F63B78u);

uint32_t TableCrc(const std::array<uint32_t, 256>& table, absl::Span<const uint8_t> bytes,
                  uint32_t crc) {
  uint32_t c = ~crc;
  for (uint8_t b : bytes) c = table[(c ^ b) & 0xFFu] ^ (c >> 8);
  return ~c;
}

// One hardware loop per architecture: the same shape, but the intrinsics and
// the target attribute that enables them differ.
#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareCrc32c(absl::Span<const uint8_t> bytes,
                                                          uint32_t crc) {
  uint64_t c = ~crc;
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}
bool HasHardwareCrc32c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) != 0;
}
constexpr const char* kHardwareName = "sse4.2";
#elif defined(__aarch64__)
__attribute__((target("+crc"))) uint32_t HardwareCrc32c(absl::Span<const uint8_t> bytes,
                                                       uint32_t crc) {
  uint32_t c = ~crc;
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_aarch64_crc32cx(c, word);
  }
  for (; n > 0; --n, ++p) c = __builtin_aarch64_crc32cb(c, *p);
  return ~c;
}
bool HasHardwareCrc32c() { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
constexpr const char* kHardwareName = "armv8-crc";
#else
uint32_t HardwareCrc32c(absl::Span<const uint8_t> bytes, uint32_t crc) {
  return TableCrc(kCrc32cTable, bytes, crc);
}
bool HasHardwareCrc32c() { return false; }
constexpr const char* kHardwareName = "table";
#endif

const bool kUseHardware = HasHardwareCrc32c();

}  // namespace

uint32_t Crc32(absl::Span<const uint8_t> bytes, uint32_t crc) {
  return TableCrc(kCrc32Table, bytes, crc);
}

uint32_t Crc32c(absl::Span<const uint8_t> bytes, uint32_t crc) {
  return kUseHardware ? HardwareCrc32c(bytes, crc) : TableCrc(kCrc32cTable, bytes, crc);
}

const char* Crc32cImplementation() { return kUseHardware ? kHardwareName : "table"; }

}  // namespace lnpu
