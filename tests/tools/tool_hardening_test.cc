// What a careless or hostile user can type at the tools: directories and
// endless files as inputs, FIFOs and the model itself as outputs, a broken
// vocabulary, interrupts in the middle of work, empty prompts, bad chat
// lines. Each program must answer with a message and exit status 1 (130 for
// SIGINT), never abort, replace what it must not, or leave temporaries.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/gguf/gguf_writer.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/tool_test_support.h"

namespace lnpu {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using tools::testing::ReadFileOrEmpty;
using tools::testing::RunTool;
using tools::testing::RunToolInterrupted;
using tools::testing::TestDirectory;
using tools::testing::ToolRun;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("tool_hardening_test"));

std::string ModelsDir() {
  const char* dir = std::getenv("LNPU_MODELS_DIR");
  return dir != nullptr ? dir : "models";
}
std::string StoriesGguf() { return ModelsDir() + "/stories260K.gguf"; }

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// stories260K compiled once for the tests that need an artifact.
const std::string& StoriesArtifact() {
  static const std::string* path = [] {
    auto* p = new std::string(TestDirectory::Path("stories.lnpu"));
    compiler::CompileOptions options;
    options.max_prompt_len = 64;
    options.min_response_len = 64;
    options.prefill_chunks = {16};
    EXPECT_TRUE(compiler::CompileGguf(StoriesGguf(), *p, options).ok());
    return p;
  }();
  return *path;
}

// Every file in the test directory whose name contains `part`.
std::vector<std::string> FilesContaining(const std::string& part) {
  std::vector<std::string> found;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(TestDirectory::Path("")))) {
    const std::string name = entry.path().filename().string();
    if (name.find(part) != std::string::npos) found.push_back(name);
  }
  return found;
}

void ExpectCleanFailure(const ToolRun& run, const std::string& what) {
  EXPECT_EQ(run.exit_code, 1) << what << ": " << run.err;
  EXPECT_FALSE(run.err.empty()) << what;
  EXPECT_THAT(run.err, Not(HasSubstr("internal error"))) << what;
}

TEST(ToolHardeningTest, DirectoriesAndEndlessFilesAreRefusedByEveryTool) {
  const std::string dir = TestDirectory::Path("");
  const std::string out = TestDirectory::Path("out.lnpu");
  for (const std::string& input : {dir, std::string("/dev/zero")}) {
    ExpectCleanFailure(RunTool("LNPU_NPU_COMPILE", {input, "-o", out}), "npu-compile " + input);
    ExpectCleanFailure(RunTool("LNPU_NPU_LLM", {"-m", input, "-p", "x"}), "npu-llm " + input);
    ExpectCleanFailure(RunTool("LNPU_NPU_BENCH", {"-m", input}), "npu-bench " + input);
    ExpectCleanFailure(RunTool("LNPU_NPU_EVAL", {input}), "npu-eval " + input);
    ExpectCleanFailure(RunTool("LNPU_NPU_TOKENIZE", {input, "x"}), "npu-tokenize " + input);
    ExpectCleanFailure(RunTool("LNPU_NPU_TOKENIZE", {StoriesGguf(), "--file", input}),
                       "npu-tokenize --file " + input);
    ExpectCleanFailure(RunTool("LNPU_NPU_EVAL", {StoriesGguf(), "--file", input}),
                       "npu-eval --file " + input);
    ExpectCleanFailure(
        RunTool("LNPU_NPU_LLM", {"-m", StoriesArtifact(), "-p", "x", "--load-session", input}),
        "npu-llm --load-session " + input);
    ExpectCleanFailure(RunTool("LNPU_NPU_INFO", {"--device", input}), "npu-info " + input);
  }
  const ToolRun tokenize = RunTool("LNPU_NPU_TOKENIZE", {StoriesGguf(), "--file", "/dev/zero"});
  EXPECT_THAT(tokenize.err, HasSubstr("is a character device"));
  const ToolRun session =
      RunTool("LNPU_NPU_LLM", {"-m", StoriesArtifact(), "-p", "x", "--load-session", dir});
  EXPECT_THAT(session.err, HasSubstr("is a directory"));
  EXPECT_EQ(session.out, "");
}

TEST(ToolHardeningTest, OutputsThatAreNotRegularFilesAreNeverReplaced) {
  const std::string fifo = TestDirectory::Path("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const ToolRun compile = RunTool("LNPU_NPU_COMPILE", {StoriesGguf(), "-o", fifo});
  ExpectCleanFailure(compile, "npu-compile -o FIFO");
  EXPECT_THAT(compile.err, HasSubstr("it is a FIFO"));
  const ToolRun save =
      RunTool("LNPU_NPU_LLM", {"-m", StoriesArtifact(), "-p", "Once", "-n", "4",
                               "--save-session", fifo});
  ExpectCleanFailure(save, "npu-llm --save-session FIFO");
  EXPECT_EQ(save.out, "");  // refused before generating anything
  struct stat st;
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  std::remove(fifo.c_str());
}

// A trace is written when the run ends (for npu-serve at shutdown, maybe
// hours later); a path that cannot take it is refused before any work, not
// after it.
TEST(ToolHardeningTest, TracesThatCouldNotBeWrittenAreRefusedBeforeAnyWork) {
  const std::string trace = TestDirectory::Path("no/such/dir/trace.json");
  const ToolRun llm = RunTool("LNPU_NPU_LLM", {"-m", StoriesArtifact(), "-p", "Once", "-n", "4",
                                               "--trace", trace});
  ExpectCleanFailure(llm, "npu-llm --trace");
  EXPECT_THAT(llm.err, HasSubstr("cannot write the trace file into directory"));
  EXPECT_EQ(llm.out, "");
  const ToolRun bench =
      RunTool("LNPU_NPU_BENCH", {"-m", StoriesArtifact(), "--device", "soft", "--reps", "1",
                                 "--warmups", "0", "--prompt-lengths", "4", "--fills", "0",
                                 "--decode-steps", "2", "--bandwidth-mib", "8", "--trace", trace});
  ExpectCleanFailure(bench, "npu-bench --trace");
  EXPECT_THAT(bench.err, HasSubstr("cannot write the trace file into directory"));
  EXPECT_EQ(bench.out, "");  // nothing measured
  // A model that does not exist: the server would report that after it
  // started listening; the trace is refused first.
  const ToolRun serve = RunTool("LNPU_NPU_SERVE", {"-m", TestDirectory::Path("none.lnpu"),
                                                   "--port", "0", "--trace", trace});
  ExpectCleanFailure(serve, "npu-serve --trace");
  EXPECT_THAT(serve.err, HasSubstr("cannot write the trace file into directory"));
  EXPECT_THAT(serve.err, Not(HasSubstr("listening on")));
  EXPECT_THAT(serve.err, Not(HasSubstr("cannot load")));
}

TEST(ToolHardeningTest, SavingTheSessionOverTheModelIsRefused) {
  const std::string model = TestDirectory::Path("own.lnpu");
  std::filesystem::copy_file(StoriesArtifact(), model);
  const std::string before = ReadFileOrEmpty(model);
  const ToolRun save = RunTool(
      "LNPU_NPU_LLM", {"-m", model, "-p", "Once", "-n", "5", "--save-session", model});
  ExpectCleanFailure(save, "npu-llm --save-session MODEL");
  EXPECT_THAT(save.err, HasSubstr("would destroy the input"));
  EXPECT_EQ(ReadFileOrEmpty(model), before);
  // Through a hard link as well.
  const std::string link = TestDirectory::Path("own.link");
  ASSERT_EQ(::link(model.c_str(), link.c_str()), 0);
  ExpectCleanFailure(RunTool("LNPU_NPU_LLM", {"-m", model, "-p", "Once", "-n", "5",
                                              "--save-session", link}),
                     "npu-llm --save-session LINK");
  EXPECT_EQ(ReadFileOrEmpty(model), before);
}

TEST(ToolHardeningTest, ACompileNeverWritesAnArtifactWhoseTokenizerWouldNotLoad) {
  // A vocabulary whose tokens are all "a": its byte tokens are misspelled.
  gguf::GgufWriter vocabulary;
  std::vector<int32_t> types(300, 1);
  for (int i = 0; i < 3; ++i) types[i] = 3;
  for (int i = 3; i < 259; ++i) types[i] = 6;
  vocabulary.SetString("tokenizer.ggml.model", "llama");
  vocabulary.SetStringArray("tokenizer.ggml.tokens", std::vector<std::string>(300, "a"));
  vocabulary.SetFloat32Array("tokenizer.ggml.scores", std::vector<float>(300, 0.0f));
  vocabulary.SetInt32Array("tokenizer.ggml.token_type", types);
  const std::string vocab_path = TestDirectory::Path("all_a.vocab.gguf");
  ASSERT_TRUE(vocabulary.Write(vocab_path).ok());
  synthetic::RandomLlamaSpec spec;
  spec.vocabulary_gguf = vocab_path;
  spec.vocab_size = 0;
  const std::string gguf_path = TestDirectory::Path("all_a.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  const std::string out = TestDirectory::Path("all_a.lnpu");
  const ToolRun compile = RunTool("LNPU_NPU_COMPILE", {gguf_path, "-o", out});
  ExpectCleanFailure(compile, "npu-compile with a broken vocabulary");
  EXPECT_THAT(compile.err, HasSubstr("the tokenizer would not load"));
  EXPECT_THAT(compile.err, HasSubstr("byte token"));
  EXPECT_FALSE(Exists(out));
  EXPECT_FALSE(Exists(out + ".tmp"));
}

TEST(ToolHardeningTest, InterruptedCompileLeavesNoTemporaryFiles) {
  // The synthetic qwen2.5-0.5b takes far longer than a second to write.
  const std::string out = TestDirectory::Path("interrupted.lnpu");
  const ToolRun run = RunToolInterrupted(
      "LNPU_NPU_COMPILE",
      {"--synthetic", "qwen2.5-0.5b", "-o", out, "--models-dir", ModelsDir()},
      absl::Seconds(1));
  EXPECT_EQ(run.exit_code, 130) << run.err;
  EXPECT_THAT(FilesContaining("interrupted"), ::testing::IsEmpty());
}

TEST(ToolHardeningTest, InterruptedGenerationStopsCleanlySavesAndExits130) {
  const std::string session = TestDirectory::Path("interrupted.session");
  const ToolRun run = RunToolInterrupted(
      "LNPU_NPU_LLM",
      {"-m", StoriesArtifact(), "-p", "Once upon a time", "-n", "100000000", "--context", "ring",
       "--save-session", session},
      absl::Milliseconds(1500));
  EXPECT_EQ(run.exit_code, 130) << run.err;
  EXPECT_THAT(run.out, HasSubstr("Once upon a time"));
  EXPECT_THAT(run.err, AllOf(HasSubstr("finish: cancelled"), HasSubstr("[saved "),
                             HasSubstr("peak RSS")));
  // The saved session loads and continues.
  const ToolRun resumed = RunTool(
      "LNPU_NPU_LLM", {"-m", StoriesArtifact(), "--context", "ring", "--load-session", session,
                       "-p", " The end.", "-n", "4"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("[loaded "));
}

TEST(ToolHardeningTest, AnEmptyPromptGeneratesFromBos) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-m", StoriesArtifact(), "-p", "", "-n", "8"},
        std::vector<std::string>{"-m", StoriesArtifact(), "-n", "8"}}) {
    const ToolRun run = RunTool("LNPU_NPU_LLM", args);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_FALSE(run.out.empty());
    EXPECT_THAT(run.err, HasSubstr("generated 8 tokens"));
  }
}

TEST(ToolHardeningTest, ChatReportsABadLineAndKeepsReading) {
  const ToolRun run = RunTool("LNPU_NPU_LLM",
                              {"chat", "-m", StoriesArtifact(), "-n", "4"},
                              "bad \xff\xfe line\nOnce upon a time\n");
  EXPECT_EQ(run.exit_code, 1) << run.err;  // one line failed
  EXPECT_THAT(run.err, HasSubstr("UTF-8"));
  EXPECT_THAT(run.err, HasSubstr("generated 4 tokens"));  // the next line ran
}

TEST(ToolHardeningTest, BadSettingsFailBeforeThePromptIsEchoed) {
  const ToolRun run =
      RunTool("LNPU_NPU_LLM", {"-m", StoriesArtifact(), "-p", "Once", "--top-p", "3"});
  ExpectCleanFailure(run, "npu-llm --top-p 3");
  EXPECT_EQ(run.out, "");
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "Once upon a time ";
  const ToolRun too_long = RunTool("LNPU_NPU_LLM", {"-m", StoriesArtifact(), "-p", long_prompt});
  ExpectCleanFailure(too_long, "npu-llm with a prompt over the compiled limit");
  EXPECT_EQ(too_long.out, "");
}

}  // namespace
}  // namespace lnpu
