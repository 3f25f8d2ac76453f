// Checksums of files the stack writes (artifact headers and metadata,
// session files).
#ifndef LNPU_BASE_CRC32_H_
#define LNPU_BASE_CRC32_H_

#include <cstdint>

#include "absl/types/span.h"

namespace lnpu {

// CRC-32/ISO-HDLC (reflected polynomial 0xEDB88320, the zlib crc32()):
// Crc32("123456789") == 0xCBF43926. `crc` is the result for the preceding
// bytes (0 to start), so a long input can be processed in pieces.
// Thread-safe.
uint32_t Crc32(absl::Span<const uint8_t> bytes, uint32_t crc = 0);

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, as in iSCSI and
// ext4): Crc32c("123456789") == 0xE3069283. Chained like Crc32. Uses the
// CPU's CRC32 instructions when it has them (x86 SSE4.2, Armv8 CRC32;
// checked at run time), else a table: the checksum of the weights, which
// is verified at every load.
uint32_t Crc32c(absl::Span<const uint8_t> bytes, uint32_t crc = 0);
// The implementation Crc32c uses on this CPU: "sse4.2", "armv8-crc" or
// "table".
const char* Crc32cImplementation();

}  // namespace lnpu

#endif  // LNPU_BASE_CRC32_H_
