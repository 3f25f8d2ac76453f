#include "kernel_iface/softnpu/doorbell.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lnpu::softnpu {
namespace {

// Reads and discards a readable eventfd's or timerfd's count; nothing when
// it is not readable (both are non-blocking).
void Drain(int fd) {
  uint64_t count;
  while (read(fd, &count, sizeof count) < 0 && errno == EINTR) {
  }
}

itimerspec OneShotAt(MonotonicClock::time_point when) {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
  itimerspec spec{};
  if (ns <= 0) {
    // A zero it_value would disarm the timer; 1 ns has passed as well.
    spec.it_value.tv_nsec = 1;
  } else {
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  return spec;
}

}  // namespace

absl::StatusOr<Doorbell> Doorbell::Create() {
  const int ring_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (ring_fd < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an engine's doorbell (eventfd): ", std::strerror(errno)));
  }
  // libstdc++'s steady_clock is CLOCK_MONOTONIC (wait_queue.h).
  const int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (timer_fd < 0) {
    const int err = errno;
    close(ring_fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an engine's doorbell (timerfd): ", std::strerror(err)));
  }
  return Doorbell(ring_fd, timer_fd);
}

Doorbell::Doorbell(Doorbell&& other) noexcept
    : ring_fd_(std::exchange(other.ring_fd_, -1)), timer_fd_(std::exchange(other.timer_fd_, -1)) {}

Doorbell::~Doorbell() {
  if (ring_fd_ >= 0) close(ring_fd_);
  if (timer_fd_ >= 0) close(timer_fd_);
}

void Doorbell::Ring() {
  const uint64_t one = 1;
  // Cannot fail short of the counter's 2^64 - 2 limit, which Wait's drain
  // keeps far away.
  while (write(ring_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void Doorbell::RingAt(MonotonicClock::time_point when) {
  const itimerspec spec = OneShotAt(when);
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void Doorbell::Cancel() {
  const itimerspec disarm{};
  timerfd_settime(timer_fd_, 0, &disarm, nullptr);
}

void Doorbell::Wait() {
  pollfd fds[2] = {{.fd = ring_fd_, .events = POLLIN, .revents = 0},
                   {.fd = timer_fd_, .events = POLLIN, .revents = 0}};
  while (poll(fds, 2, -1) < 0 && errno == EINTR) {
  }
  if (fds[0].revents != 0) Drain(ring_fd_);
  if (fds[1].revents != 0) Drain(timer_fd_);
}

}  // namespace lnpu::softnpu
