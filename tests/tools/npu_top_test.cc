// npu-top: the /proc scan over a fixture directory laid out as /proc is
// (fd links and fdinfo text as Linux shows them for an accel node), the
// per-process rates between two scans, the JSON and text reports, and the
// program on the software NPU (which it cannot see, and says so).
#include "tools/npu-top/client_scan.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/tool_test_support.h"
#include "tools/npu-top/top_report.h"

namespace lnpu::top {
namespace {

using ::lnpu::tools::testing::RunTool;
using ::lnpu::tools::testing::TestDirectory;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

::testing::Environment* const test_directory =
    ::testing::AddGlobalTestEnvironment(new TestDirectory("npu_top_test"));

// fdinfo of an lnpu kernel file as /proc/<pid>/fdinfo/<fd> shows it.
std::string KernelFdInfo(uint64_t client_id, uint64_t compute_ns, uint64_t dma_ns,
                         const std::string& memory, uint64_t jobs) {
  return absl::StrCat(
      "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1093\ndrm-driver:\tlnpu\n"
      "drm-client-id:\t",
      client_id, "\ndrm-engine-compute:\t", compute_ns, " ns\ndrm-engine-dma:\t", dma_ns,
      " ns\ndrm-total-memory:\t", memory, "\ndrm-shared-memory:\t0\ndrm-resident-memory:\t",
      memory, "\ndrm-total-userptr:\t8 KiB\ndrm-shared-userptr:\t0\nlnpu-jobs-submitted:\t", jobs,
      "\n");
}

// A directory laid out as /proc: <pid>/comm, <pid>/fd/<fd> -> target,
// <pid>/fdinfo/<fd>.
class FakeProc {
 public:
  explicit FakeProc(const std::string& name) : root_(TestDirectory::Path(name)) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  const std::string& root() const { return root_; }

  void AddProcess(int pid, const std::string& command) {
    const std::string dir = absl::StrCat(root_, "/", pid);
    std::filesystem::create_directories(dir + "/fd");
    std::filesystem::create_directories(dir + "/fdinfo");
    std::ofstream(dir + "/comm") << command << "\n";
  }
  void AddFile(int pid, int fd, const std::string& target, const std::string& fdinfo) {
    const std::string dir = absl::StrCat(root_, "/", pid);
    std::filesystem::create_symlink(target, absl::StrCat(dir, "/fd/", fd));
    std::ofstream(absl::StrCat(dir, "/fdinfo/", fd)) << fdinfo;
  }

 private:
  std::string root_;
};

TEST(ClientScanTest, FindsEveryLnpuFileOncePerClient) {
  FakeProc proc("proc-scan");
  proc.AddProcess(100, "npu-llm");
  proc.AddFile(100, 3, "/dev/accel/accel0", KernelFdInfo(7, 1000, 20, "2068 KiB", 5));
  proc.AddFile(100, 9, "/dev/accel/accel0", KernelFdInfo(7, 1000, 20, "2068 KiB", 5));  // dup
  proc.AddFile(100, 4, "/dev/accel/accel0", KernelFdInfo(3, 50, 0, "4 KiB", 1));
  proc.AddFile(100, 0, "/dev/null", "pos:\t0\nflags:\t02\n");
  // Another accel driver's node.
  proc.AddFile(100, 5, "/dev/accel/accel1",
               "pos:\t0\ndrm-driver:\tivpu\ndrm-client-id:\t1\n");
  proc.AddProcess(200, "sleep");
  proc.AddFile(200, 1, "/tmp/log", "pos:\t0\n");
  proc.AddProcess(300, "broken");
  proc.AddFile(300, 3, "/dev/accel/accel0", "drm-driver:\tlnpu\ndrm-engine-dma:\t5 ms\n");
  proc.AddProcess(400, "npu-top");
  proc.AddFile(400, 3, "/dev/accel/accel0", KernelFdInfo(9, 0, 0, "0", 0));
  std::filesystem::create_directories(proc.root() + "/self");
  std::ofstream(proc.root() + "/uptime") << "1.0 1.0\n";

  const ClientScan scan = ScanClients(proc.root(), /*skip_pid=*/400);
  ASSERT_EQ(scan.clients.size(), 2u);
  EXPECT_EQ(scan.clients[0].pid, 100);
  EXPECT_EQ(scan.clients[0].command, "npu-llm");
  EXPECT_EQ(scan.clients[0].node, "/dev/accel/accel0");
  EXPECT_EQ(scan.clients[0].usage.client_id, 3u);
  EXPECT_EQ(scan.clients[1].usage.client_id, 7u);
  EXPECT_EQ(scan.clients[1].usage.compute_busy_ns, 1000u);
  EXPECT_EQ(scan.clients[1].usage.memory_total_bytes, 2068u * 1024);
  EXPECT_EQ(scan.clients[1].usage.userptr_total_bytes, 8192u);
  EXPECT_EQ(scan.clients[1].usage.jobs_submitted, 5u);
  ASSERT_EQ(scan.errors.size(), 1u);
  EXPECT_THAT(scan.errors[0], HasSubstr("300/3"));
  EXPECT_THAT(scan.errors[0], HasSubstr("drm-engine-dma"));
  EXPECT_EQ(scan.unreadable_processes, 0);
}

TEST(ClientScanTest, UnreadableProcessesAreCounted) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads every directory";
  FakeProc proc("proc-unreadable");
  proc.AddProcess(100, "other-user");
  std::filesystem::permissions(proc.root() + "/100/fd", std::filesystem::perms::none);
  const ClientScan scan = ScanClients(proc.root(), 0);
  EXPECT_TRUE(scan.clients.empty());
  EXPECT_EQ(scan.unreadable_processes, 1);
  std::filesystem::permissions(proc.root() + "/100/fd", std::filesystem::perms::owner_all);
}

TEST(ClientScanTest, AMissingProcRootIsAnEmptyScan) {
  const ClientScan scan = ScanClients("/nonexistent/proc", 0);
  EXPECT_TRUE(scan.clients.empty());
  EXPECT_TRUE(scan.errors.empty());
}

ClientSample Client(int pid, uint64_t id, uint64_t compute_ns, uint64_t dma_ns, uint64_t jobs,
                    uint64_t memory) {
  ClientSample sample;
  sample.pid = pid;
  sample.command = absl::StrCat("p", pid);
  sample.node = "/dev/accel/accel0";
  sample.usage.driver = "lnpu";
  sample.usage.client_id = id;
  sample.usage.compute_busy_ns = compute_ns;
  sample.usage.dma_busy_ns = dma_ns;
  sample.usage.jobs_submitted = jobs;
  sample.usage.memory_total_bytes = memory;
  return sample;
}

TEST(SummarizeProcessesTest, RatesAreOverTheIntervalAndNewFilesCountFromZero) {
  ClientScan before;
  before.taken = absl::FromUnixSeconds(1000);
  before.clients = {Client(10, 1, 1'000'000'000, 0, 100, 4096),
                    Client(20, 2, 0, 0, 0, 4096)};
  ClientScan after;
  after.taken = before.taken + absl::Seconds(2);
  // Process 10: 0.5 s more compute, 0.1 s DMA, 40 jobs, and a second file
  // opened in between (0.2 s compute, 10 jobs).
  after.clients = {Client(10, 1, 1'500'000'000, 100'000'000, 140, 8192),
                   Client(10, 5, 200'000'000, 0, 10, 4096),
                   Client(20, 2, 0, 0, 0, 4096)};
  const std::vector<ProcessUsage> processes = SummarizeProcesses(before, after);
  ASSERT_EQ(processes.size(), 2u);
  const ProcessUsage& busy = processes[0];
  EXPECT_EQ(busy.pid, 10);
  EXPECT_EQ(busy.command, "p10");
  EXPECT_THAT(busy.client_ids, ElementsAre(1u, 5u));
  EXPECT_THAT(busy.nodes, ElementsAre("/dev/accel/accel0"));
  EXPECT_EQ(busy.compute_busy_ns, 1'700'000'000u);
  EXPECT_EQ(busy.jobs_submitted, 150u);
  EXPECT_EQ(busy.memory_total_bytes, 12288u);
  EXPECT_DOUBLE_EQ(busy.compute_busy_percent, 35.0);  // (0.5 + 0.2) / 2 s
  EXPECT_DOUBLE_EQ(busy.dma_busy_percent, 5.0);
  EXPECT_DOUBLE_EQ(busy.jobs_per_second, 25.0);  // (40 + 10) / 2 s
  const ProcessUsage& idle = processes[1];
  EXPECT_EQ(idle.pid, 20);
  EXPECT_DOUBLE_EQ(idle.compute_busy_percent, 0.0);
  EXPECT_DOUBLE_EQ(idle.jobs_per_second, 0.0);
}

TopReport SampleReport() {
  TopReport report;
  report.device = "/dev/accel/accel0";
  report.interval_seconds = 1;
  report.counters = DeviceCounters{};
  report.counters->memory_size = 64 << 20;
  report.counters->memory_used = 3 << 20;
  report.counters->jobs_submitted = 42;
  report.device_jobs_per_second = 12.5;
  ProcessUsage process;
  process.pid = 123;
  process.command = "npu-llm";
  process.nodes = {"/dev/accel/accel0"};
  process.client_ids = {4};
  process.memory_total_bytes = 3 << 20;
  process.compute_busy_percent = 87.5;
  process.jobs_per_second = 12.5;
  report.processes = {process};
  return report;
}

TEST(TopReportTest, JsonHasTheCountersAndEveryProcess) {
  const nlohmann::json json = nlohmann::json::parse(FormatJson(SampleReport()));
  EXPECT_EQ(json["device"], "/dev/accel/accel0");
  EXPECT_EQ(json["counters"]["memory_used"], 3 << 20);
  EXPECT_EQ(json["counters"]["jobs_submitted"], 42);
  EXPECT_EQ(json["counters"]["jobs_per_second"], 12.5);
  ASSERT_EQ(json["processes"].size(), 1u);
  EXPECT_EQ(json["processes"][0]["pid"], 123);
  EXPECT_EQ(json["processes"][0]["command"], "npu-llm");
  EXPECT_EQ(json["processes"][0]["client_ids"][0], 4);
  EXPECT_EQ(json["processes"][0]["compute_busy_percent"], 87.5);
  EXPECT_EQ(json["processes"][0]["memory_total_bytes"], 3 << 20);
  EXPECT_EQ(json["note"], "");
}

TEST(TopReportTest, JsonWithoutCountersSaysWhy) {
  TopReport report = SampleReport();
  report.counters.reset();
  report.counters_error = "GET_PARAM failed";
  const nlohmann::json json = nlohmann::json::parse(FormatJson(report));
  EXPECT_TRUE(json["counters"].is_null());
  EXPECT_EQ(json["counters_error"], "GET_PARAM failed");
}

TEST(TopReportTest, TextHasOneRowPerProcess) {
  const std::string text = FormatText(SampleReport());
  EXPECT_THAT(text, HasSubstr("3.0 MiB used of 64.0 MiB"));
  EXPECT_THAT(text, HasSubstr("42 submitted (12.5/s)"));
  EXPECT_THAT(text, ::testing::ContainsRegex("123 npu-llm +accel0 +1 +87.5 +0.0 +12.5 +3.0 MiB"));
  TopReport empty = SampleReport();
  empty.processes.clear();
  EXPECT_THAT(FormatText(empty), HasSubstr("no process has an lnpu device open"));
}

TEST(NpuTopProgramTest, TheSoftwareNpuIsExplainedNotShown) {
  const auto run =
      RunTool("LNPU_NPU_TOP", {"--device", "soft", "--once", "--json", "--interval", "0.05"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_THAT(json["note"].get<std::string>(), HasSubstr("software NPU"));
  EXPECT_THAT(json["note"].get<std::string>(), HasSubstr("Device::Usage()"));
  EXPECT_TRUE(json["counters"].is_null());
  const auto text = RunTool("LNPU_NPU_TOP", {"--device", "soft", "--once", "--interval", "0.05"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("note: the device is the software NPU"));
}

TEST(NpuTopProgramTest, CommandLineErrorsExit2) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--interval", "0"}, {"--interval", "x"}, {"--interval"},
        {"--bogus"}, {"--device", ""}}) {
    const auto run = RunTool("LNPU_NPU_TOP", args);
    EXPECT_EQ(run.exit_code, 2) << args[0];
    EXPECT_THAT(run.err, HasSubstr("npu-top --help")) << args[0];
  }
  const auto missing = RunTool("LNPU_NPU_TOP", {"--device", "/nonexistent/accel9", "--once"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/accel9"));
}

}  // namespace
}  // namespace lnpu::top
