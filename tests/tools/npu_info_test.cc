// npu-info as a user runs it, on the software NPU: text and JSON reports,
// the --validate self-test (which must pass on a working device), and
// command-line errors. The binary comes from $LNPU_NPU_INFO; JSON is checked
// by python3's json module.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_temp_dir.h"
#include "tests/tools/tool_test_support.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `command` through the shell and collects its output.
ProcessResult Shell(const std::string& command) {
  ProcessResult run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) {
    run.output.append(chunk.data(), n);
  }
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// The command that runs npu-info (under the cross build's wrapper, if any).
std::string NpuInfo() {
  const char* path = std::getenv("LNPU_NPU_INFO");
  std::vector<std::string> command = lnpu::tools::testing::ExeWrapper();
  command.push_back(path != nullptr ? path : "npu-info");
  return absl::StrJoin(command, " ");
}

// Runs npu-info with `args` on the software NPU.
ProcessResult NpuInfoSoft(const std::string& args) {
  return Shell(NpuInfo() + " --device soft " + args);
}

// Loads `json` with python3 and prints the result of `expression` (over
// the document `d`); "error" lines tell what went wrong.
std::string PythonJson(const std::string& json, const std::string& expression) {
  const std::string dir = lnpu::testing::ProcessTempDir();
  std::ofstream(dir + "npu_info_test.json") << json;
  std::ofstream(dir + "npu_info_test.py")
      << "import json, sys\n"
      << "d = json.load(open(sys.argv[1]))\n"
      << "print((" << expression << "))\n";
  return Shell("python3 " + dir + "npu_info_test.py " + dir +
               "npu_info_test.json")
      .output;
}

TEST(NpuInfoTest, TextListsEveryParameterCapabilityAndUsage) {
  const ProcessResult run = NpuInfoSoft("");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* label :
       {"uapi version", "device id", "memory size", "memory used",
        "engine mask", "buffer alignment", "max command stream",
        "max buffers per job", "job timeout", "compute units",
        "max in-fences per job", "jobs submitted", "jobs completed",
        "job faults", "engine resets", "memory free", "memory imported",
        "jobs cancelled"}) {
    EXPECT_THAT(run.output, HasSubstr(label));
  }
  EXPECT_THAT(run.output, HasSubstr("device: software NPU"));
  EXPECT_THAT(run.output, HasSubstr("uapi version             1."));
  EXPECT_THAT(run.output,
              HasSubstr("capabilities: dtype-f16 in-fences software"));
  EXPECT_THAT(run.output, HasSubstr("usage of this open file"));
  EXPECT_THAT(run.output, Not(HasSubstr("error")));
}

TEST(NpuInfoTest, JsonHasEveryParameterAsANumber) {
  const ProcessResult run = NpuInfoSoft("--json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(PythonJson(run.output, "sorted(d)"),
            "['capabilities', 'device', 'params', 'usage']\n");
  EXPECT_EQ(PythonJson(run.output,
                       "len(d['params']), all(isinstance(v, int) for v in "
                       "d['params'].values())"),
            "(19, True)\n");
  EXPECT_EQ(PythonJson(run.output,
                       "d['params']['memory_size'] == "
                       "d['params']['memory_used'] + d['params']['memory_free'],"
                       " d['params']['bo_alignment']"),
            "(True, 4096)\n");
  EXPECT_EQ(PythonJson(run.output, "'software' in d['capabilities'], "
                                   "d['usage']['driver']"),
            "(True, 'lnpu')\n");
}

TEST(NpuInfoTest, ValidatePassesOnTheSoftwareNpu) {
  const ProcessResult run = NpuInfoSoft("--validate");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* check : {"nop-latency-avg", "nop-latency-p99",
                            "dma-bandwidth", "matmul", "known-answer"}) {
    EXPECT_THAT(run.output, HasSubstr(check));
  }
  EXPECT_THAT(run.output, HasSubstr("verdict: PASS"));
  EXPECT_THAT(run.output, Not(HasSubstr("FAIL")));
}

TEST(NpuInfoTest, ValidateJsonReportsEachCheckWithItsThreshold) {
  const ProcessResult run = NpuInfoSoft("--validate --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(PythonJson(run.output,
                       "d['pass'], [c['name'] for c in d['checks']], "
                       "all(c['pass'] and c['value'] is not None and "
                       "'threshold' in c for c in d['checks'])"),
            "(True, ['nop-latency-avg', 'nop-latency-p99', 'dma-bandwidth', "
            "'matmul', 'known-answer'], True)\n");
}

// Not named Validate*: these run under qemu-aarch64 too (test.sh), whose
// speed is not a device's, so only the known answer's verdict is asserted.
TEST(NpuInfoTest, ChecksRunsOnlyTheNamedChecksInTheSelfTestOrder) {
  const ProcessResult run =
      NpuInfoSoft("--validate --json --checks known-answer,dma-bandwidth");
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.output;
  EXPECT_EQ(PythonJson(run.output,
                       "[c['name'] for c in d['checks']], d['checks'][1]['pass']"),
            "(['dma-bandwidth', 'known-answer'], True)\n");
  const ProcessResult alone = NpuInfoSoft("--validate --checks known-answer");
  EXPECT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_THAT(alone.output, HasSubstr("known-answer"));
  EXPECT_THAT(alone.output, Not(HasSubstr("matmul ")));
  EXPECT_THAT(alone.output, Not(HasSubstr("nop-latency")));
  EXPECT_THAT(alone.output, HasSubstr("verdict: PASS"));
}

TEST(NpuInfoTest, ChecksRejectsAnUnknownOrEmptyName) {
  ProcessResult run = NpuInfoSoft("--validate --checks known-answer,speed");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("unknown check 'speed'"));
  EXPECT_THAT(run.output, HasSubstr("nop-latency, dma-bandwidth, matmul and "
                                    "known-answer"));
  run = NpuInfoSoft("--validate --checks=matmul,");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("empty check name in 'matmul,'"));
  run = NpuInfoSoft("--checks known-answer");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("add --validate"));
  run = NpuInfoSoft("--validate --checks");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--checks needs a value"));
}

TEST(NpuInfoTest, BadArgumentsExitTwoWithAMessage) {
  ProcessResult run = Shell(NpuInfo() + " --no-such-flag");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("unknown argument '--no-such-flag'"));
  EXPECT_THAT(run.output, HasSubstr("--help"));
  run = Shell(NpuInfo() + " --device");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--device needs a value"));
  run = Shell(NpuInfo() + " stray");
  EXPECT_EQ(run.exit_code, 2);
}

TEST(NpuInfoTest, HelpDescribesTheOptions) {
  const ProcessResult run = Shell(NpuInfo() + " --help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("--validate"));
  EXPECT_THAT(run.output, HasSubstr("--json"));
}

TEST(NpuInfoTest, UnopenableDeviceExitsOne) {
  const ProcessResult run = Shell(NpuInfo() + " --device /nonexistent/accel9");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr("npu-info: "));
}

}  // namespace
