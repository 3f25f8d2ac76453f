#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_io.h"
#include "base/interrupt.h"
#include "base/status_macros.h"

namespace lnpu {

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(
    const std::string& path, absl::string_view what, absl::Span<const std::string> inputs) {
  LNPU_RETURN_IF_ERROR(CheckOutputPath(path, inputs, what));
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("cannot create the ", what), temporary);
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(path, std::string(what), fd));
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string what, int fd)
    : path_(std::move(path)),
      temporary_path_(path_ + ".tmp"),
      what_(std::move(what)),
      fd_(fd),
      registration_(RegisterTemporaryFile(temporary_path_)) {}

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

void AtomicFileWriter::Abandon() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(temporary_path_.c_str());
  UnregisterTemporaryFile(registration_);
  registration_ = -1;
}

absl::Status AtomicFileWriter::Append(absl::Span<const uint8_t> bytes) {
  return WriteAt(size_, bytes);
}

absl::Status AtomicFileWriter::WriteAt(uint64_t offset, absl::Span<const uint8_t> bytes) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the writer of ", what_, " '", path_, "' is already finished"));
  }
  uint64_t at = offset;
  while (!bytes.empty()) {
    const size_t chunk = std::min<size_t>(bytes.size(), size_t{1} << 30);
    const ssize_t n = ::pwrite(fd_, bytes.data(), chunk, static_cast<off_t>(at));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, absl::StrCat("cannot write the ", what_), temporary_path_);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
  size_ = std::max(size_, at);
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the writer of ", what_, " '", path_, "' is already finished"));
  }
  // A gap written with WriteAt past the end is a hole; the length is right.
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0 || ::fsync(fd_) != 0) {
    absl::Status error = ErrnoError(errno, absl::StrCat("cannot write the ", what_), temporary_path_);
    Abandon();
    return error;
  }
  const int close_result = ::close(fd_);
  fd_ = -1;
  if (close_result != 0) {
    absl::Status error = ErrnoError(errno, absl::StrCat("cannot close the ", what_), temporary_path_);
    ::unlink(temporary_path_.c_str());
    UnregisterTemporaryFile(registration_);
    return error;
  }
  if (::rename(temporary_path_.c_str(), path_.c_str()) != 0) {
    absl::Status error = ErrnoError(errno, absl::StrCat("cannot rename the ", what_, " into"), path_);
    ::unlink(temporary_path_.c_str());
    UnregisterTemporaryFile(registration_);
    return error;
  }
  UnregisterTemporaryFile(registration_);
  registration_ = -1;
  // Make the rename itself durable.
  const std::string dir = DirectoryOf(path_);
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoError(errno, "cannot open directory", dir);
  const bool synced = ::fsync(dir_fd) == 0;
  const int err = errno;
  ::close(dir_fd);
  if (!synced) return ErrnoError(err, "cannot fsync directory", dir);
  return absl::OkStatus();
}

}  // namespace lnpu
