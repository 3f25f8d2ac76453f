// Checked file access shared by every layer: errors that name the file and
// the cause, whole-file reads that refuse what is not a regular file or is
// too large, and the rules an output path must satisfy before the stack
// replaces it. Thread-safe.
#ifndef LNPU_BASE_FILE_IO_H_
#define LNPU_BASE_FILE_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace lnpu {

// The status of a failed system call on `path`: the code errno `err` maps
// to (NotFound, PermissionDenied, ...) and the message
// "<what> '<path>': <strerror>".
absl::Status ErrnoError(int err, absl::string_view what, absl::string_view path);

// A read-only descriptor (O_CLOEXEC) of the regular file `path`, which the
// caller closes. Errors as ReadRegularFile's, without the size limit.
absl::StatusOr<int> OpenRegularFile(const std::string& path, absl::string_view what);

// The whole of the regular file `path` (at most `max_bytes`). Errors:
// ErrnoError's for open/read failures; InvalidArgument naming the file for
// a directory, FIFO, device or other non-regular file (so that /dev/zero
// or a pipe cannot make a read endless), and ResourceExhausted naming the
// size and the limit for a larger file. `what` names the file's role in
// messages ("prompt file").
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes,
                                            absl::string_view what);

// Checks that the stack may replace `path` with a new file: `path` does not
// exist or is a regular file, is not any of `inputs` (compared by device
// and inode, so links and other spellings of a name are caught), and its
// directory is writable. InvalidArgument naming the path and what to do
// otherwise; ErrnoError's when the path cannot be examined. `what` names
// the file's role in messages ("session file").
absl::Status CheckOutputPath(const std::string& path, absl::Span<const std::string> inputs,
                             absl::string_view what);

// Drops the whole pages inside `bytes` (part of a read-only file mapping)
// from this process's resident set (MADV_DONTNEED): the page cache keeps
// them and a later read faults them in again. Streaming over a large
// mapping with it keeps peak RSS near one piece. Best effort.
void ReleaseMappedPages(absl::Span<const uint8_t> bytes);

// The directory part of `path` ("." when it has none).
std::string DirectoryOf(const std::string& path);

}  // namespace lnpu

#endif  // LNPU_BASE_FILE_IO_H_
