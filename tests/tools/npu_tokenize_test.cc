// npu-tokenize as a program: runs the built binary ($LNPU_NPU_TOKENIZE) and
// checks its output and exit status.
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
#include "tests/tools/tool_test_support.h"

namespace lnpu {
namespace {

using ::testing::HasSubstr;

using tools::testing::TestDirectory;
using tools::testing::ToolRun;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("npu_tokenize_test"));

// Runs npu-tokenize with `args`.
ToolRun RunTokenize(const std::vector<std::string>& args) {
  return tools::testing::RunTool("LNPU_NPU_TOKENIZE", args);
}

std::string Stories() {
  return framework::testing::ModelPath("stories260K.gguf");
}

TEST(NpuTokenizeTest, StoriesWithBosAsLlamaCpp) {
  const ToolRun r = RunTokenize({Stories(), "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  EXPECT_EQ(r.err, "");
}

TEST(NpuTokenizeTest, NoBos) {
  const ToolRun r = RunTokenize({Stories(), "--no-bos", "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "403 407 261 378\n");
}

TEST(NpuTokenizeTest, TextFromFile) {
  const std::string path = TestDirectory::Path("text.txt");
  std::ofstream(path, std::ios::binary) << "Once upon a time";
  const ToolRun r = RunTokenize({Stories(), "--file", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  // TEXT after "--" may start with '-'.
  const ToolRun dash = RunTokenize({Stories(), "--no-bos", "--", "-"});
  EXPECT_EQ(dash.exit_code, 0) << dash.err;
  EXPECT_FALSE(dash.out.empty());
}

TEST(NpuTokenizeTest, CompiledArtifactGivesTheSameIds) {
  const std::string artifact = TestDirectory::Path("model.lnpu");
  compiler::CompileOptions options;
  options.max_prompt_len = 16;
  options.min_response_len = 8;
  options.prefill_chunks = {8};
  options.weights = compiler::CompileOptions::WeightType::kKeep;
  ASSERT_TRUE(compiler::CompileGguf(Stories(), artifact, options).ok());
  const ToolRun r = RunTokenize({artifact, "Once upon a time"});
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
    const ToolRun r = RunTokenize({vocab, "--", c.text});
    EXPECT_EQ(r.exit_code, 0) << c.text << ": " << r.err;
    // Qwen2 adds no BOS.
    EXPECT_EQ(r.out, absl::StrJoin(c.ids, " ") + "\n") << c.text;
  }
  EXPECT_EQ(checked, 3);
}

TEST(NpuTokenizeTest, InvalidUtf8FailsNamingTheOffset) {
  const ToolRun r = RunTokenize({Stories(), "ok \xC3\x28"});
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
    const ToolRun r = RunTokenize(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.message;
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  // A file that is neither kind of model.
  const std::string not_a_model = TestDirectory::Path("not_a_model.bin");
  std::ofstream(not_a_model, std::ios::binary) << "not a model at all";
  const ToolRun r = RunTokenize({not_a_model, "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("neither a GGUF model nor an .lnpu artifact"));
}

TEST(NpuTokenizeTest, Help) {
  const ToolRun r = RunTokenize({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: npu-tokenize MODEL TEXT"));
}

}  // namespace
}  // namespace lnpu
