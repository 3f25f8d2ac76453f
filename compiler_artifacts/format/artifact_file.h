// The .lnpu file header: the fixed 64 bytes that start every artifact.
//
// File layout:
//   [0, 64)                          ArtifactHeader
//   [metadata_offset, +metadata_size) Model flatbuffer (model.fbs),
//                                    metadata_offset == 64
//   zero padding up to data_offset
//   [data_offset, +data_size)        data section (the weights; buffers[0]),
//                                    data_offset a multiple of 4096 so the
//                                    section can be mapped page-aligned
//   file_size == data_offset + data_size; nothing follows.
//
// Header encoding, all integers little-endian:
//   offset size field
//        0    8 magic "LNPUART1"
//        8    2 version_major  (incompatible changes)
//       10    2 version_minor  (compatible changes: schema fields appended)
//       12    4 header_size    (64)
//       16    8 metadata_offset
//       24    8 metadata_size
//       32    8 data_offset
//       40    8 data_size
//       48    8 file_size
//       56    4 metadata_crc32 (CRC-32 of the metadata bytes, crc32.h)
//       60    4 header_crc32   (CRC-32 of header bytes [0, 60))
// The data section is not checksummed so that loading a model does not
// have to read every weight page; its bounds are verified instead.
//
// A reader accepts every minor version of the major version it was built
// for: newer minors only append flatbuffer fields, which older readers
// ignore.
#ifndef COMPILER_ARTIFACTS_FORMAT_ARTIFACT_FILE_H_
#define COMPILER_ARTIFACTS_FORMAT_ARTIFACT_FILE_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace lnpu::artifact {

inline constexpr std::array<char, 8> kArtifactMagic = {'L', 'N', 'P', 'U',
                                                        'A', 'R', 'T', '1'};
inline constexpr uint16_t kArtifactVersionMajor = 1;
inline constexpr uint16_t kArtifactVersionMinor = 0;
inline constexpr size_t kArtifactHeaderSize = 64;
inline constexpr uint64_t kArtifactDataAlignment = 4096;

// The decoded header. Magic, header_size and header_crc32 are implied.
struct ArtifactHeader {
  uint16_t version_major = kArtifactVersionMajor;
  uint16_t version_minor = kArtifactVersionMinor;
  uint64_t metadata_offset = kArtifactHeaderSize;
  uint64_t metadata_size = 0;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  uint64_t file_size = 0;
  uint32_t metadata_crc32 = 0;
};

// Offset of the data section for metadata of `metadata_size` bytes: the
// end of the metadata rounded up to kArtifactDataAlignment.
uint64_t DataOffsetFor(uint64_t metadata_size);

// Encodes `header` (magic, header_size and header_crc32 filled in).
std::array<uint8_t, kArtifactHeaderSize> EncodeArtifactHeader(
    const ArtifactHeader& header);

// Decodes and checks the first kArtifactHeaderSize bytes of a file: magic,
// header CRC, version, header_size and the layout rules above. It cannot
// check file_size against the real file or the metadata CRC; the caller
// does (Artifact::Open). Errors are InvalidArgument / FailedPrecondition
// (unsupported version) naming the field.
absl::StatusOr<ArtifactHeader> DecodeArtifactHeader(
    absl::Span<const uint8_t> bytes);

}  // namespace lnpu::artifact

#endif  // COMPILER_ARTIFACTS_FORMAT_ARTIFACT_FILE_H_
