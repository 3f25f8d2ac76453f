// Writes an .lnpu file (layout: artifact_file.h) atomically.
//
// The metadata is known before the data: the compiler plans every weight's
// offset first, then streams the weights one at a time. Everything goes to
// "<path>.tmp"; Commit() writes the header last, fsyncs, renames the file
// to <path> and fsyncs the directory. A writer destroyed without a
// successful Commit() deletes the temporary file, so a failed compile never
// leaves a file that looks valid.
//
// Not thread-safe; one writer per output file.
#ifndef COMPILER_ARTIFACTS_FORMAT_ARTIFACT_WRITER_H_
#define COMPILER_ARTIFACTS_FORMAT_ARTIFACT_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compiler_artifacts/format/artifact_file.h"

namespace lnpu::artifact {

class ArtifactWriter {
 public:
  // Creates "<path>.tmp" (replacing a stale one) and writes `metadata`
  // (a Model flatbuffer) after a placeholder header. The data section will
  // hold exactly `data_size` bytes.
  static absl::StatusOr<std::unique_ptr<ArtifactWriter>> Create(
      const std::string& path, absl::Span<const uint8_t> metadata,
      uint64_t data_size);

  ArtifactWriter(const ArtifactWriter&) = delete;
  ArtifactWriter& operator=(const ArtifactWriter&) = delete;
  ~ArtifactWriter();

  // Writes `bytes` at `offset` of the data section. Writes must go forward:
  // `offset` >= the end of the previous write (the gap is zero-filled), and
  // offset + bytes.size() <= data_size.
  absl::Status WriteData(uint64_t offset, absl::Span<const uint8_t> bytes);

  // Zero-fills the rest of the data section, writes the header, fsyncs and
  // renames the file into place. The writer is finished afterwards
  // (success or not).
  absl::Status Commit();

  const std::string& path() const { return path_; }
  const ArtifactHeader& header() const { return header_; }

 private:
  ArtifactWriter(std::string path, int fd, ArtifactHeader header);
  absl::Status WriteAt(uint64_t file_offset, absl::Span<const uint8_t> bytes);
  absl::Status ZeroFill(uint64_t from, uint64_t to);
  void Abandon();

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  ArtifactHeader header_;
  uint64_t data_written_ = 0;  // end of the last data write
};

}  // namespace lnpu::artifact

#endif  // COMPILER_ARTIFACTS_FORMAT_ARTIFACT_WRITER_H_
