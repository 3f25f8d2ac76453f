#include "kernel_iface/driver/fence_fd.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace lnpu {

FenceFd::FenceFd(FenceFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FenceFd& FenceFd::operator=(FenceFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FenceFd::~FenceFd() {
  if (fd_ >= 0) close(fd_);
}

int FenceFd::Release() { return std::exchange(fd_, -1); }

absl::Status FenceFd::Wait(absl::Time deadline) const {
  if (fd_ < 0) return absl::FailedPreconditionError("FenceFd::Wait on an empty FenceFd");
  while (true) {
    // poll's timeout is int milliseconds: wait in pieces up to the deadline.
    const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
    const int64_t ms = std::min<int64_t>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), 60'000);
    pollfd entry{fd_, POLLIN, 0};
    const int ready = poll(&entry, 1, static_cast<int>(ms));
    if (ready > 0) {
      if ((entry.revents & (POLLIN | POLLHUP)) != 0) return absl::OkStatus();
      return absl::InternalError(absl::StrCat("poll on fence descriptor ", fd_,
                                              " reported events 0x", absl::Hex(entry.revents)));
    }
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(
          absl::StrCat("poll on fence descriptor ", fd_, " failed: ", std::strerror(errno)));
    }
    if (ready == 0 && absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the job of fence descriptor ", fd_, " did not end before the deadline"));
    }
  }
}

}  // namespace lnpu
