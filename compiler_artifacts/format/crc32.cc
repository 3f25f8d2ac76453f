#include "compiler_artifacts/format/crc32.h"

#include <array>

namespace lnpu::artifact {
namespace {

constexpr std::array<uint32_t, 256> MakeCrc32Table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) {
      c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrc32Table = MakeCrc32Table();

}  // namespace

uint32_t Crc32(absl::Span<const uint8_t> bytes, uint32_t crc) {
  uint32_t c = ~crc;
  for (uint8_t b : bytes) c = kCrc32Table[(c ^ b) & 0xFFu] ^ (c >> 8);
  return ~c;
}

}  // namespace lnpu::artifact
