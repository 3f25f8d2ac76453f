#ifndef LNPU_TESTS_GGUF_GGUF_TEST_UTIL_H_
#define LNPU_TESTS_GGUF_GGUF_TEST_UTIL_H_

// Paths and file helpers shared by the GGUF tests.

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_temp_dir.h"

namespace lnpu::gguf::testing {

// $LNPU_MODELS_DIR/<name>, or "" (the test then fails) if unset.
inline std::string ModelPath(const std::string& name) {
  const char* dir = std::getenv("LNPU_MODELS_DIR");
  EXPECT_NE(dir, nullptr) << "LNPU_MODELS_DIR is not set: run the test through meson";
  return dir == nullptr ? "" : std::string(dir) + "/" + name;
}

// $LNPU_TEST_DATA/<name>, or "" (the test then fails) if unset.
inline std::string TestDataPath(const std::string& name) {
  const char* dir = std::getenv("LNPU_TEST_DATA");
  EXPECT_NE(dir, nullptr) << "LNPU_TEST_DATA is not set: run the test through meson";
  return dir == nullptr ? "" : std::string(dir) + "/" + name;
}

// A path in the test's temporary directory, unique to the running test.
inline std::string TempPath(const std::string& name) { return lnpu::testing::TestTempPath(name); }

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace lnpu::gguf::testing

#endif  // LNPU_TESTS_GGUF_GGUF_TEST_UTIL_H_
