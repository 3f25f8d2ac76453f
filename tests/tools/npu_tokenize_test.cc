// npu-tokenize as a program: runs the built binary ($LNPU_NPU_TOKENIZE) and
// checks its output and exit status.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tokenizer/gguf_vocabulary.h"

extern char** environ;

namespace lnpu {
namespace {

using ::testing::HasSubstr;

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs npu-tokenize with `args`, stdout and stderr to files in a scratch
// directory.
ProcessResult RunTool(const std::vector<std::string>& args) {
  const char* tool = std::getenv("LNPU_NPU_TOKENIZE");
  if (tool == nullptr) {
    ADD_FAILURE() << "LNPU_NPU_TOKENIZE is not set: run through meson test";
    return {};
  }
  const std::string dir = ::testing::TempDir();
  const std::string out_path = dir + "/npu_tokenize.out";
  const std::string err_path = dir + "/npu_tokenize.err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_storage = {tool};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, tool, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << tool << ": error " << spawned;
    return {};
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  ProcessResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadAll(out_path);
  result.err = ReadAll(err_path);
  return result;
}

std::string Stories() {
  return framework::testing::ModelPath("stories260K.gguf");
}

TEST(NpuTokenizeTest, StoriesWithBosAsLlamaCpp) {
  const ProcessResult r = RunTool({Stories(), "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  EXPECT_EQ(r.err, "");
}

TEST(NpuTokenizeTest, NoBos) {
  const ProcessResult r = RunTool({Stories(), "--no-bos", "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "403 407 261 378\n");
}

TEST(NpuTokenizeTest, TextFromFile) {
  const std::string path = ::testing::TempDir() + "/npu_tokenize_text.txt";
  std::ofstream(path, std::ios::binary) << "Once upon a time";
  const ProcessResult r = RunTool({Stories(), "--file", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  // TEXT after "--" may start with '-'.
  const ProcessResult dash = RunTool({Stories(), "--no-bos", "--", "-"});
  EXPECT_EQ(dash.exit_code, 0) << dash.err;
  EXPECT_FALSE(dash.out.empty());
}

TEST(NpuTokenizeTest, CompiledArtifactGivesTheSameIds) {
  const std::string artifact = ::testing::TempDir() + "/npu_tokenize.lnpu";
  compiler::CompileOptions options;
  options.max_prompt_len = 16;
  options.min_response_len = 8;
  options.prefill_chunks = {8};
  options.weights = compiler::CompileOptions::WeightType::kKeep;
  ASSERT_TRUE(compiler::CompileGguf(Stories(), artifact, options).ok());
  const ProcessResult r = RunTool({artifact, "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  std::filesystem::remove(artifact);
}

TEST(NpuTokenizeTest, Qwen2VocabVectors) {
  const std::string vocab =
      framework::testing::TestDataPath("vocab/ggml-vocab-qwen2.gguf");
  absl::StatusOr<std::vector<framework::testing::VocabTestCase>> cases =
      framework::testing::ReadVocabTestCases(vocab);
  ASSERT_TRUE(cases.ok()) << cases.status();
  int checked = 0;
  for (const auto& c : *cases) {
    // Three non-empty cases keep the test fast (each run loads the
    // 150k-token vocabulary); "--" lets texts start with '-'.
    if (c.text.empty() || checked == 3) continue;
    ++checked;
    const ProcessResult r = RunTool({vocab, "--", c.text});
    EXPECT_EQ(r.exit_code, 0) << c.text << ": " << r.err;
    // Qwen2 adds no BOS.
    EXPECT_EQ(r.out, absl::StrJoin(c.ids, " ") + "\n") << c.text;
  }
  EXPECT_EQ(checked, 3);
}

TEST(NpuTokenizeTest, InvalidUtf8FailsNamingTheOffset) {
  const ProcessResult r = RunTool({Stories(), "ok \xC3\x28"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("UTF-8"));
  EXPECT_THAT(r.err, HasSubstr("offset 3"));
}

TEST(NpuTokenizeTest, MissingFilesAndBadCommandLinesFail) {
  const struct {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"/nonexistent/model.gguf", "text"}, "/nonexistent/model.gguf"},
      {{Stories(), "--file", "/nonexistent/text.txt"}, "/nonexistent/text.txt"},
      {{Stories()}, "either TEXT or --file"},
      {{Stories(), "a", "b"}, "unexpected argument 'b'"},
      {{Stories(), "--bogus", "a"}, "unknown option --bogus"},
      {{}, "missing MODEL"},
  };
  for (const auto& c : cases) {
    const ProcessResult r = RunTool(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.message;
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  // A file that is neither kind of model.
  const std::string not_a_model = ::testing::TempDir() + "/npu_tokenize.bin";
  std::ofstream(not_a_model, std::ios::binary) << "not a model at all";
  const ProcessResult r = RunTool({not_a_model, "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("neither a GGUF model nor an .lnpu artifact"));
}

TEST(NpuTokenizeTest, Help) {
  const ProcessResult r = RunTool({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: npu-tokenize MODEL TEXT"));
}

}  // namespace
}  // namespace lnpu
