// npu-compile: compiles a GGUF llama model into an .lnpu artifact.
//
//   npu-compile MODEL.gguf -o OUT.lnpu [--max-prompt-len N]
//       [--min-response-len N] [--prefill-chunks 16,64,256]
//       [--weights keep|f32|f16]
//
// Prints a summary of the artifact on success; prints the error and exits
// with status 1 on failure (bad command line included).
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/format/artifact.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace {

constexpr char kUsage[] =
    R"(usage: npu-compile MODEL.gguf -o OUT.lnpu [options]

Compiles a GGUF llama model (F32/F16 tensors) into static NPU graphs.

options:
  -o, --output PATH          the artifact to write (required)
  --max-prompt-len N         prompt tokens a session holds (default 1024)
  --min-response-len N       tokens always left for the response (default 128);
                             the KV cache has max-prompt-len + min-response-len
                             slots
  --prefill-chunks A,B,...   token counts of the prefill graphs (default
                             16,64,256; sizes above max-prompt-len are clamped)
  --weights keep|f32|f16     element type of matmul weights and the embedding
                             (default keep: as stored in the GGUF)
  -h, --help                 show this help
)";

struct CommandLine {
  std::string input;
  std::string output;
  lnpu::compiler::CompileOptions options;
};

absl::StatusOr<uint32_t> ParseCount(const std::string& flag,
                                    const std::string& text) {
  uint32_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s expects a positive integer, got '%s'", flag, text));
  }
  return value;
}

// Returns nullopt (after printing the usage) for --help.
absl::StatusOr<std::optional<CommandLine>> ParseCommandLine(int argc,
                                                            char** argv) {
  CommandLine line;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return std::nullopt;
    }
    const bool takes_value = arg == "-o" || arg == "--output" ||
                             arg == "--max-prompt-len" ||
                             arg == "--min-response-len" ||
                             arg == "--prefill-chunks" || arg == "--weights";
    if (!takes_value) {
      if (!arg.empty() && arg[0] == '-') {
        return absl::InvalidArgumentError("unknown option " + arg);
      }
      if (!line.input.empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "more than one input model ('%s' and '%s')", line.input, arg));
      }
      line.input = arg;
      continue;
    }
    if (i + 1 >= argc) {
      return absl::InvalidArgumentError(arg + " needs a value");
    }
    const std::string value = argv[++i];
    if (arg == "-o" || arg == "--output") {
      line.output = value;
    } else if (arg == "--max-prompt-len") {
      absl::StatusOr<uint32_t> n = ParseCount(arg, value);
      if (!n.ok()) return n.status();
      line.options.max_prompt_len = *n;
    } else if (arg == "--min-response-len") {
      absl::StatusOr<uint32_t> n = ParseCount(arg, value);
      if (!n.ok()) return n.status();
      line.options.min_response_len = *n;
    } else if (arg == "--prefill-chunks") {
      line.options.prefill_chunks.clear();
      for (const std::string& part :
           std::vector<std::string>(absl::StrSplit(value, ','))) {
        absl::StatusOr<uint32_t> n = ParseCount(arg, part);
        if (!n.ok()) return n.status();
        line.options.prefill_chunks.push_back(*n);
      }
    } else {  // --weights
      using WeightType = lnpu::compiler::CompileOptions::WeightType;
      if (value == "keep") {
        line.options.weights = WeightType::kKeep;
      } else if (value == "f32") {
        line.options.weights = WeightType::kF32;
      } else if (value == "f16") {
        line.options.weights = WeightType::kF16;
      } else {
        return absl::InvalidArgumentError(
            "--weights expects keep, f32 or f16, got '" + value + "'");
      }
    }
  }
  if (line.input.empty()) {
    return absl::InvalidArgumentError("no input model given");
  }
  if (line.output.empty()) {
    return absl::InvalidArgumentError("no output given (-o OUT.lnpu)");
  }
  return line;
}

void PrintSummary(const lnpu::artifact::Artifact& artifact) {
  namespace fb = lnpu::artifact::fb;
  const fb::Model& model = artifact.model();
  const fb::HParams& h = *model.hparams();
  std::printf("wrote %s (%llu bytes)\n", artifact.path().c_str(),
              static_cast<unsigned long long>(artifact.header().file_size));
  std::printf("model: %s \"%s\", vocab %u, dim %u, %u layers, %u heads "
              "(%u kv), ffn %u\n",
              h.architecture()->c_str(), h.name() ? h.name()->c_str() : "",
              h.vocab_size(), h.dim(), h.n_layers(), h.n_heads(),
              h.n_kv_heads(), h.ffn_dim());
  const fb::KvCache& kv = *model.kv_cache();
  std::printf("kv cache: %u slots (max prompt %u + min response %u)\n",
              kv.capacity(), kv.max_prompt_len(), kv.min_response_len());
  std::printf("weights: %u tensors, %llu bytes\n", model.weights()->size(),
              static_cast<unsigned long long>(artifact.data().size()));
  std::printf("buffers:\n");
  for (const fb::Buffer* b : *model.buffers()) {
    std::printf("  %-12s %-12s %llu bytes\n", b->name()->c_str(),
                fb::EnumNameBufferKind(b->kind()),
                static_cast<unsigned long long>(b->size()));
  }
  std::printf("graphs:\n");
  for (const fb::Graph* g : *model.graphs()) {
    std::printf("  %-12s %-8s %4u tokens:", g->name()->c_str(),
                fb::EnumNameGraphKind(g->kind()), g->tokens());
    for (const fb::CommandStream* s : *g->streams()) {
      std::printf(" %s %u bytes (%u relocations)",
                  s->engine() == DRM_LNPU_ENGINE_DMA ? "dma" : "compute",
                  s->commands()->size(), s->relocations()->size());
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<std::optional<CommandLine>> line =
      ParseCommandLine(argc, argv);
  if (!line.ok()) {
    std::fprintf(stderr, "npu-compile: %s (see npu-compile --help)\n",
                 std::string(line.status().message()).c_str());
    return 1;
  }
  if (!line->has_value()) return 0;
  const CommandLine& args = **line;
  if (absl::Status s =
          lnpu::compiler::CompileGguf(args.input, args.output, args.options);
      !s.ok()) {
    std::fprintf(stderr, "npu-compile: %s\n", s.ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<lnpu::artifact::Artifact>> artifact =
      lnpu::artifact::Artifact::Open(args.output);
  if (!artifact.ok()) {
    std::fprintf(stderr, "npu-compile: the written artifact does not verify: %s\n",
                 artifact.status().ToString().c_str());
    return 1;
  }
  PrintSummary(**artifact);
  return 0;
}
