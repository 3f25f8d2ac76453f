// Every program in tools/ prints its own usage on --help and -h (exit 0,
// stdout), and that usage names every option the program accepts. The
// options are read from the program's source, not listed here: the names of
// its ABSL_FLAGs (spelled with dashes, as the usage and README spell them)
// and the option literals its hand-written parser compares arguments with
// ("-o", "--max-prompt-len"). npu-llm's flags are also accepted with dashes
// and with Abseil's underscores.
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/tool_test_support.h"

namespace lnpu::tools::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("tool_help_test"));

struct Tool {
  const char* name;
  const char* exe_env;               // environment variable with the program's path
  std::vector<const char*> sources;  // relative to the source root
};

void PrintTo(const Tool& tool, std::ostream* os) { *os << tool.name; }

std::string ReadSource(const std::string& relative_path) {
  const char* root = std::getenv("LNPU_SOURCE_ROOT");
  EXPECT_NE(root, nullptr) << "LNPU_SOURCE_ROOT is not set: run through meson test";
  const std::string text = ReadFileOrEmpty(std::string(root ? root : "") + "/" + relative_path);
  EXPECT_FALSE(text.empty()) << "cannot read " << relative_path;
  return text;
}

// The options defined in `source`: "--top-k" for ABSL_FLAG(int, top_k, ...),
// "-m" for ABSL_FLAG(std::string, m, ...), and every string literal that is
// an option name ("-o", "--max-prompt-len").
std::set<std::string> OptionsDefinedIn(const std::string& source) {
  std::set<std::string> options;
  static const std::regex absl_flag(R"(ABSL_FLAG\(\s*[^,]+,\s*(\w+)\s*,)");
  for (std::sregex_iterator it(source.begin(), source.end(), absl_flag), end; it != end; ++it) {
    const std::string name = absl::StrReplaceAll((*it)[1].str(), {{"_", "-"}});
    options.insert((name.size() == 1 ? "-" : "--") + name);
  }
  static const std::regex literal(R"re("(--?[a-z][a-z0-9-]*)")re");
  for (std::sregex_iterator it(source.begin(), source.end(), literal), end; it != end; ++it) {
    options.insert((*it)[1].str());
  }
  return options;
}

// Whether `text` has `option` as a whole word (not as a prefix of a longer
// option such as --seed of --seed-file).
bool NamesOption(const std::string& text, const std::string& option) {
  const std::regex word("(^|[^a-z0-9-])" + option + "($|[^a-z0-9-])");
  return std::regex_search(text, word);
}

class ToolHelpTest : public ::testing::TestWithParam<Tool> {};

TEST_P(ToolHelpTest, HelpNamesEveryOptionTheToolDefines) {
  const Tool& tool = GetParam();
  std::set<std::string> options;
  for (const char* source : tool.sources) options.merge(OptionsDefinedIn(ReadSource(source)));
  // Every tool has more than --help and -h: an empty list means the source
  // scan is broken, not that the help is complete.
  ASSERT_GE(options.size(), 4u) << tool.name;

  const ToolRun help = RunTool(tool.exe_env, {"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_THAT(help.out, StartsWith(std::string("usage: ") + tool.name));
  EXPECT_THAT(help.out, Not(HasSubstr("No flags matched")));
  for (const std::string& option : options) {
    EXPECT_TRUE(NamesOption(help.out, option))
        << tool.name << " --help does not describe " << option << ":\n"
        << help.out;
  }
  const ToolRun h = RunTool(tool.exe_env, {"-h"});
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.out, help.out);
}

INSTANTIATE_TEST_SUITE_P(
    Tools, ToolHelpTest,
    ::testing::Values(Tool{"npu-compile", "LNPU_NPU_COMPILE", {"tools/npu-compile/main.cc"}},
                      Tool{"npu-llm", "LNPU_NPU_LLM", {"tools/npu-llm/main.cc"}},
                      Tool{"npu-bench", "LNPU_NPU_BENCH", {"tools/npu-bench/command_line.cc"}},
                      Tool{"npu-info", "LNPU_NPU_INFO", {"tools/npu-info/main.cc"}},
                      Tool{"npu-top", "LNPU_NPU_TOP", {"tools/npu-top/main.cc"}},
                      Tool{"npu-eval", "LNPU_NPU_EVAL", {"tools/npu-eval/main.cc"}},
                      Tool{"npu-tokenize", "LNPU_NPU_TOKENIZE", {"tools/npu-tokenize/main.cc"}}),
    [](const ::testing::TestParamInfo<Tool>& info) {
      return absl::StrReplaceAll(info.param.name, {{"-", "_"}});
    });

// A flag npu-llm knows gets past flag parsing whichever way it is spelled:
// the run fails only at the missing model file. An unknown flag fails in
// flag parsing, naming it.
TEST(NpuLlmFlagSpelling, DashesAndUnderscoresAreTheSameFlag) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--top-k", "1", "--repeat-last-n=8", "--copy-weights"},
        std::vector<std::string>{"--top_k", "1", "--repeat_last_n=8", "--copy_weights"}}) {
    std::vector<std::string> args = {"-m", "/nonexistent/model.lnpu", "-p", "hi"};
    args.insert(args.end(), flags.begin(), flags.end());
    const ToolRun run = RunTool("LNPU_NPU_LLM", args);
    EXPECT_EQ(run.exit_code, 1) << flags[0];
    EXPECT_THAT(run.err, HasSubstr("/nonexistent/model.lnpu")) << flags[0];
    EXPECT_THAT(run.err, Not(HasSubstr("flag"))) << flags[0];
  }
  const ToolRun bad_value = RunTool("LNPU_NPU_LLM", {"--top-k=many", "-m", "x.lnpu"});
  EXPECT_NE(bad_value.exit_code, 0);
  EXPECT_THAT(bad_value.err, HasSubstr("top_k"));
  EXPECT_THAT(bad_value.err, HasSubstr("many"));
  const ToolRun unknown = RunTool("LNPU_NPU_LLM", {"--no-such-flag", "-m", "x.lnpu"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("no_such_flag"));
}

// After "--" nothing is a flag: "--help" there is not the help.
TEST(NpuLlmFlagSpelling, HelpAfterDoubleDashIsNotHelp) {
  const ToolRun run = RunTool("LNPU_NPU_LLM", {"-m", "/nonexistent/model.lnpu", "--", "--help"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.out, Not(HasSubstr("usage:")));
}

}  // namespace
}  // namespace lnpu::tools::testing
