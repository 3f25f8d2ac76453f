#include "compiler_artifacts/format/artifact_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler_artifacts/format/crc32.h"

namespace lnpu::artifact {
namespace {

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  const int err = errno;
  return absl::UnavailableError(
      absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArtifactWriter>> ArtifactWriter::Create(
    const std::string& path, absl::Span<const uint8_t> metadata,
    uint64_t data_size) {
  if (path.empty()) {
    return absl::InvalidArgumentError("artifact output path is empty");
  }
  if (metadata.empty()) {
    return absl::InvalidArgumentError("artifact metadata is empty");
  }
  ArtifactHeader header;
  header.metadata_size = metadata.size();
  header.data_offset = DataOffsetFor(metadata.size());
  header.data_size = data_size;
  header.file_size = header.data_offset + data_size;
  header.metadata_crc32 = Crc32(metadata);

  const std::string tmp_path = path + ".tmp";
  const int fd =
      ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp_path);
  std::unique_ptr<ArtifactWriter> writer(
      new ArtifactWriter(path, fd, header));
  // The real header is written by Commit(); until then the file starts
  // with zeros and can never pass as an artifact.
  const std::array<uint8_t, kArtifactHeaderSize> placeholder{};
  if (auto s = writer->WriteAt(0, placeholder); !s.ok()) return s;
  if (auto s = writer->WriteAt(header.metadata_offset, metadata); !s.ok()) {
    return s;
  }
  if (auto s = writer->ZeroFill(header.metadata_offset + metadata.size(),
                                header.data_offset);
      !s.ok()) {
    return s;
  }
  return writer;
}

ArtifactWriter::ArtifactWriter(std::string path, int fd, ArtifactHeader header)
    : path_(std::move(path)),
      tmp_path_(path_ + ".tmp"),
      fd_(fd),
      header_(header) {}

ArtifactWriter::~ArtifactWriter() { Abandon(); }

void ArtifactWriter::Abandon() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_path_.c_str());
}

absl::Status ArtifactWriter::WriteAt(uint64_t file_offset,
                                     absl::Span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    const size_t chunk = std::min<size_t>(bytes.size(), size_t{1} << 30);
    const ssize_t n = ::pwrite(fd_, bytes.data(), chunk,
                               static_cast<off_t>(file_offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", tmp_path_);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    file_offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ArtifactWriter::ZeroFill(uint64_t from, uint64_t to) {
  static constexpr std::array<uint8_t, 4096> kZeros{};
  while (from < to) {
    const uint64_t n = std::min<uint64_t>(to - from, kZeros.size());
    if (auto s = WriteAt(from, absl::MakeConstSpan(kZeros.data(), n));
        !s.ok()) {
      return s;
    }
    from += n;
  }
  return absl::OkStatus();
}

absl::Status ArtifactWriter::WriteData(uint64_t offset,
                                       absl::Span<const uint8_t> bytes) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact writer for ", path_, " is already finished"));
  }
  if (offset < data_written_ || offset > header_.data_size ||
      bytes.size() > header_.data_size - offset) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "data write of %u bytes at offset %u is outside the data section "
        "(%u bytes) or before the previous write's end %u",
        bytes.size(), offset, header_.data_size, data_written_));
  }
  if (auto s = ZeroFill(header_.data_offset + data_written_,
                        header_.data_offset + offset);
      !s.ok()) {
    return s;
  }
  if (auto s = WriteAt(header_.data_offset + offset, bytes); !s.ok()) {
    return s;
  }
  data_written_ = offset + bytes.size();
  return absl::OkStatus();
}

absl::Status ArtifactWriter::Commit() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("artifact writer for ", path_, " is already finished"));
  }
  absl::Status status = ZeroFill(header_.data_offset + data_written_,
                                 header_.file_size);
  if (status.ok()) status = WriteAt(0, EncodeArtifactHeader(header_));
  if (status.ok() && ::fsync(fd_) != 0) {
    status = ErrnoError("cannot fsync", tmp_path_);
  }
  if (!status.ok()) {
    Abandon();
    return status;
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_path_.c_str());
    return ErrnoError("cannot close", tmp_path_);
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    absl::Status rename_error = ErrnoError("cannot rename to", path_);
    ::unlink(tmp_path_.c_str());
    return rename_error;
  }
  // Make the rename itself durable.
  const std::string dir = DirectoryOf(path_);
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoError("cannot open directory", dir);
  const bool synced = ::fsync(dir_fd) == 0;
  ::close(dir_fd);
  if (!synced) return ErrnoError("cannot fsync directory", dir);
  return absl::OkStatus();
}

}  // namespace lnpu::artifact
