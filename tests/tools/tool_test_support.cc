#include "tests/tools/tool_test_support.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/test_temp_dir.h"

extern char** environ;

namespace lnpu::tools::testing {
namespace {

std::string& DirectoryPath() {
  static std::string path;
  return path;
}

}  // namespace

std::vector<std::string> ExeWrapper() {
  const char* wrapper = std::getenv("MESON_EXE_WRAPPER");
  if (wrapper == nullptr) return {};
  return absl::StrSplit(wrapper, ' ', absl::SkipEmpty());
}

void TestDirectory::SetUp() {
  std::string pattern = lnpu::testing::ProcessTempDir() + prefix_ + ".XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr) << "cannot create " << pattern;
  DirectoryPath() = pattern;
}

void TestDirectory::TearDown() { std::filesystem::remove_all(DirectoryPath()); }

std::string TestDirectory::Path(const std::string& name) {
  return DirectoryPath() + "/" + name;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ToolRun RunTool(const char* tool_env, const std::vector<std::string>& args,
                const std::string& input) {
  return RunToolInterrupted(tool_env, args, absl::InfiniteDuration(), input);
}

ToolRun RunToolInterrupted(const char* tool_env, const std::vector<std::string>& args,
                           absl::Duration interrupt_after, const std::string& input,
                           int signal) {
  const char* tool = std::getenv(tool_env);
  if (tool == nullptr) {
    ADD_FAILURE() << tool_env << " is not set: run through meson test";
    return {};
  }
  const std::string in_path = TestDirectory::Path("tool.stdin");
  const std::string out_path = TestDirectory::Path("tool.stdout");
  const std::string err_path = TestDirectory::Path("tool.stderr");
  std::ofstream(in_path, std::ios::binary) << input;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_storage = ExeWrapper();
  argv_storage.push_back(tool);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << argv_storage[0] << ": error " << spawned;
    return {};
  }
  int status = 0;
  if (interrupt_after != absl::InfiniteDuration()) {
    // Poll for an early exit, then send the signal.
    const absl::Time deadline = absl::Now() + interrupt_after;
    while (absl::Now() < deadline) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        ADD_FAILURE() << tool << " exited before it could be interrupted";
        ToolRun early;
        early.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        early.out = ReadFileOrEmpty(out_path);
        early.err = ReadFileOrEmpty(err_path);
        return early;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    kill(pid, signal);
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ToolRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadFileOrEmpty(out_path);
  run.err = ReadFileOrEmpty(err_path);
  return run;
}

}  // namespace lnpu::tools::testing
