// Helpers shared by the artifact and compiler tests.
#ifndef TESTS_ARTIFACT_ARTIFACT_TEST_UTIL_H_
#define TESTS_ARTIFACT_ARTIFACT_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler_artifacts/format/model_generated.h"

namespace lnpu::artifact::testing {

// models/stories260K.gguf (via LNPU_MODELS_DIR).
std::string Stories260KPath();
// A fresh path `name` in a per-test temporary directory.
std::string TempPath(const std::string& name);
bool FileExists(const std::string& path);

std::vector<uint8_t> ReadFileBytes(const std::string& path);
void WriteFileBytes(const std::string& path, const std::vector<uint8_t>& bytes);

// Copies the valid artifact `src` to `dst` with its metadata changed by
// `mutate` (through the flatbuffers object API) and everything else,
// header CRCs included, consistent: only the semantic checks can object.
void RewriteModel(const std::string& src, const std::string& dst,
                  const std::function<void(fb::ModelT&)>& mutate);

}  // namespace lnpu::artifact::testing

#endif  // TESTS_ARTIFACT_ARTIFACT_TEST_UTIL_H_
