// A private temporary directory of a program, removed with its content on
// destruction. Not thread-safe; distinct instances are independent.
#ifndef TOOLS_COMMON_TEMP_DIRECTORY_H_
#define TOOLS_COMMON_TEMP_DIRECTORY_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace lnpu::tools {

class TempDirectory {
 public:
  // Makes "`prefix`.XXXXXX" under `parent` (empty: $TMPDIR, else /tmp).
  // Unavailable, naming the path and the reason, when that fails.
  static absl::StatusOr<std::unique_ptr<TempDirectory>> Create(std::string_view prefix,
                                                               std::string parent = "");
  ~TempDirectory();
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit TempDirectory(std::string path) : path_(std::move(path)) {}
  const std::string path_;
};

}  // namespace lnpu::tools

#endif  // TOOLS_COMMON_TEMP_DIRECTORY_H_
