#include "tests/fuzz/memory_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace lnpu::fuzz {

MemoryFile::MemoryFile() {
  fd_ = ::memfd_create("lnpu-fuzz-input", MFD_CLOEXEC);
  if (fd_ < 0) {
    std::perror("memfd_create");
    std::abort();
  }
  path_ = absl::StrCat("/proc/self/fd/", fd_);
}

MemoryFile::~MemoryFile() { ::close(fd_); }

absl::Status MemoryFile::Assign(absl::Span<const uint8_t> bytes,
                                uint64_t size) {
  if (::ftruncate(fd_, 0) != 0) {
    return absl::ErrnoToStatus(errno, "ftruncate of the memory file");
  }
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + written,
                               bytes.size() - written,
                               static_cast<off_t>(written));
    if (n <= 0) return absl::ErrnoToStatus(errno, "write of the memory file");
    written += static_cast<size_t>(n);
  }
  if (size > bytes.size() && ::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    return absl::ErrnoToStatus(errno, "ftruncate of the memory file");
  }
  return absl::OkStatus();
}

const std::string& ScratchDirectory() {
  static const std::string* const dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                     "/lnpu-fuzz-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    auto* path = new std::string(pattern);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchDirectory(), ignored);
    });
    return path;
  }();
  return *dir;
}

}  // namespace lnpu::fuzz
