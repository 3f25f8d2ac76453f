// Checks on user memory that a DRM_LNPU_BO_USERPTR import wraps: the
// software NPU's stand-in for the kernel's pin_user_pages(), which fails
// with EFAULT unless every page of the range is mapped with the access the
// device needs.
#ifndef KERNEL_IFACE_SOFTNPU_USER_MEMORY_H_
#define KERNEL_IFACE_SOFTNPU_USER_MEMORY_H_

#include <cstdint>

#include "absl/status/status.h"

namespace lnpu::softnpu {

// OK if every byte of [start, start + size) lies in a mapping of this
// process that is readable and, if `need_write`, writable (read from
// /proc/self/maps). Otherwise FailedPrecondition naming the first address
// that is not mapped, or not mapped with that access; Unavailable if the
// memory map cannot be read. `size` > 0 and start + size must not wrap.
absl::Status CheckUserMemory(uintptr_t start, uint64_t size, bool need_write);

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_USER_MEMORY_H_
