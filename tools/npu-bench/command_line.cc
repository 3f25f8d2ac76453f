#include "tools/npu-bench/command_line.h"

#include <iostream>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "compiler_artifacts/synthetic/synthetic_presets.h"

namespace lnpu::bench {
namespace {

// An integer in [min, max] given as the value of `flag`.
absl::StatusOr<uint64_t> ParseInteger(const std::string& flag, const std::string& text,
                                      uint64_t min, uint64_t max) {
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s expects an integer in [%d, %d], got '%s'", flag, min, max, text));
  }
  return value;
}

absl::StatusOr<std::vector<uint32_t>> ParseList(const std::string& flag, const std::string& text,
                                                uint32_t min, uint32_t max) {
  std::vector<uint32_t> values;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    LNPU_ASSIGN_OR_RETURN(const uint64_t n, ParseInteger(flag, part, min, max));
    values.push_back(static_cast<uint32_t>(n));
  }
  return values;
}

}  // namespace

absl::StatusOr<std::optional<CommandLine>> ParseCommandLine(int argc, char** argv) {
  CommandLine line;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage << "\nsynthetic presets: " << synthetic::SyntheticPresetNames() << "\n";
      return std::nullopt;
    }
    if (arg == "--json") {
      line.json = true;
      continue;
    }
    if (arg == "--copy-weights") {
      line.placement = "copy";
      continue;
    }
    if (arg == "--profile") {
      line.profile = true;
      continue;
    }
    if (arg.empty() || arg[0] != '-') {
      return absl::InvalidArgumentError(
          absl::StrFormat("unexpected argument '%s' (the model is given with -m)", arg));
    }
    if (i + 1 >= argc) return absl::InvalidArgumentError(arg + " needs a value");
    const std::string value = argv[++i];
    absl::Status status;
    // Each `out` type holds every value of [min, max].
    auto integer = [&](uint64_t min, uint64_t max, auto* out) {
      absl::StatusOr<uint64_t> n = ParseInteger(arg, value, min, max);
      if (n.ok()) {
        *out = static_cast<std::remove_pointer_t<decltype(out)>>(*n);
      } else {
        status = n.status();
      }
    };
    auto list = [&](uint32_t min, uint32_t max, std::vector<uint32_t>* out) {
      absl::StatusOr<std::vector<uint32_t>> values = ParseList(arg, value, min, max);
      if (values.ok()) {
        *out = *std::move(values);
      } else {
        status = values.status();
      }
    };
    if (arg == "-m" || arg == "--model") {
      line.model_path = value;
    } else if (arg == "--synthetic") {
      line.preset = value;
    } else if (arg == "--weights") {
      if (value != "q8" && value != "q4" && value != "f16") {
        return absl::InvalidArgumentError("--weights expects q8, q4 or f16, got '" + value + "'");
      }
      line.weights = value;
      line.weights_given = true;
    } else if (arg == "--placement") {
      if (value != "auto" && value != "copy" && value != "import") {
        return absl::InvalidArgumentError("--placement expects auto, copy or import, got '" +
                                          value + "'");
      }
      line.placement = value;
    } else if (arg == "--q6k") {
      if (value != "keep" && value != "convert") {
        return absl::InvalidArgumentError("--q6k expects keep or convert, got '" + value + "'");
      }
      line.q6k = value;
    } else if (arg == "--weight-panels") {
      if (value != "on" && value != "p16" && value != "off") {
        return absl::InvalidArgumentError("--weight-panels expects on, p16 or off, got '" +
                                          value + "'");
      }
      line.weight_panels = value;
    } else if (arg == "--models-dir") {
      line.models_dir = value;
    } else if (arg == "--device") {
      line.device = value;
    } else if (arg == "--prompt-lengths") {
      list(1, 1u << 20, &line.benchmark.prompt_lengths);
    } else if (arg == "--fills") {
      list(0, 99, &line.benchmark.fill_percents);
    } else if (arg == "--decode-steps") {
      integer(1, 1u << 20, &line.benchmark.decode_steps);
    } else if (arg == "--ttft-prompt") {
      integer(1, 1u << 20, &line.benchmark.ttft_prompt_tokens);
    } else if (arg == "--reps") {
      integer(1, 1000, &line.benchmark.reps);
    } else if (arg == "--warmups") {
      integer(0, 1000, &line.benchmark.warmups);
    } else if (arg == "--seed") {
      integer(0, std::numeric_limits<uint64_t>::max(), &line.benchmark.seed);
    } else if (arg == "--bandwidth-mib") {
      uint64_t mib = 0;
      integer(1, uint64_t{64} << 10, &mib);
      line.bandwidth_bytes = mib << 20;
    } else if (arg == "--contention") {
      integer(0, 64, &line.benchmark.contention_processes);
    } else if (arg == "--batch-lanes") {
      list(1, 64, &line.batch_lanes);
    } else if (arg == "--trace") {
      line.trace_path = value;
    } else if (arg == "--bandwidth-runs") {
      integer(1, 100, &line.bandwidth_runs);
    } else {
      return absl::InvalidArgumentError("unknown option " + arg);
    }
    LNPU_RETURN_IF_ERROR(status);
  }
  if (line.model_path.empty() == line.preset.empty()) {
    return absl::InvalidArgumentError(
        "give exactly one model: -m MODEL.lnpu or --synthetic PRESET");
  }
  if (line.profile && line.json) {
    return absl::InvalidArgumentError(
        "--profile prints text tables only; drop --json (or use --trace for a machine-readable "
        "timeline)");
  }
  if (line.profile && line.benchmark.contention_processes > 0) {
    return absl::InvalidArgumentError(
        "--contention applies to the decode measurements, which --profile does not run");
  }
  if (!line.model_path.empty() && line.weights_given) {
    return absl::InvalidArgumentError(
        "--weights applies to --synthetic only: a compiled artifact has its weight type "
        "(choose it with npu-compile --weights)");
  }
  return line;
}

}  // namespace lnpu::bench
