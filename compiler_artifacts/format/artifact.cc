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
#include "base/parallel_for.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "flatbuffers/flatbuffers.h"

namespace lnpu::artifact {

Artifact::Artifact(std::string path, int fd, const uint8_t* mapping, uint64_t mapping_size)
    : path_(std::move(path)), fd_(fd), mapping_(mapping), mapping_size_(mapping_size) {}

Artifact::~Artifact() {
  if (mapping_ != nullptr) {
    ::munmap(const_cast<uint8_t*>(mapping_), mapping_size_);
  }
  ::close(fd_);
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
  if (mapping == MAP_FAILED) {
    absl::Status error = ErrnoError(errno, "cannot map artifact", path);
    ::close(fd);
    return error;
  }
  std::unique_ptr<Artifact> artifact(
      new Artifact(path, fd, static_cast<const uint8_t*>(mapping), file_size));
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

absl::Status Artifact::ReadData(uint64_t offset, absl::Span<uint8_t> out) const {
  if (offset > data_.size() || out.size() > data_.size() - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "%s: reading %u bytes at offset %u of a data section of %u bytes", path_, out.size(),
        offset, data_.size()));
  }
  const uint64_t file_offset = header_.data_offset + offset;
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done,
                              static_cast<off_t>(file_offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, "cannot read artifact", path_);
    if (n == 0) {
      return absl::DataLossError(absl::StrFormat(
          "%s: the file ends at byte %u, inside its data section: it was truncated or "
          "replaced after it was opened; copy it again and reload",
          path_, file_offset + done));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status Artifact::VerifyData() const {
  const fb::DataChecksums* checksums = model_->data_checksums();
  if (checksums == nullptr) return absl::OkStatus();
  const uint64_t chunk = checksums->chunk_bytes();
  const size_t chunks = checksums->crc32c()->size();
  const auto range_of = [&](size_t i) {
    const uint64_t begin = uint64_t{i} * chunk;
    return std::pair{begin, std::min<uint64_t>(chunk, data_.size() - begin)};
  };
  // Every chunk on all CPUs, then judged in order, so that the first
  // corrupt chunk is the one named.
  const size_t threads = BulkPassThreads();
  std::vector<std::vector<uint8_t>> scratch(ParallelForWorkers(chunks, threads));
  std::vector<uint32_t> crcs(chunks);
  std::vector<absl::Status> read(chunks);
  ParallelFor(chunks, threads, [&](size_t i, size_t worker) {
    const auto [begin, bytes] = range_of(i);
    std::vector<uint8_t>& buffer = scratch[worker];
    buffer.resize(bytes);
    read[i] = ReadData(begin, absl::MakeSpan(buffer));
    if (read[i].ok()) crcs[i] = Crc32c(buffer);
  });
  for (size_t i = 0; i < chunks; ++i) {
    LNPU_RETURN_IF_ERROR(read[i]);
    const uint32_t crc = crcs[i];
    if (crc == checksums->crc32c()->Get(i)) continue;
    const auto [begin, bytes] = range_of(i);
    // Name the weights the corrupt bytes may belong to.
    std::vector<std::string> names;
    for (const fb::Weight* w : *model_->weights()) {
      if (w->offset() < begin + bytes && begin < w->offset() + w->size()) {
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
        path_, begin, begin + bytes, weight, crc, checksums->crc32c()->Get(i)));
  }
  return absl::OkStatus();
}

}  // namespace lnpu::artifact
