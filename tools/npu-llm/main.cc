// npu-llm: generates text with a compiled model, streaming it to stdout,
// then prints time to first token, decode speed and peak memory to stderr.
#include <sys/resource.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "framework/llm.h"

ABSL_FLAG(std::string, m, "", "compiled model artifact (.lnpu), from npu-compile");
ABSL_FLAG(std::string, p, "", "prompt text");
ABSL_FLAG(int, n, 128, "maximum number of tokens to generate");
ABSL_FLAG(float, temp, 0.0f, "sampling temperature; 0 = greedy");
ABSL_FLAG(int, top_k, 0, "sample among the k most likely tokens; 0 = all");
ABSL_FLAG(float, top_p, 1.0f, "nucleus sampling mass in (0, 1]");
ABSL_FLAG(uint64_t, seed, 0, "random seed for sampling");
ABSL_FLAG(std::string, device, "auto",
          "\"auto\" (lnpu /dev/accel node, else the software NPU), \"soft\", "
          "or a device node path");

namespace {

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "generates text on the NPU.\n"
      "usage: npu-llm -m MODEL.lnpu -p PROMPT [-n N] [--temp T] [--seed S]");
  absl::ParseCommandLine(argc, argv);
  const std::string model_path = absl::GetFlag(FLAGS_m);
  if (model_path.empty()) {
    std::cerr << "npu-llm: no model given: pass -m MODEL.lnpu (make one with "
                 "npu-compile MODEL.gguf -o MODEL.lnpu)\n";
    return 2;
  }

  lnpu::framework::LlmOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  auto llm = lnpu::framework::Llm::Load(model_path, options);
  if (!llm.ok()) {
    std::cerr << "npu-llm: " << llm.status().message() << "\n";
    return 1;
  }

  lnpu::framework::GenerationConfig config;
  config.max_new_tokens = absl::GetFlag(FLAGS_n);
  config.temperature = absl::GetFlag(FLAGS_temp);
  config.top_k = absl::GetFlag(FLAGS_top_k);
  config.top_p = absl::GetFlag(FLAGS_top_p);
  config.seed = absl::GetFlag(FLAGS_seed);

  const std::string prompt = absl::GetFlag(FLAGS_p);
  std::cout << prompt << std::flush;
  auto result = (*llm)->Generate(
      prompt, config, [](int32_t, std::string_view text) {
        std::cout << text << std::flush;
        return true;
      });
  std::cout << "\n";
  if (!result.ok()) {
    std::cerr << "npu-llm: " << result.status().message() << "\n";
    return 1;
  }
  const auto& stats = result->stats;
  std::cerr << absl::StrFormat(
      "\n[device: %s; prompt %d tokens, generated %d tokens, finish: %s]\n"
      "time to first token: %.2f ms\n"
      "decode: %.1f tokens/s\n"
      "peak RSS: %.1f MiB\n",
      (*llm)->device().Describe(), stats.prompt_tokens,
      stats.generated_tokens,
      lnpu::framework::FinishReasonName(result->finish_reason),
      stats.time_to_first_token_ms, stats.decode_tokens_per_second,
      PeakRssMiB());
  return 0;
}
