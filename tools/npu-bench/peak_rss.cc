#include "tools/npu-bench/peak_rss.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace lnpu::bench {

absl::StatusOr<double> ParsePeakRssMiB(absl::string_view proc_status) {
  for (absl::string_view line : absl::StrSplit(proc_status, '\n')) {
    if (!absl::ConsumePrefix(&line, "VmHWM:")) continue;
    line = absl::StripAsciiWhitespace(line);
    uint64_t kib = 0;
    if (!absl::ConsumeSuffix(&line, "kB") ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib)) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed VmHWM line in the process status: \"", line, "\""));
    }
    return kib / 1024.0;
  }
  return absl::InvalidArgumentError("the process status has no VmHWM line (not Linux /proc?)");
}

absl::StatusOr<double> ReadPeakRssMiB() {
  std::ifstream file("/proc/self/status");
  if (!file) return absl::UnavailableError("cannot read /proc/self/status for the peak RSS");
  std::stringstream text;
  text << file.rdbuf();
  return ParsePeakRssMiB(text.str());
}

absl::Status ResetPeakRss() {
  const int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  const bool written = fd >= 0 && write(fd, "5", 1) == 1;
  const int error = errno;
  if (fd >= 0) close(fd);
  if (!written) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot reset the peak RSS (/proc/self/clear_refs: ", std::strerror(error),
                     ")"));
  }
  return absl::OkStatus();
}

}  // namespace lnpu::bench
