#include "tools/common/temp_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lnpu::tools {

absl::StatusOr<std::unique_ptr<TempDirectory>> TempDirectory::Create(std::string_view prefix,
                                                                      std::string parent) {
  if (parent.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    parent = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  std::string pattern = parent + "/" + std::string(prefix) + ".XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot create a temporary directory ", pattern,
                                               ": ", std::strerror(errno),
                                               "; set TMPDIR to a writable directory"));
  }
  return std::unique_ptr<TempDirectory>(new TempDirectory(std::move(pattern)));
}

TempDirectory::~TempDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace lnpu::tools
