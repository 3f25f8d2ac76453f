// Writes an .lnpu file (layout: artifact_file.h) atomically.
//
// The metadata is known before the data: the compiler plans every weight's
// offset first, then streams the weights one at a time. The file is written
// through base/atomic_file.h (a temporary file renamed into place by
// Commit(), which writes the header last), so a failed or interrupted
// compile never leaves a file that looks valid.
//
// Not thread-safe; one writer per output file.
#ifndef COMPILER_ARTIFACTS_FORMAT_ARTIFACT_WRITER_H_
#define COMPILER_ARTIFACTS_FORMAT_ARTIFACT_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/atomic_file.h"
#include "compiler_artifacts/format/artifact_file.h"

namespace lnpu::artifact {

class ArtifactWriter {
 public:
  // Creates the temporary file (AtomicFileWriter::Create: refuses a
  // non-regular <path>) and writes `metadata` (a Model flatbuffer) after a
  // placeholder header. The data section will hold exactly `data_size`
  // bytes.
  static absl::StatusOr<std::unique_ptr<ArtifactWriter>> Create(
      const std::string& path, absl::Span<const uint8_t> metadata,
      uint64_t data_size);

  ArtifactWriter(const ArtifactWriter&) = delete;
  ArtifactWriter& operator=(const ArtifactWriter&) = delete;

  // Writes `bytes` at `offset` of the data section. Writes must go forward:
  // `offset` >= the end of the previous write (the gap is zero-filled), and
  // offset + bytes.size() <= data_size.
  absl::Status WriteData(uint64_t offset, absl::Span<const uint8_t> bytes);

  // Writes the header and commits the file (AtomicFileWriter::Commit); the
  // rest of the data section reads as zeros. When the metadata has
  // data_checksums of the right size, their CRC-32C values are computed
  // from the data as it was written and filled in first. The writer is finished afterwards
  // (success or not).
  absl::Status Commit();

  const std::string& path() const { return file_->path(); }
  const ArtifactHeader& header() const { return header_; }

 private:
  ArtifactWriter(std::unique_ptr<AtomicFileWriter> file, ArtifactHeader header,
                 std::vector<uint8_t> metadata, uint32_t checksum_chunk);

  // Adds the next data bytes (in data-section order) to the checksums.
  void ChecksumData(absl::Span<const uint8_t> bytes);
  void ChecksumZeros(uint64_t count);

  std::unique_ptr<AtomicFileWriter> file_;
  ArtifactHeader header_;
  std::vector<uint8_t> metadata_;  // rewritten by Commit with the checksums
  uint64_t data_written_ = 0;      // end of the last data write
  bool finished_ = false;
  // data_checksums: 0 when the metadata has none.
  const uint32_t checksum_chunk_;
  std::vector<uint32_t> checksums_;  // completed chunks
  uint32_t chunk_crc_ = 0;           // of the current chunk so far
  uint64_t chunk_filled_ = 0;        // bytes of the current chunk so far
};

}  // namespace lnpu::artifact

#endif  // COMPILER_ARTIFACTS_FORMAT_ARTIFACT_WRITER_H_
