#include "compiler_artifacts/format/artifact_file.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/crc32.h"

namespace lnpu::artifact {
namespace {

constexpr size_t kHeaderCrcOffset = 60;

template <typename T>
void StoreLe(uint8_t* p, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    p[i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
  }
}

template <typename T>
T LoadLe(const uint8_t* p) {
  uint64_t value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<uint64_t>(p[i]) << (8 * i);
  }
  return static_cast<T>(value);
}

}  // namespace

uint64_t DataOffsetFor(uint64_t metadata_size) {
  const uint64_t end = kArtifactHeaderSize + metadata_size;
  return (end + kArtifactDataAlignment - 1) / kArtifactDataAlignment *
         kArtifactDataAlignment;
}

std::array<uint8_t, kArtifactHeaderSize> EncodeArtifactHeader(
    const ArtifactHeader& header) {
  std::array<uint8_t, kArtifactHeaderSize> bytes{};
  uint8_t* p = bytes.data();
  std::memcpy(p, kArtifactMagic.data(), kArtifactMagic.size());
  StoreLe<uint16_t>(p + 8, header.version_major);
  StoreLe<uint16_t>(p + 10, header.version_minor);
  StoreLe<uint32_t>(p + 12, kArtifactHeaderSize);
  StoreLe<uint64_t>(p + 16, header.metadata_offset);
  StoreLe<uint64_t>(p + 24, header.metadata_size);
  StoreLe<uint64_t>(p + 32, header.data_offset);
  StoreLe<uint64_t>(p + 40, header.data_size);
  StoreLe<uint64_t>(p + 48, header.file_size);
  StoreLe<uint32_t>(p + 56, header.metadata_crc32);
  StoreLe<uint32_t>(p + kHeaderCrcOffset,
                    Crc32(absl::MakeConstSpan(p, kHeaderCrcOffset)));
  return bytes;
}

absl::StatusOr<ArtifactHeader> DecodeArtifactHeader(
    absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kArtifactHeaderSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "artifact truncated: %u bytes, the file header alone needs %u",
        bytes.size(), kArtifactHeaderSize));
  }
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kArtifactMagic.data(), kArtifactMagic.size()) != 0) {
    return absl::InvalidArgumentError(
        "not an lnpu artifact: bad magic (expected \"LNPUART1\"); compile "
        "the model with npu-compile");
  }
  const uint32_t stored_crc = LoadLe<uint32_t>(p + kHeaderCrcOffset);
  const uint32_t actual_crc = Crc32(bytes.first(kHeaderCrcOffset));
  if (stored_crc != actual_crc) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "artifact header CRC mismatch (stored 0x%08x, computed 0x%08x): the "
        "file is corrupt",
        stored_crc, actual_crc));
  }
  ArtifactHeader h;
  h.version_major = LoadLe<uint16_t>(p + 8);
  h.version_minor = LoadLe<uint16_t>(p + 10);
  if (h.version_major != kArtifactVersionMajor) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "unsupported artifact format version %u.%u: this build reads "
        "versions %u.x; recompile the model with this build's npu-compile",
        h.version_major, h.version_minor, kArtifactVersionMajor));
  }
  const uint32_t header_size = LoadLe<uint32_t>(p + 12);
  if (header_size != kArtifactHeaderSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "artifact header_size is %u, format %u.x defines %u", header_size,
        kArtifactVersionMajor, kArtifactHeaderSize));
  }
  h.metadata_offset = LoadLe<uint64_t>(p + 16);
  h.metadata_size = LoadLe<uint64_t>(p + 24);
  h.data_offset = LoadLe<uint64_t>(p + 32);
  h.data_size = LoadLe<uint64_t>(p + 40);
  h.file_size = LoadLe<uint64_t>(p + 48);
  h.metadata_crc32 = LoadLe<uint32_t>(p + 56);

  if (h.metadata_offset != kArtifactHeaderSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "artifact metadata_offset is %u, must be %u (right after the header)",
        h.metadata_offset, kArtifactHeaderSize));
  }
  // Bounds first so that the sums below cannot overflow.
  constexpr uint64_t kMaxSize = uint64_t{1} << 56;
  if (h.metadata_size == 0 || h.metadata_size > kMaxSize ||
      h.data_offset > kMaxSize || h.data_size > kMaxSize ||
      h.file_size > kMaxSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "artifact header sizes out of range (metadata %u, data offset %u, "
        "data %u, file %u bytes)",
        h.metadata_size, h.data_offset, h.data_size, h.file_size));
  }
  if (h.data_offset % kArtifactDataAlignment != 0 ||
      h.data_offset < h.metadata_offset + h.metadata_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "artifact data_offset %u must be a multiple of %u at or after the "
        "metadata end %u",
        h.data_offset, kArtifactDataAlignment,
        h.metadata_offset + h.metadata_size));
  }
  if (h.file_size != h.data_offset + h.data_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "artifact file_size %u != data_offset %u + data_size %u",
        h.file_size, h.data_offset, h.data_size));
  }
  return h;
}

}  // namespace lnpu::artifact
