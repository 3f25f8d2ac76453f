#include "compiler_artifacts/format/artifact_writer.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/crc32.h"
#include "flatbuffers/flatbuffers.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/model_generated.h"

namespace lnpu::artifact {

absl::StatusOr<std::unique_ptr<ArtifactWriter>> ArtifactWriter::Create(
    const std::string& path, absl::Span<const uint8_t> metadata, uint64_t data_size) {
  if (path.empty()) return absl::InvalidArgumentError("artifact output path is empty");
  if (metadata.empty()) return absl::InvalidArgumentError("artifact metadata is empty");
  ArtifactHeader header;
  header.metadata_size = metadata.size();
  header.data_offset = DataOffsetFor(metadata.size());
  header.data_size = data_size;
  header.file_size = header.data_offset + data_size;
  header.metadata_crc32 = Crc32(metadata);

  uint32_t checksum_chunk = 0;
  flatbuffers::Verifier verifier(metadata.data(), metadata.size());
  if (fb::VerifyModelBuffer(verifier)) {
    const fb::DataChecksums* checksums = fb::GetModel(metadata.data())->data_checksums();
    if (checksums != nullptr && checksums->chunk_bytes() > 0 && checksums->crc32c() != nullptr &&
        checksums->crc32c()->size() ==
            (data_size + checksums->chunk_bytes() - 1) / checksums->chunk_bytes()) {
      checksum_chunk = checksums->chunk_bytes();
    }
  }

  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                        AtomicFileWriter::Create(path, "artifact"));
  // The real header is written by Commit(); until then the file starts
  // with zeros and can never pass as an artifact.
  const std::array<uint8_t, kArtifactHeaderSize> placeholder{};
  LNPU_RETURN_IF_ERROR(file->WriteAt(0, placeholder));
  LNPU_RETURN_IF_ERROR(file->WriteAt(header.metadata_offset, metadata));
  return std::unique_ptr<ArtifactWriter>(new ArtifactWriter(
      std::move(file), header, std::vector<uint8_t>(metadata.begin(), metadata.end()),
      checksum_chunk));
}

ArtifactWriter::ArtifactWriter(std::unique_ptr<AtomicFileWriter> file, ArtifactHeader header,
                               std::vector<uint8_t> metadata, uint32_t checksum_chunk)
    : file_(std::move(file)),
      header_(header),
      metadata_(std::move(metadata)),
      checksum_chunk_(checksum_chunk) {}

void ArtifactWriter::ChecksumData(absl::Span<const uint8_t> bytes) {
  if (checksum_chunk_ == 0) return;
  while (!bytes.empty()) {
    const size_t n = std::min<uint64_t>(bytes.size(), checksum_chunk_ - chunk_filled_);
    chunk_crc_ = Crc32c(bytes.first(n), chunk_crc_);
    chunk_filled_ += n;
    bytes.remove_prefix(n);
    if (chunk_filled_ == checksum_chunk_) {
      checksums_.push_back(chunk_crc_);
      chunk_crc_ = 0;
      chunk_filled_ = 0;
    }
  }
}

void ArtifactWriter::ChecksumZeros(uint64_t count) {
  static constexpr std::array<uint8_t, 65536> kZeros{};
  while (checksum_chunk_ != 0 && count > 0) {
    const uint64_t n = std::min<uint64_t>(count, kZeros.size());
    ChecksumData(absl::MakeConstSpan(kZeros.data(), n));
    count -= n;
  }
}

absl::Status ArtifactWriter::WriteData(uint64_t offset, absl::Span<const uint8_t> bytes) {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact writer for ", path(), " is already finished"));
  }
  if (offset < data_written_ || offset > header_.data_size ||
      bytes.size() > header_.data_size - offset) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "data write of %u bytes at offset %u is outside the data section "
        "(%u bytes) or before the previous write's end %u",
        bytes.size(), offset, header_.data_size, data_written_));
  }
  LNPU_RETURN_IF_ERROR(file_->WriteAt(header_.data_offset + offset, bytes));
  ChecksumZeros(offset - data_written_);
  ChecksumData(bytes);
  data_written_ = offset + bytes.size();
  return absl::OkStatus();
}

absl::Status ArtifactWriter::Commit() {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact writer for ", path(), " is already finished"));
  }
  finished_ = true;
  if (checksum_chunk_ != 0) {
    ChecksumZeros(header_.data_size - data_written_);
    if (chunk_filled_ > 0) checksums_.push_back(chunk_crc_);
    flatbuffers::Vector<uint32_t>* crcs =
        fb::GetMutableModel(metadata_.data())->mutable_data_checksums()->mutable_crc32c();
    for (uint32_t i = 0; i < crcs->size() && i < checksums_.size(); ++i) crcs->Mutate(i, checksums_[i]);
    header_.metadata_crc32 = Crc32(metadata_);
    LNPU_RETURN_IF_ERROR(file_->WriteAt(header_.metadata_offset, metadata_));
  }
  // Gaps and the unwritten tail read as zeros: the file's length is set
  // by writing the header into a file of the final size.
  if (file_->size() < header_.file_size) {
    static constexpr uint8_t kZero = 0;
    LNPU_RETURN_IF_ERROR(file_->WriteAt(header_.file_size - 1, absl::MakeConstSpan(&kZero, 1)));
  }
  LNPU_RETURN_IF_ERROR(file_->WriteAt(0, EncodeArtifactHeader(header_)));
  return file_->Commit();
}

}  // namespace lnpu::artifact
