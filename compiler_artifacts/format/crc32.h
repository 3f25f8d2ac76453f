// CRC-32 as used by the artifact file header.
#ifndef COMPILER_ARTIFACTS_FORMAT_CRC32_H_
#define COMPILER_ARTIFACTS_FORMAT_CRC32_H_

#include <cstdint>

#include "absl/types/span.h"

namespace lnpu::artifact {

// CRC-32/ISO-HDLC (reflected polynomial 0xEDB88320, the zlib crc32()):
// Crc32("123456789") == 0xCBF43926. `crc` is the result for the preceding
// bytes (0 to start), so a long input can be processed in pieces.
// Thread-safe.
uint32_t Crc32(absl::Span<const uint8_t> bytes, uint32_t crc = 0);

}  // namespace lnpu::artifact

#endif  // COMPILER_ARTIFACTS_FORMAT_CRC32_H_
