// MemoryFile: a file that lives in memory (memfd_create) but has a path,
// so that parsers which open a path (GgufFile::Open, Artifact::Open,
// ReadSessionStateFile) can read fuzz input without touching the disk.
//
// Thread-safety: none; one object per thread.
#ifndef TESTS_FUZZ_MEMORY_FILE_H_
#define TESTS_FUZZ_MEMORY_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace lnpu::fuzz {

class MemoryFile {
 public:
  // Aborts if the kernel has no memfd_create (Linux >= 3.17).
  MemoryFile();
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the contents with `bytes` followed by zeros up to `size` bytes
  // (a sparse tail costs nothing); `size` < bytes.size() means bytes.size().
  absl::Status Assign(absl::Span<const uint8_t> bytes, uint64_t size = 0);

  // "/proc/self/fd/N": opening it opens the memory file.
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A private directory for files a target writes (e.g. a session saved
// again), created on first use under $TMPDIR (else /tmp) and removed at
// exit with whatever is left in it.
const std::string& ScratchDirectory();

}  // namespace lnpu::fuzz

#endif  // TESTS_FUZZ_MEMORY_FILE_H_
