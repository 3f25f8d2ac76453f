#include "tools/npu-bench/peak_rss.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_io.h"

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
  constexpr char kPath[] = "/proc/self/clear_refs";
  const int fd = open(kPath, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot reset the peak RSS through", kPath);
  const bool written = write(fd, "5", 1) == 1;
  const int error = errno;
  close(fd);
  if (!written) return ErrnoError(error, "cannot reset the peak RSS through", kPath);
  return absl::OkStatus();
}

}  // namespace lnpu::bench
