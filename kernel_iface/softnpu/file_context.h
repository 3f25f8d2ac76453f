// FileContext: the part of an open file that its jobs share with it (the
// kernel's per-file driver context). Jobs may outlive the file that
// submitted them, so both hold it by shared_ptr.
//
// Thread-safety: all members are safe to use concurrently.
#ifndef KERNEL_IFACE_SOFTNPU_FILE_CONTEXT_H_
#define KERNEL_IFACE_SOFTNPU_FILE_CONTEXT_H_

#include <atomic>

#include "kernel_iface/softnpu/wait_queue.h"

namespace lnpu::softnpu {

struct FileContext {
  // Set when one of the file's jobs exceeded the job timeout. A banned
  // context runs no further job: queued ones are cancelled and SUBMIT fails
  // with ECANCELED; the application has to open the device again.
  std::atomic<bool> banned{false};
  // Woken whenever a fence of this file signals (WAIT sleeps here).
  WaitQueue fence_waiters;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_FILE_CONTEXT_H_
