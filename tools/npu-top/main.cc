// npu-top: per-process use of lnpu devices, from /proc/<pid>/fdinfo (engine
// busy %, jobs/s, memory of every process with an lnpu kernel device open)
// and the device-wide counters, refreshed like top(1); --once prints one
// report, --json JSON (one object per refresh, one per line).
// Command-line errors exit 2; a device that cannot be opened exits 1;
// SIGINT or SIGTERM ends the refresh loop with 128 + the signal number.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "base/interrupt.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tools/common/tool_main.h"
#include "tools/npu-top/client_scan.h"
#include "tools/npu-top/top_report.h"

namespace {

constexpr char kUsage[] =
    "usage: npu-top [--device D] [--once] [--json] [--interval SECONDS]\n"
    "Shows every process using an lnpu kernel device (engine busy %, jobs/s,\n"
    "device memory, from /proc/<pid>/fdinfo) and the device's counters,\n"
    "refreshed until interrupted (Ctrl-C).\n"
    "  --device D        the device whose counters are shown: \"auto\" "
    "(default:\n"
    "                    the first lnpu /dev/accel node, else the software "
    "NPU),\n"
    "                    \"soft\", or a device node path. The software NPU "
    "lives\n"
    "                    inside each process that uses it: npu-top cannot "
    "see it\n"
    "                    and says so\n"
    "  --once            one report (rates over one interval), then exit\n"
    "  --json            JSON instead of text: one object per report, one per "
    "line\n"
    "  --interval S      seconds between reports (default 1; 0.05 to 3600)\n"
    "  -h, --help        show this help\n";

struct Options {
  std::string device = "auto";
  bool once = false;
  bool json = false;
  double interval_seconds = 1;
};

// Parses argv into *options. Returns -1 to go on, else the exit code.
int ParseArgs(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--once") {
      options->once = true;
    } else if (arg == "--json") {
      options->json = true;
    } else if ((arg == "--device" || arg == "--interval") && has_value) {
      value = argv[++i];
      if (arg == "--device") {
        options->device = value;
      } else if (!absl::SimpleAtod(value, &options->interval_seconds) ||
                 !(options->interval_seconds >= 0.05 && options->interval_seconds <= 3600)) {
        std::cerr << "npu-top: --interval '" << value
                  << "' is not a number of seconds from 0.05 to 3600; see npu-top --help\n";
        return 2;
      }
    } else {
      std::cerr << "npu-top: "
                << (arg == "--device" || arg == "--interval" ? arg + " needs a value"
                                                             : "unknown argument '" + arg + "'")
                << "; see npu-top --help\n";
      return 2;
    }
  }
  if (options->device.empty()) {
    std::cerr << "npu-top: --device is empty; see npu-top --help\n";
    return 2;
  }
  return -1;
}

// Sleeps `seconds`, in steps, until then or an interrupt. False if
// interrupted.
bool SleepUnlessInterrupted(double seconds) {
  const absl::Time until = absl::Now() + absl::Seconds(seconds);
  while (!lnpu::InterruptRequested()) {
    const absl::Duration left = until - absl::Now();
    if (left <= absl::ZeroDuration()) return true;
    absl::SleepFor(std::min(left, absl::Milliseconds(50)));
  }
  return false;
}

int Main(int argc, char** argv) {
  Options options;
  if (const int code = ParseArgs(argc, argv, &options); code >= 0) return code;
  auto device = lnpu::Device::Open(options.device);
  if (!device.ok()) {
    std::cerr << "npu-top: " << device.status().message() << "\n";
    return 1;
  }
  const absl::StatusOr<uint64_t> capabilities = (*device)->GetParam(DRM_LNPU_PARAM_CAPABILITIES);
  const bool software = capabilities.ok() && (*capabilities & DRM_LNPU_CAP_SOFTWARE) != 0;
  const int self = static_cast<int>(getpid());
  const bool clear_screen = !options.once && !options.json && isatty(STDOUT_FILENO);

  lnpu::InterruptScope interruptible;
  lnpu::top::ClientScan before = lnpu::top::ScanClients("/proc", self);
  absl::StatusOr<lnpu::top::DeviceCounters> counters_before =
      lnpu::top::ReadDeviceCounters(**device);
  while (SleepUnlessInterrupted(options.interval_seconds)) {
    lnpu::top::ClientScan after = lnpu::top::ScanClients("/proc", self);
    lnpu::top::TopReport report;
    report.device = (*device)->Describe();
    report.interval_seconds = absl::ToDoubleSeconds(after.taken - before.taken);
    if (software) {
      report.note = lnpu::top::kSoftwareNpuNote;
    } else {
      absl::StatusOr<lnpu::top::DeviceCounters> counters =
          lnpu::top::ReadDeviceCounters(**device);
      if (counters.ok()) {
        report.counters = *counters;
        if (counters_before.ok() && report.interval_seconds > 0) {
          report.device_jobs_per_second =
              (counters->jobs_submitted - counters_before->jobs_submitted) /
              report.interval_seconds;
        }
      } else {
        report.counters_error = std::string(counters.status().message());
      }
      counters_before = std::move(counters);
    }
    report.processes = lnpu::top::SummarizeProcesses(before, after);
    report.unreadable_processes = after.unreadable_processes;
    report.errors = after.errors;
    if (clear_screen) std::cout << "\x1b[H\x1b[2J";
    std::cout << (options.json ? lnpu::top::FormatJson(report) : lnpu::top::FormatText(report))
              << std::flush;
    if (options.once) break;
    before = std::move(after);
  }
  return lnpu::InterruptRequested() ? lnpu::InterruptExitCode() : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lnpu::tools::RunToolMain("npu-top", [&] { return Main(argc, argv); });
}
