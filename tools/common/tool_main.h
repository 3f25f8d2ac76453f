// What every program of tools/ does around its body: SIGINT and SIGTERM
// remove the temporary files the program was writing (base/interrupt.h;
// work that can stop cleanly opens an InterruptScope), and an exception
// that escapes the body (e.g. std::bad_alloc) ends the program with a
// message and exit status 70, never with abort(). Also the one reader of
// the text files the tools take (--file): regular files up to
// kMaxTextFileBytes.
#ifndef TOOLS_COMMON_TOOL_MAIN_H_
#define TOOLS_COMMON_TOOL_MAIN_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace lnpu::tools {

// Exit status of a program whose body threw (sysexits' EX_SOFTWARE).
inline constexpr int kInternalErrorExit = 70;

// Installs the interrupt handlers, runs `body` and returns its exit
// status, or prints "<program>: internal error: <what>" and returns
// kInternalErrorExit when it throws.
int RunToolMain(const char* program, const std::function<int()>& body);

// Text files a tool reads are capped at 64 MiB.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{64} << 20;

// The content of the text file `path` (base/file_io.h ReadRegularFile with
// kMaxTextFileBytes): a directory, FIFO, device (/dev/zero) or larger file
// is refused with a message naming it.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace lnpu::tools

#endif  // TOOLS_COMMON_TOOL_MAIN_H_
