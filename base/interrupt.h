// SIGINT and SIGTERM for the tools: temporary files are removed, and work
// that can stop cleanly does.
//
// InstallInterruptHandlers() (once, at a tool's start) makes both signals:
//   - inside an InterruptScope: set InterruptRequested() and return, so the
//     scope's owner stops at its next clean point (e.g. npu-llm ends
//     generation at a token boundary, prints its summary, saves the session
//     it was asked to save and exits with InterruptExitCode());
//   - otherwise, and on a second signal: unlink every registered temporary
//     file and _exit(128 + signal number) at once.
// Thread-safety: all functions may be called from any thread; the handler
// is async-signal-safe.
#ifndef LNPU_BASE_INTERRUPT_H_
#define LNPU_BASE_INTERRUPT_H_

#include <string>

namespace lnpu {

void InstallInterruptHandlers();

// True once SIGINT or SIGTERM arrived inside an InterruptScope.
bool InterruptRequested();
// 128 + the number of the signal that arrived (130 for SIGINT), 0 if none.
int InterruptExitCode();

// While an InterruptScope lives, the first signal only sets
// InterruptRequested(). Scopes nest.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// Registers `path` to be unlinked if the process is killed by the handler.
// Returns a slot for UnregisterTemporaryFile, or -1 when all 32 slots are
// taken (the file is then not cleaned up on a signal) or the path is longer
// than 4095 bytes. UnregisterTemporaryFile(-1) does nothing.
int RegisterTemporaryFile(const std::string& path);
void UnregisterTemporaryFile(int slot);

}  // namespace lnpu

#endif  // LNPU_BASE_INTERRUPT_H_
