// npu-info: device parameters, capabilities, memory and counters of an lnpu
// device, as text or JSON; --validate runs the device self-test
// (self_test.h) and exits 0 if every check passed, 1 otherwise.
// Command-line errors exit 2.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "kernel_iface/driver/device.h"
#include "tools/common/tool_device.h"
#include "tools/common/tool_main.h"
#include "tools/npu-info/device_report.h"
#include "tools/npu-info/self_test.h"

namespace {

constexpr char kUsage[] =
    "usage: npu-info [--device D] [--json] [--validate [--checks LIST]]\n"
    "Prints the parameters, capabilities, memory and counters of an lnpu "
    "device.\n"
    "  --device D   \"auto\" (default: the first lnpu /dev/accel node, else "
    "the\n"
    "               software NPU), \"soft\", or a device node path\n"
    "  --json       one JSON object instead of text\n"
    "  --validate   run the self-test: NOP latency, DMA bandwidth, matmul\n"
    "               throughput and a known-answer check, each against its\n"
    "               threshold; exit 0 if all pass, 1 if one fails\n"
    "  --checks LIST  with --validate: only these checks, comma-separated\n"
    "               (nop-latency, dma-bandwidth, matmul, known-answer;\n"
    "               default all), e.g. known-answer alone on an emulator\n"
    "  -h, --help   show this help\n";

struct Options {
  std::string device = "auto";
  bool json = false;
  bool validate = false;
  std::vector<lnpu::info::SelfTestCheck> checks{
      std::begin(lnpu::info::kAllSelfTestChecks),
      std::end(lnpu::info::kAllSelfTestChecks)};
  bool checks_given = false;
};

// Parses argv into *options. Returns -1 to go on, else the exit code.
int ParseArgs(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--json") {
      options->json = true;
    } else if (arg == "--validate") {
      options->validate = true;
    } else if ((arg == "--checks" && i + 1 < argc) ||
               absl::StartsWith(arg, "--checks=")) {
      const std::string list = arg == "--checks"
                                   ? argv[++i]
                                   : arg.substr(sizeof("--checks=") - 1);
      auto checks = lnpu::info::ParseSelfTestChecks(list);
      if (!checks.ok()) {
        std::cerr << "npu-info: --checks: " << checks.status().message()
                  << "; see npu-info --help\n";
        return 2;
      }
      options->checks = *std::move(checks);
      options->checks_given = true;
    } else if (arg == "--device" && i + 1 < argc) {
      options->device = argv[++i];
    } else if (absl::StartsWith(arg, "--device=")) {
      options->device = arg.substr(sizeof("--device=") - 1);
    } else {
      std::cerr << "npu-info: "
                << (arg == "--device" || arg == "--checks"
                        ? arg + " needs a value"
                        : "unknown argument '" + arg + "'")
                << "; see npu-info --help\n";
      return 2;
    }
  }
  if (options->checks_given && !options->validate) {
    std::cerr << "npu-info: --checks selects checks of --validate; add "
                 "--validate\n";
    return 2;
  }
  if (options->device.empty()) {
    std::cerr << "npu-info: --device is empty; see npu-info --help\n";
    return 2;
  }
  return -1;
}

int Main(int argc, char** argv) {
  Options options;
  if (const int code = ParseArgs(argc, argv, &options); code >= 0) return code;
  // The self-test's matmul job is long on a slow or emulated CPU: on the
  // software NPU it runs with the tools' job timeout, not the default 5 s,
  // so that it reports a low figure instead of a timed-out job.
  auto device = options.validate ? lnpu::tools::OpenToolDevice(options.device)
                                 : lnpu::Device::Open(options.device);
  if (!device.ok()) {
    std::cerr << "npu-info: " << device.status().message() << "\n";
    return 1;
  }
  if (options.validate) {
    const lnpu::info::SelfTestReport report =
        lnpu::info::RunSelfTest(**device, options.checks);
    std::cout << (options.json ? lnpu::info::FormatJson(report)
                               : lnpu::info::FormatText(report));
    return report.pass() ? 0 : 1;
  }
  const lnpu::info::DeviceReport report =
      lnpu::info::CollectDeviceReport(**device);
  std::cout << (options.json ? lnpu::info::FormatJson(report)
                             : lnpu::info::FormatText(report));
  return report.complete() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return lnpu::tools::RunToolMain("npu-info", [&] { return Main(argc, argv); });
}
