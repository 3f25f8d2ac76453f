// Helpers of the runtime tests on the software NPU.
#ifndef TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
#define TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "tests/test_temp_dir.h"

namespace lnpu::runtime::testing {

// The bundled models (LNPU_MODELS_DIR, set by meson test).
inline std::string ModelsDir() {
  const char* dir = std::getenv("LNPU_MODELS_DIR");
  return dir ? dir : "models";
}

// A new directory in the process's temporary directory (removed at exit).
inline std::string NewTempDir() {
  std::string pattern = lnpu::testing::ProcessTempDir() + "dir_XXXXXX";
  const char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return pattern;
}

// A test suite's directory and the artifact it compiles there: created by
// SetUpTestSuite, deleted by TearDownTestSuite. Deleting removes the
// artifact, then the directory (which stays if a test left files in it).
struct SuiteArtifact {
  explicit SuiteArtifact(const std::string& artifact_name)
      : dir(NewTempDir()), path(dir + "/" + artifact_name) {}
  ~SuiteArtifact() {
    std::remove(path.c_str());
    std::remove(dir.c_str());
  }
  SuiteArtifact(const SuiteArtifact&) = delete;
  SuiteArtifact& operator=(const SuiteArtifact&) = delete;

  const std::string dir;
  const std::string path;  // not written here: the suite compiles it
};

// Largest |a - b| relative to the largest |b|.
inline double RelativeDifference(absl::Span<const float> a, absl::Span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(double{a[i]} - b[i]));
    scale = std::max(scale, std::fabs(double{b[i]}));
  }
  return diff / scale;
}

// The greedy token of `logits`.
inline int32_t Argmax(absl::Span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace lnpu::runtime::testing

#endif  // TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
