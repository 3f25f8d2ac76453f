#include "tools/npu-bench/cpu_contention.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace lnpu::bench {

absl::StatusOr<CpuContention> CpuContention::Start(int processes) {
  CpuContention contention;
  contention.start_ = std::chrono::steady_clock::now();
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = fork();
    if (pid < 0) {
      const int error = errno;
      contention.Stop();
      return absl::InternalError(absl::StrFormat(
          "--contention: cannot start competing process %d of %d: %s", i + 1, processes,
          std::strerror(error)));
    }
    if (pid == 0) {
      // The child only spins (no allocation, no locks: the parent may be
      // multi-threaded) until the parent kills it.
      volatile uint64_t counter = 0;
      for (;;) counter = counter + 1;
    }
    contention.children_.push_back(pid);
  }
  return contention;
}

CpuContention::CpuContention(CpuContention&& other) noexcept
    : children_(std::move(other.children_)),
      start_(other.start_),
      cores_used_(other.cores_used_) {
  other.children_.clear();
}

CpuContention::~CpuContention() { Stop(); }

double CpuContention::Stop() {
  if (children_.empty()) return cores_used_;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double cpu_seconds = 0;
  for (pid_t pid : children_) kill(pid, SIGKILL);
  for (pid_t pid : children_) {
    rusage usage{};
    int status = 0;
    while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    cpu_seconds += usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 +
                   usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
  }
  children_.clear();
  cores_used_ = wall > 0 ? cpu_seconds / wall : 0;
  return cores_used_;
}

double AvailableCpuShare(double competitor_cores, int online_cores, int compute_units) {
  const double free_cores = std::max(0.0, online_cores - competitor_cores);
  return std::min(1.0, free_cores / std::max(compute_units, 1));
}

}  // namespace lnpu::bench
