#include "base/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace lnpu {
namespace {

absl::string_view FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

absl::Status ErrnoError(int err, absl::string_view what, absl::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " '", path, "'"));
}

void ReleaseMappedPages(absl::Span<const uint8_t> bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages inside `bytes` only: the neighbours may still be read.
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::StatusOr<int> OpenRegularFile(const std::string& path, absl::string_view what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before fstat
  // can tell it is one. It is cleared again for the regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("cannot open ", what), path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoError(err, absl::StrCat("cannot stat ", what), path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is ", FileKind(st.st_mode),
                                                   "; give the path of a regular file"));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes,
                                            absl::string_view what) {
  LNPU_ASSIGN_OR_RETURN(int opened, OpenRegularFile(path, what));
  const int fd = opened;
  absl::Cleanup close_fd = [fd] { ::close(fd); };
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(errno, absl::StrCat("cannot stat ", what), path);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " '", path, "' has ", st.st_size,
                                                     " bytes, more than the limit of ", max_bytes));
  }
  std::string content(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::read(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, absl::StrCat("cannot read ", what), path);
    if (n == 0) break;  // shrank meanwhile
    done += static_cast<size_t>(n);
  }
  content.resize(done);
  return content;
}

absl::Status CheckOutputPath(const std::string& path, absl::Span<const std::string> inputs,
                             absl::string_view what) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " path is empty"));
  struct stat out;
  if (::stat(path.c_str(), &out) == 0) {
    if (!S_ISREG(out.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("refusing to replace '", path, "' with the ", what, ": it is ",
                       FileKind(out.st_mode), "; give the path of a regular file"));
    }
    for (const std::string& input : inputs) {
      struct stat in;
      if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev &&
          in.st_ino == out.st_ino) {
        return absl::InvalidArgumentError(
            absl::StrCat("the ", what, " '", path, "' is the input file '", input,
                         "'; writing it would destroy the input: choose another path"));
      }
    }
  } else if (errno != ENOENT) {
    return ErrnoError(errno, absl::StrCat("cannot examine the ", what), path);
  }
  const std::string dir = DirectoryOf(path);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return ErrnoError(errno, absl::StrCat("cannot write the ", what, " into directory"), dir);
  }
  return absl::OkStatus();
}

}  // namespace lnpu
