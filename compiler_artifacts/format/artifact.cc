#include "compiler_artifacts/format/artifact.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/crc32.h"
#include "base/file_io.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "flatbuffers/flatbuffers.h"

namespace lnpu::artifact {

Artifact::Artifact(std::string path, const uint8_t* mapping,
                   uint64_t mapping_size)
    : path_(std::move(path)), mapping_(mapping), mapping_size_(mapping_size) {}

Artifact::~Artifact() {
  if (mapping_ != nullptr) {
    ::munmap(const_cast<uint8_t*>(mapping_), mapping_size_);
  }
}

absl::StatusOr<std::unique_ptr<Artifact>> Artifact::Open(
    const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open artifact", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    absl::Status error = ErrnoError(errno, "cannot stat artifact", path);
    ::close(fd);
    return error;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file"));
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < kArtifactHeaderSize) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: artifact truncated: %u bytes, the file header alone needs %u",
        path, file_size, kArtifactHeaderSize));
  }
  void* mapping = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int mmap_errno = errno;
  ::close(fd);
  if (mapping == MAP_FAILED) {
    return ErrnoError(mmap_errno, "cannot map artifact", path);
  }
  std::unique_ptr<Artifact> artifact(
      new Artifact(path, static_cast<const uint8_t*>(mapping), file_size));
  const absl::Span<const uint8_t> file(artifact->mapping_, file_size);

  absl::StatusOr<ArtifactHeader> header = DecodeArtifactHeader(file);
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(header.status(), path, ": ");
  if (header->file_size != file_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: artifact %s: the header records %u bytes, the file has %u",
        path, file_size < header->file_size ? "truncated" : "has extra bytes",
        header->file_size, file_size));
  }
  artifact->header_ = *header;
  const absl::Span<const uint8_t> metadata =
      file.subspan(header->metadata_offset, header->metadata_size);
  const uint32_t crc = Crc32(metadata);
  if (crc != header->metadata_crc32) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: artifact metadata CRC mismatch (stored 0x%08x, computed "
        "0x%08x): the file is corrupt",
        path, header->metadata_crc32, crc));
  }
  flatbuffers::Verifier verifier(metadata.data(), metadata.size());
  if (!fb::VerifyModelBuffer(verifier)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": artifact metadata is not a valid Model flatbuffer"));
  }
  artifact->model_ = fb::GetModel(metadata.data());
  artifact->data_ = file.subspan(header->data_offset, header->data_size);
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(VerifyModel(*artifact->model_, header->data_size), path, ": ");
  return artifact;
}

absl::Status Artifact::VerifyData() const {
  const fb::DataChecksums* checksums = model_->data_checksums();
  if (checksums == nullptr) return absl::OkStatus();
  const uint64_t chunk = checksums->chunk_bytes();
  for (uint32_t i = 0; i < checksums->crc32c()->size(); ++i) {
    const uint64_t begin = uint64_t{i} * chunk;
    const absl::Span<const uint8_t> piece =
        data_.subspan(begin, std::min<uint64_t>(chunk, data_.size() - begin));
    const uint32_t crc = Crc32c(piece);
    // Reading every page must not leave the whole file in RSS.
    ReleaseMappedPages(piece);
    if (crc == checksums->crc32c()->Get(i)) continue;
    // Name the weights the corrupt bytes may belong to.
    std::vector<std::string> names;
    for (const fb::Weight* w : *model_->weights()) {
      if (w->offset() < begin + piece.size() && begin < w->offset() + w->size()) {
        names.push_back(absl::StrCat("'", w->name()->str(), "'"));
      }
    }
    std::string weight = "padding between weights";
    if (names.size() == 1) weight = "weight " + names[0];
    if (names.size() > 1) {
      const size_t shown = std::min<size_t>(names.size(), 4);
      weight = absl::StrCat(
          "weights ", absl::StrJoin(names.begin(), names.begin() + shown, ", "),
          names.size() > shown ? absl::StrCat(" and ", names.size() - shown, " more") : "");
    }
    return absl::DataLossError(absl::StrFormat(
        "%s: the weights are corrupt: bytes [%u, %u) of the data section (in %s) have "
        "CRC-32C 0x%08x, the artifact records 0x%08x; copy the file again or recompile it",
        path_, begin, begin + piece.size(), weight, crc, checksums->crc32c()->Get(i)));
  }
  return absl::OkStatus();
}

}  // namespace lnpu::artifact
