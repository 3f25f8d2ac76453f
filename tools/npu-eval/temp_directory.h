// A private temporary directory, removed with its content on destruction.
// Not thread-safe; distinct instances are independent.
#ifndef TOOLS_NPU_EVAL_TEMP_DIRECTORY_H_
#define TOOLS_NPU_EVAL_TEMP_DIRECTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace lnpu::eval {

class TempDirectory {
 public:
  // Makes "npu-eval.XXXXXX" under `parent` (empty: $TMPDIR, else /tmp).
  // Unavailable, naming the path and the reason, when that fails.
  static absl::StatusOr<std::unique_ptr<TempDirectory>> Create(std::string parent = "");
  ~TempDirectory();
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit TempDirectory(std::string path) : path_(std::move(path)) {}
  const std::string path_;
};

}  // namespace lnpu::eval

#endif  // TOOLS_NPU_EVAL_TEMP_DIRECTORY_H_
