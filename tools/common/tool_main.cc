#include "tools/common/tool_main.h"

#include <cstdio>
#include <exception>

#include "base/file_io.h"
#include "base/interrupt.h"

namespace lnpu::tools {

int RunToolMain(const char* program, const std::function<int()>& body) {
  InstallInterruptHandlers();
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s (please report it)\n", program, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: internal error: unknown exception (please report it)\n", program);
  }
  return kInternalErrorExit;
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  return ReadRegularFile(path, kMaxTextFileBytes, "text file");
}

}  // namespace lnpu::tools
