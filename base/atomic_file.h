// Writes a file so that its path only ever names a complete file: the
// content goes to "<path>.tmp", and Commit() fsyncs it, renames it over
// <path> and fsyncs the directory (one durability rule for every file the
// stack writes: artifacts, GGUF files, session files). A writer destroyed
// without a successful Commit() deletes the temporary file, and so does an
// interrupted process (base/interrupt.h), so a failed or cancelled write
// never leaves a file that looks valid, and never touches <path>.
//
// Create() refuses an output that exists and is not a regular file (a
// FIFO, a device node, a directory) or that is one of the inputs the
// caller names (CheckOutputPath).
//
// Not thread-safe; one writer per output file.
#ifndef LNPU_BASE_ATOMIC_FILE_H_
#define LNPU_BASE_ATOMIC_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace lnpu {

class AtomicFileWriter {
 public:
  // Checks `path` (CheckOutputPath with `inputs`; `what` names the file in
  // messages, e.g. "artifact") and creates "<path>.tmp", replacing a stale
  // one.
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Create(
      const std::string& path, absl::string_view what,
      absl::Span<const std::string> inputs = {});

  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  // Appends `bytes` at the end of what was written so far.
  absl::Status Append(absl::Span<const uint8_t> bytes);
  // Writes `bytes` at `offset` (the file grows as needed; a gap reads as
  // zeros). Append continues after the furthest byte written.
  absl::Status WriteAt(uint64_t offset, absl::Span<const uint8_t> bytes);

  // fsyncs, renames into place, fsyncs the directory. The writer is
  // finished afterwards, whether or not it succeeded; on error <path> is
  // unchanged and the temporary file is gone.
  absl::Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return temporary_path_; }
  uint64_t size() const { return size_; }

 private:
  AtomicFileWriter(std::string path, std::string what, int fd);
  void Abandon();

  const std::string path_;
  const std::string temporary_path_;
  const std::string what_;
  int fd_ = -1;
  int registration_ = -1;  // base/interrupt.h temporary-file slot
  uint64_t size_ = 0;      // furthest byte written
};

}  // namespace lnpu

#endif  // LNPU_BASE_ATOMIC_FILE_H_
