// Support shared by the tests of the programs in tools/: a scratch
// directory for the whole test program, and running a tool as a child
// process with its output captured.
#ifndef TESTS_TOOLS_TOOL_TEST_SUPPORT_H_
#define TESTS_TOOLS_TOOL_TEST_SUPPORT_H_

#include <signal.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace lnpu::tools::testing {

// A directory created before the first test and removed after the last.
// Register one per test program:
//   ::testing::AddGlobalTestEnvironment(new TestDirectory("npu_eval_test"));
class TestDirectory : public ::testing::Environment {
 public:
  explicit TestDirectory(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override;
  void TearDown() override;

  // `name` inside the directory of the registered environment.
  static std::string Path(const std::string& name);

 private:
  std::string prefix_;
};

// What a finished tool printed and returned.
struct ToolRun {
  int exit_code = -1;  // -1 when it did not exit normally (or did not start)
  std::string out;
  std::string err;
};

// The command that runs a program of this build: in a cross build, meson
// test runs the test under the cross file's exe_wrapper (qemu-aarch64) and
// names it in $MESON_EXE_WRAPPER, which the programs the test starts need
// as well; empty in a native build. Split at spaces.
std::vector<std::string> ExeWrapper();

// Runs the program whose path is in environment variable `tool_env` (meson
// test sets it), under ExeWrapper(), with `args`, `input` on stdin, and stdout / stderr captured
// through files in the TestDirectory. Adds a test failure and returns a
// default ToolRun when the variable is unset or the program cannot start.
// Not thread-safe (the capture files are shared).
ToolRun RunTool(const char* tool_env, const std::vector<std::string>& args,
                const std::string& input = "");

// RunTool, with `signal` sent to the program `interrupt_after` it started
// (a test failure when it exited before).
ToolRun RunToolInterrupted(const char* tool_env, const std::vector<std::string>& args,
                           absl::Duration interrupt_after, const std::string& input = "",
                           int signal = SIGINT);

// The whole content of the file at `path` ("" when unreadable).
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace lnpu::tools::testing

#endif  // TESTS_TOOLS_TOOL_TEST_SUPPORT_H_
