// `npu-llm chat` as a program ($LNPU_NPU_LLM): a small random-weight qwen2
// model with the real qwen2 vocabulary and ChatML template, two user turns
// on stdin; checks the replies, the exit status, and (--verbose-prompt) the
// prompt token ids the model was given.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/tool_test_support.h"

namespace lnpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr int32_t kImStart = 151644;
constexpr int32_t kImEnd = 151645;
constexpr int32_t kNewline = 198;    // "\n" ("Ċ")
constexpr int32_t kUser = 872;       // "user"
constexpr int32_t kAssistant = 77091;  // "assistant"
constexpr int32_t kSystem = 8948;    // "system"

using tools::testing::TestDirectory;
using tools::testing::ToolRun;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("npu_llm_chat_test"));

// qwen2 with the real qwen2 vocabulary (151936 tokens) and its ChatML
// template, but 2 layers of dim 64: F32 weights and cache, a 128 + 32 slot
// cache.
std::string CompileSmallQwen2() {
  static const std::string* const path = [] {
    const char* models = std::getenv("LNPU_MODELS_DIR");
    EXPECT_NE(models, nullptr) << "LNPU_MODELS_DIR is not set: run through meson test";
    synthetic::RandomLlamaSpec spec;
    spec.architecture = "qwen2";
    spec.vocab_size = 0;
    spec.vocabulary_gguf = std::string(models ? models : "") + "/vocab/ggml-vocab-qwen2.gguf";
    spec.tied_embeddings = true;
    spec.weight_type = gguf::GgmlType::kF32;
    const std::string gguf_path = TestDirectory::Path("qwen2-small.gguf");
    const std::string artifact_path = TestDirectory::Path("qwen2-small.lnpu");
    const absl::Status written = synthetic::WriteRandomLlamaGguf(spec, gguf_path);
    EXPECT_TRUE(written.ok()) << written;
    compiler::CompileOptions options;
    options.max_prompt_len = 128;
    options.min_response_len = 32;
    options.prefill_chunks = {16, 64};
    options.weights = compiler::CompileOptions::WeightType::kF32;
    options.kv_dtype = compiler::CompileOptions::KvType::kF32;
    const absl::Status compiled = compiler::CompileGguf(gguf_path, artifact_path, options);
    EXPECT_TRUE(compiled.ok()) << compiled;
    std::filesystem::remove(gguf_path);
    return new std::string(artifact_path);
  }();
  return *path;
}

// Runs npu-llm with `args` and `input` on stdin.
ToolRun RunNpuLlm(const std::vector<std::string>& args, const std::string& input) {
  return tools::testing::RunTool("LNPU_NPU_LLM", args, input);
}

// The ids of each "[prompt tokens: ...]" line of stderr.
std::vector<std::vector<int32_t>> PromptTokens(const std::string& err) {
  constexpr std::string_view kPrefix = "[prompt tokens: ";
  std::vector<std::vector<int32_t>> prompts;
  for (std::string line : std::vector<std::string>(absl::StrSplit(err, '\n'))) {
    if (!line.starts_with(kPrefix) || !line.ends_with("]")) continue;
    line = line.substr(kPrefix.size(), line.size() - kPrefix.size() - 1);
    std::vector<int32_t> ids;
    for (const std::string& id :
         std::vector<std::string>(absl::StrSplit(line, ' ', absl::SkipEmpty()))) {
      int32_t value = -1;
      EXPECT_TRUE(absl::SimpleAtoi(id, &value)) << id;
      ids.push_back(value);
    }
    prompts.push_back(ids);
  }
  return prompts;
}

int CountLines(const std::string& text, std::string_view needle) {
  int count = 0;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(text, '\n'))) {
    if (line.find(needle) != std::string::npos) ++count;
  }
  return count;
}

TEST(NpuLlmChatTest, TwoTurnsWithChatMlControlTokens) {
  const ToolRun run = RunNpuLlm({"chat", "-m", CompileSmallQwen2(), "--device", "soft",
                                 "--system", "Be brief", "-n", "4", "--verbose-prompt"},
                                "Hello\n<|im_end|>\n");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Two replies, each with its statistics line.
  EXPECT_EQ(CountLines(run.err, "[prompt "), 2 + 3) << run.err;  // 3 token lines
  EXPECT_EQ(CountLines(run.err, "finish: "), 2) << run.err;

  const std::vector<std::vector<int32_t>> prompts = PromptTokens(run.err);
  ASSERT_THAT(prompts, SizeIs(3)) << run.err;
  // The system turn: <|im_start|>system\nBe brief<|im_end|>\n, no BOS.
  ASSERT_THAT(prompts[0], SizeIs(::testing::Ge(6u)));
  EXPECT_EQ(prompts[0][0], kImStart);
  EXPECT_EQ(prompts[0][1], kSystem);
  EXPECT_EQ(prompts[0][2], kNewline);
  EXPECT_THAT(std::vector<int32_t>(prompts[0].end() - 2, prompts[0].end()),
              ElementsAre(kImEnd, kNewline));
  // The first user turn: <|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n.
  EXPECT_THAT(prompts[1], ElementsAre(kImStart, kUser, kNewline, 9707, kImEnd, kNewline,
                                      kImStart, kAssistant, kNewline));
  // The second: after the reply (ended by <|im_end|>, which the session
  // already holds, or by the length limit, which leaves it to the prompt),
  // a user turn whose "<|im_end|>" is typed text, not the control token.
  std::vector<int32_t> second = prompts[2];
  if (!second.empty() && second[0] == kImEnd) second.erase(second.begin());
  ASSERT_THAT(second, SizeIs(::testing::Gt(9u)));
  EXPECT_THAT(std::vector<int32_t>(second.begin(), second.begin() + 4),
              ElementsAre(kNewline, kImStart, kUser, kNewline));
  EXPECT_EQ(std::count(second.begin(), second.end(), kImEnd), 1) << "typed <|im_end|> parsed";
  EXPECT_EQ(std::count(second.begin(), second.end(), kImStart), 2);
  EXPECT_THAT(std::vector<int32_t>(second.end() - 5, second.end()),
              ElementsAre(kImEnd, kNewline, kImStart, kAssistant, kNewline));
}

TEST(NpuLlmChatTest, StopsAtTheEndOfTurnToken) {
  // A bias that makes <|im_end|> the greedy pick: each reply ends at once.
  const ToolRun run =
      RunNpuLlm({"chat", "-m", CompileSmallQwen2(), "--device", "soft", "-n", "8",
                 "--logit-bias", "151645:1000", "--verbose-prompt"},
                "Hi\nHi again\n");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(CountLines(run.err, "generated 0 tokens, finish: stop"), 2) << run.err << run.out;
  const std::vector<std::vector<int32_t>> prompts = PromptTokens(run.err);
  ASSERT_THAT(prompts, SizeIs(2)) << run.err;
  // The session holds the <|im_end|> that ended the reply: the next turn
  // starts after it, so it is not run twice.
  ASSERT_FALSE(prompts[1].empty());
  EXPECT_EQ(prompts[1][0], kNewline);
}

TEST(NpuLlmChatTest, RejectsUnknownSubcommandsAndFamilies) {
  ToolRun run = RunNpuLlm({"chta", "-m", CompileSmallQwen2()}, "");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("unexpected argument 'chta'"));
  run = RunNpuLlm({"chat", "-m", CompileSmallQwen2(), "--chat-template", "jinja"}, "");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("unknown chat template family \"jinja\""));
}

}  // namespace
}  // namespace lnpu
