// libFuzzer target: arbitrary ioctl programs (tests/fuzz/ioctl_program.h)
// against the software NPU. A crash, a sanitizer report, a hang (libFuzzer's
// -timeout) or a broken UAPI contract (reported here, then abort) is a
// finding. Built only with -Dfuzz=true and clang; see tests/fuzz/README.md.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/types/span.h"
#include "tests/fuzz/ioctl_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lnpu::fuzz::ProgramReport report =
      lnpu::fuzz::RunIoctlProgram(absl::MakeConstSpan(data, size));
  if (!report.violation.empty()) {
    std::fprintf(stderr, "UAPI contract broken after %llu operations: %s\n",
                 static_cast<unsigned long long>(report.operations),
                 report.violation.c_str());
    std::abort();
  }
  return 0;
}
