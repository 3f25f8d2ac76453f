// The npu-bench command line.
#ifndef TOOLS_NPU_BENCH_COMMAND_LINE_H_
#define TOOLS_NPU_BENCH_COMMAND_LINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/npu-bench/model_benchmark.h"

namespace lnpu::bench {

inline constexpr char kUsage[] =
    R"(usage: npu-bench (-m MODEL.lnpu | --synthetic PRESET) [options]

Measures prefill and decode speed, time to first token, peak memory and the
machine's read bandwidth, and reports decode as a fraction of the limit that
bandwidth allows (the bandwidth probed right before and after each decode
fill). Each figure is the median of --reps timed repetitions after
--warmups untimed ones.

model (exactly one):
  -m, --model PATH         a compiled artifact (from npu-compile)
  --synthetic PRESET       compile a random-weight model of a real model's
                           shapes into a temporary artifact (removed at exit);
                           the presets are listed at the end
  --weights q8|q4|f16      weight type of the synthetic model (default q8)
  --models-dir DIR         where models/vocab/ is for --synthetic (default
                           $LNPU_MODELS_DIR, else ./models)

measurement:
  --prompt-lengths A,B,..  prefill lengths in tokens (default 16,128,512,1024)
  --fills A,B,..           decode cache fills in percent, 0..99 (default 0,50,90)
  --decode-steps N         decode tokens per repetition (default 16)
  --ttft-prompt N          prompt tokens of the time-to-first-token run (default 32)
  --reps N                 timed repetitions, median reported (default 5)
  --warmups N              untimed repetitions first (default 1)
  --bandwidth-mib N        bandwidth probe buffer in MiB (default: max(1024,
                           4 x LLC))
  --bandwidth-runs N       runs per read pattern (1, 2, 4 or 8 streams per
                           thread, with and without prefetches) of each
                           probe, the fastest run counts (default 5)
  --seed N                 seed of the random token ids (default 1)
  --device D               "auto" (default), "soft" or a device node path
  --placement P            where the weights go: "auto" (default: copied
                           into huge-page device memory when the device's
                           free memory holds them and two sequences, else
                           the artifact's file mapping is imported), "copy"
                           or "import"; the report names the one used and
                           the load time
  --copy-weights           the same as --placement copy
  --q6k keep|convert       a Q6_K output projection (npu-compile's auto):
                           keep (default) where the device computes Q6_K
                           faster than Q8_0 (DRM_LNPU_CAP_Q6_K_PREFERRED),
                           else converted to Q8_0 as the weights are
                           copied; convert: always in a copy
  --weight-panels on|p16|off
                           with copied weights on a device that prefers it,
                           store Q8_0 / Q4_0 matrices as panels (on, the
                           default: LNPU_DTYPE_*_P16S, else *_P16, the
                           layout the device prefers; p16: only *_P16, the
                           scales after each panel's quants; off: the
                           artifact's layout)
  --contention N           run N competing busy-loop processes (normal
                           priority) during the decode measurements and
                           report the CPU share they left (default 0)
  --batch-lanes A,B,..     also measure batched decode (several sequences'
                           steps as one graph) of each lane count: wall and
                           process CPU time per step, tokens/s, and tokens
                           per CPU-second against 1 lane (include 1 for
                           that ratio); each count other than 1 needs a
                           graph compiled with npu-compile --decode-batch
                           (default: none)

profiling (instead of the speed measurements):
  --profile                time every command of one prefill (of the first
                           --prompt-lengths entry) and one decode step on the
                           device: time, bytes moved, GB/s and GOP/s per
                           opcode and per layer, against the roofline (the
                           measured read bandwidth and the best MATMUL rate
                           of the prefill); with --batch-lanes also one
                           batched decode step of each lane count; needs
                           DRM_LNPU_CAP_PROFILING
  --trace FILE.json        with --profile or alone: write a Chrome/Perfetto
                           trace of every timed graph run (jobs and commands
                           on the engines, submits and waits on the host)

output:
  --json                   one JSON object instead of the text tables
  -h, --help               show this help
)";

struct CommandLine {
  std::string model_path;  // -m; exactly one of model_path and preset is set
  std::string preset;      // --synthetic
  std::string weights = "q8";
  bool weights_given = false;
  std::string models_dir;  // --models-dir; empty = $LNPU_MODELS_DIR or "models"
  std::string device = "auto";
  bool json = false;
  std::string placement = "auto";  // --placement: auto, copy or import
  std::string weight_panels = "on";  // --weight-panels: on, p16 or off
  std::string q6k = "keep";          // --q6k: keep or convert
  bool profile = false;    // --profile
  std::string trace_path;  // --trace; empty = no trace
  uint64_t bandwidth_bytes = 0;  // 0 = DefaultBufferBytes()
  int bandwidth_runs = 5;
  ModelBenchmarkOptions benchmark;
  // --batch-lanes, each >= 1; empty = no batched decode section.
  std::vector<uint32_t> batch_lanes;
};

// The parsed command line, or nullopt after printing the usage for --help.
// InvalidArgument naming the offending argument and what is accepted.
absl::StatusOr<std::optional<CommandLine>> ParseCommandLine(int argc, char** argv);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_COMMAND_LINE_H_
