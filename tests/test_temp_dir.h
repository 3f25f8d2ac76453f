// Temporary files of the test programs: every file a test writes goes in
// one directory of the running process under ::testing::TempDir(), so test
// programs running at the same time (two build directories, meson's
// parallel suites) never share a file, and the directory is removed with
// its contents when the process exits, so runs leave nothing behind.
#ifndef TESTS_TEST_TEMP_DIR_H_
#define TESTS_TEST_TEMP_DIR_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace lnpu::testing {

// The process's directory, created on first use, ending in '/'. Removed at
// exit by the process that created it only (a death test's child that
// calls exit() leaves it to its parent). Thread-safe.
inline const std::string& ProcessTempDir() {
  static const pid_t creator = ::getpid();
  static const std::string* const dir = [] {
    std::string pattern = ::testing::TempDir() + "lnpu_test.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "cannot create a temporary directory " << pattern;
      return new std::string(::testing::TempDir());
    }
    std::atexit([] {
      if (::getpid() != creator) return;
      std::error_code ignored;
      std::filesystem::remove_all(*dir, ignored);
    });
    return new std::string(pattern + "/");
  }();
  return *dir;
}

// ProcessTempDir() + "<test suite>_<test>_<name>": unique to the running
// test ('/' of parameterized names becomes '_'; just <name> outside a test).
inline std::string TestTempPath(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test;
  if (info != nullptr) {
    test = std::string(info->test_suite_name()) + "_" + info->name() + "_";
    for (char& c : test) {
      if (c == '/') c = '_';  // parameterized tests: "Prefix/Suite", "Name/Param"
    }
  }
  return ProcessTempDir() + test + name;
}

}  // namespace lnpu::testing

#endif  // TESTS_TEST_TEMP_DIR_H_
