// npu-compile: compiles a GGUF model (llama, qwen2) into an .lnpu artifact,
// or a synthetic model with random weights in a real shape.
//
//   npu-compile MODEL.gguf -o OUT.lnpu [options]
//   npu-compile --synthetic PRESET -o OUT.lnpu [--seed N] [options]
//   npu-compile --verify FILE.lnpu
//
// Prints a summary of the artifact on success; prints the error and exits
// with status 1 on failure (bad command line included). A progress bar
// goes to stderr when it is a terminal.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/crc32.h"
#include "base/interrupt.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/compiler/llama_source.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "compiler_artifacts/synthetic/synthetic_presets.h"
#include "framework/tokenizer/tokenizer.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tools/common/tool_main.h"

namespace {

constexpr char kUsage[] =
    R"(usage: npu-compile MODEL.gguf -o OUT.lnpu [options]

       npu-compile --synthetic PRESET -o OUT.lnpu [options]
       npu-compile --verify FILE.lnpu

Compiles a GGUF model (architectures listed at the end; tensors F32, F16,
BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL,
IQ4_XS: every type llama-quantize writes for its presets Q4_0 .. Q8_0,
Q2_K .. Q6_K, IQ4_NL, IQ4_XS) into static NPU graphs.

options:
  -o, --output PATH          the artifact to write (required)
  --synthetic PRESET         instead of MODEL.gguf: random weights in the shape
                             of a real model (the presets are listed at the
                             end), written in the --weights type
  --seed N                   seed of the synthetic weights (default 1)
  --models-dir DIR           where models/vocab/ is for --synthetic (default
                             $LNPU_MODELS_DIR, else ./models)
  --max-prompt-len N         prompt tokens a session holds (default 1024)
  --min-response-len N       tokens always left for the response (default 128);
                             the KV cache has max-prompt-len + min-response-len
                             slots
  --prefill-chunks A,B,...   token counts of the prefill graphs (default
                             16,32,64,256; sizes above max-prompt-len are clamped)
  --decode-batch A,B,...     lane counts (up to 64) of batched decode graphs,
                             e.g. 1,2,4: a graph of B lanes runs the next
                             token of B sessions in one pass over the
                             weights (npu-serve batches its sessions' decode
                             steps with them; 1 is the decode graph every
                             artifact has; default none)
  --weights auto|q8|q4|f16|f32|keep
                             matmul weights and embedding: q8 int8 and q4
                             int4, symmetric, an f16 scale per 32 weights
                             (matrices with rows not a multiple of 32 stay
                             f16); auto (default), per tensor: q8 for F32,
                             F16, BF16, Q8_0 and Q6_K tensors, q4 for the
                             2- to 5-bit types (Q2_K..Q5_K, Q4_0..Q5_1,
                             IQ4_*), so a Q4_K_M file stays near its size,
                             and a Q6_K output projection as Q6_K (fewer
                             bytes per decode step than q8; converted to
                             q8 at load on a device that does not prefer
                             Q6_K); keep: F32/F16/Q8_0/Q4_0 as stored, a
                             Q6_K output projection as Q6_K, other
                             quantized types q8
  --kv-dtype f16|f32|q8      KV-cache element type (default f16); q8: int8
                             with an f32 scale per head of each token
                             (about half of f16's memory)
  --max-job-mmacs N          estimated million multiply-adds at most per
                             compute job (default 4096); long prefill graphs
                             are cut into several jobs so that each stays
                             inside the device's job timeout on slow devices
  --verify-rows K            also compile verify graphs, which compute every
                             row's logits, for speculative decoding (npu-llm
                             --speculative) with up to K - 1 proposed tokens
                             per step: one of K rows and smaller ones of 2,
                             4, 8, ... rows for steps with fewer proposals
                             (default: none)
  --keep-layers N            compile only the first N layers, e.g. a cheap
                             self-draft model of the same vocabulary for
                             npu-llm --speculative draft (default: all)
  --verify FILE.lnpu         check an artifact without running it: header,
                             metadata and every weight checksum; exit 0 when
                             intact, 1 naming what is corrupt
  -h, --help                 show this help

Interrupted (SIGINT, SIGTERM), npu-compile removes its temporary files and
exits with 128 + the signal number; the output is never half-written.
)";

struct CommandLine {
  std::string input;
  std::string synthetic;  // preset name, or empty
  uint64_t seed = 1;
  std::string models_dir;
  std::string output;
  std::string verify;  // --verify FILE: check instead of compile
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

// A comma-separated list of positive integers, e.g. "16,64,256".
absl::StatusOr<std::vector<uint32_t>> ParseCounts(const std::string& flag,
                                                  const std::string& text) {
  std::vector<uint32_t> values;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    LNPU_ASSIGN_OR_RETURN(uint32_t n, ParseCount(flag, part));
    values.push_back(n);
  }
  return values;
}

// Returns nullopt (after printing the usage) for --help. Hand-written for the
// positional model path, like npu-bench's parser (so the loops open alike);
// the ABSL_FLAG tools share flag_command_line.h instead.
absl::StatusOr<std::optional<CommandLine>> ParseCommandLine(int argc,
                                                            char** argv) {
  CommandLine line;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage << "\narchitectures: " << lnpu::compiler::kSupportedArchitectures
                << "\nsynthetic presets: " << lnpu::synthetic::SyntheticPresetNames() << "\n";
      return std::nullopt;
    }
    const bool takes_value = arg == "-o" || arg == "--output" || arg == "--max-prompt-len" ||
                             arg == "--min-response-len" || arg == "--prefill-chunks" ||
                             arg == "--decode-batch" ||
                             arg == "--weights" || arg == "--kv-dtype" || arg == "--synthetic" ||
                             arg == "--seed" || arg == "--models-dir" || arg == "--max-job-mmacs" ||
                             arg == "--verify" || arg == "--verify-rows" || arg == "--keep-layers";
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
      LNPU_ASSIGN_OR_RETURN(uint32_t n, ParseCount(arg, value));
      line.options.max_prompt_len = n;
    } else if (arg == "--min-response-len") {
      LNPU_ASSIGN_OR_RETURN(uint32_t n, ParseCount(arg, value));
      line.options.min_response_len = n;
    } else if (arg == "--prefill-chunks") {
      LNPU_ASSIGN_OR_RETURN(line.options.prefill_chunks, ParseCounts(arg, value));
    } else if (arg == "--decode-batch") {
      LNPU_ASSIGN_OR_RETURN(line.options.decode_batches, ParseCounts(arg, value));
    } else if (arg == "--max-job-mmacs") {
      LNPU_ASSIGN_OR_RETURN(uint32_t n, ParseCount(arg, value));
      line.options.max_job_macs = uint64_t{n} * 1000000;
    } else if (arg == "--verify-rows" || arg == "--keep-layers") {
      LNPU_ASSIGN_OR_RETURN(uint32_t n, ParseCount(arg, value));
      (arg == "--verify-rows" ? line.options.verify_rows : line.options.keep_layers) = n;
    } else if (arg == "--synthetic") {
      line.synthetic = value;
    } else if (arg == "--verify") {
      line.verify = value;
    } else if (arg == "--models-dir") {
      line.models_dir = value;
    } else if (arg == "--seed") {
      if (!absl::SimpleAtoi(value, &line.seed)) {
        return absl::InvalidArgumentError(
            "--seed expects a non-negative integer, got '" + value + "'");
      }
    } else if (arg == "--kv-dtype") {
      using KvType = lnpu::compiler::CompileOptions::KvType;
      if (value == "f16") {
        line.options.kv_dtype = KvType::kF16;
      } else if (value == "f32") {
        line.options.kv_dtype = KvType::kF32;
      } else if (value == "q8") {
        line.options.kv_dtype = KvType::kQ8;
      } else {
        return absl::InvalidArgumentError(
            "--kv-dtype expects f16, f32 or q8, got '" + value + "'");
      }
    } else {  // --weights
      LNPU_ASSIGN_OR_RETURN(line.options.weights, lnpu::compiler::ParseWeightType(value));
    }
  }
  if (!line.verify.empty()) {
    if (!line.input.empty() || !line.synthetic.empty() || !line.output.empty()) {
      return absl::InvalidArgumentError("--verify FILE takes no model, --synthetic or -o");
    }
    return line;
  }
  if (line.input.empty() == line.synthetic.empty()) {
    return absl::InvalidArgumentError(
        "give exactly one of an input MODEL.gguf and --synthetic PRESET");
  }
  if (line.output.empty()) {
    return absl::InvalidArgumentError("no output given (-o OUT.lnpu)");
  }
  return line;
}

const char* DtypeName(uint32_t dtype) {
  switch (dtype) {
    case LNPU_DTYPE_F32: return "F32";
    case LNPU_DTYPE_F16: return "F16";
    case LNPU_DTYPE_Q8_0: return "Q8_0";
    case LNPU_DTYPE_Q4_0: return "Q4_0";
    case LNPU_DTYPE_Q6_K: return "Q6_K";
    default: return "other";
  }
}

// A progress bar on stderr, redrawn when the percentage changes.
class ProgressBar {
 public:
  void Update(uint64_t done, uint64_t total) {
    const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
    if (percent == percent_) return;
    percent_ = percent;
    constexpr int kWidth = 40;
    const int filled = percent * kWidth / 100;
    std::fprintf(stderr, "\rweights [%s%s] %3d%% %llu MiB", 
                 std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), percent,
                 static_cast<unsigned long long>(done >> 20));
    if (done == total) std::fprintf(stderr, "\n");
  }

 private:
  int percent_ = -1;
};

// The GGUF type a synthetic model is generated in for `weights`, so that
// compiling it copies the weights without converting them again.
lnpu::gguf::GgmlType SyntheticType(
    lnpu::compiler::CompileOptions::WeightType weights) {
  using WeightType = lnpu::compiler::CompileOptions::WeightType;
  switch (weights) {
    case WeightType::kAuto:
    case WeightType::kQ8: return lnpu::gguf::GgmlType::kQ8_0;
    case WeightType::kQ4: return lnpu::gguf::GgmlType::kQ4_0;
    case WeightType::kF32: return lnpu::gguf::GgmlType::kF32;
    default: return lnpu::gguf::GgmlType::kF16;
  }
}

// Writes the synthetic model of `line` to a temporary GGUF next to the
// output and returns its path.
absl::StatusOr<std::string> WriteSyntheticGguf(const CommandLine& line) {
  std::string models_dir = line.models_dir;
  if (models_dir.empty()) {
    const char* env = std::getenv("LNPU_MODELS_DIR");
    models_dir = env != nullptr ? env : "models";
  }
  LNPU_ASSIGN_OR_RETURN(
      lnpu::synthetic::RandomLlamaSpec spec,
      lnpu::synthetic::SyntheticPresetSpec(line.synthetic, models_dir,
                                           SyntheticType(line.options.weights), line.seed));
  const std::string path = line.output + ".synthetic.gguf";
  LNPU_RETURN_IF_ERROR(lnpu::synthetic::WriteRandomLlamaGguf(spec, path));
  return path;
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
  std::printf("kv cache dtype: %s\n", kv.dtype() == LNPU_DTYPE_F16  ? "f16"
                                      : kv.dtype() == LNPU_DTYPE_I8 ? "q8"
                                                                    : "f32");
  if (kv.window_ring_slots() > 0) {
    const uint64_t row_bytes = lnpu::artifact::KvRowBytes(kv.dtype(), h.n_kv_heads(), h.head_dim());
    uint32_t ring_layers = 0;
    for (uint32_t slots : *kv.layer_slots()) ring_layers += slots == kv.window_ring_slots();
    const uint64_t bytes = lnpu::artifact::KvCacheBytes(kv, h.n_layers(), row_bytes);
    const uint64_t full_bytes = 2ull * h.n_layers() * kv.capacity() * row_bytes;
    std::printf(
        "kv cache window ring: %u of %u layers (window %u) keep %u slots: %llu bytes "
        "per session instead of %llu (%.1f%% saved)\n",
        ring_layers, h.n_layers(), kv.window(), kv.window_ring_slots(),
        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(full_bytes),
        100.0 * static_cast<double>(full_bytes - bytes) / static_cast<double>(full_bytes));
  }
  std::map<std::string, int> dtype_counts;
  for (const fb::Weight* w : *model.weights()) {
    ++dtype_counts[DtypeName(w->dtype())];
  }
  std::printf("weights: %u tensors (", model.weights()->size());
  const char* separator = "";
  for (const auto& [name, count] : dtype_counts) {
    std::printf("%s%d %s", separator, count, name.c_str());
    separator = ", ";
  }
  std::printf("), %llu bytes\n",
              static_cast<unsigned long long>(artifact.data().size()));
  std::printf("buffers:\n");
  for (const fb::Buffer* b : *model.buffers()) {
    std::printf("  %-12s %-12s %llu bytes\n", b->name()->c_str(),
                fb::EnumNameBufferKind(b->kind()),
                static_cast<unsigned long long>(b->size()));
  }
  auto print_graphs = [](const char* title, const auto& graphs, const char* rows) {
    std::printf("%s:\n", title);
    for (const fb::Graph* g : graphs) {
      std::printf("  %-14s %-8s %4u %s:", g->name()->c_str(),
                  fb::EnumNameGraphKind(g->kind()), g->tokens(), rows);
      for (const fb::CommandStream* s : *g->streams()) {
        std::printf(" %s %u bytes (%u relocations)",
                    s->engine() == DRM_LNPU_ENGINE_DMA ? "dma" : "compute",
                    s->commands()->size(), s->relocations()->size());
      }
      std::printf("\n");
    }
  };
  print_graphs("graphs", *model.graphs(), "tokens");
  if (model.decode_batches() != nullptr) {
    print_graphs("batched decode graphs", *model.decode_batches(), "lanes");
  }
}

// --verify: opens (header, metadata, structure) and checks every weight
// checksum.
int Verify(const std::string& path) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<lnpu::artifact::Artifact>> artifact =
      lnpu::artifact::Artifact::Open(path);
  absl::Status intact = artifact.ok() ? (*artifact)->VerifyData() : artifact.status();
  if (!intact.ok()) {
    std::fprintf(stderr, "npu-compile: %s\n", std::string(intact.message()).c_str());
    return 1;
  }
  const lnpu::artifact::fb::DataChecksums* checksums = (*artifact)->model().data_checksums();
  if (checksums == nullptr) {
    std::printf("%s: metadata intact; its weights carry no checksums (compiled before they "
                "existed): compile it again to protect them\n",
                path.c_str());
    return 0;
  }
  std::printf("%s: intact (%llu bytes of weights in %u checksummed chunks, CRC-32C via %s, "
              "%.1f ms)\n",
              path.c_str(), static_cast<unsigned long long>((*artifact)->data().size()),
              checksums->crc32c()->size(), lnpu::Crc32cImplementation(),
              absl::ToDoubleMilliseconds(absl::Now() - start));
  return 0;
}

// The tokenizer's own checks, so that nothing is written that
// framework::Tokenizer would refuse to load.
absl::Status ValidateVocabulary(const lnpu::Vocabulary& vocabulary) {
  return lnpu::framework::Tokenizer::Create(vocabulary).status();
}

int Main(int argc, char** argv) {
  absl::StatusOr<std::optional<CommandLine>> line =
      ParseCommandLine(argc, argv);
  if (!line.ok()) {
    std::fprintf(stderr, "npu-compile: %s (see npu-compile --help)\n",
                 std::string(line.status().message()).c_str());
    return 1;
  }
  if (!line->has_value()) return 0;
  CommandLine& args = **line;
  if (!args.verify.empty()) return Verify(args.verify);
  args.options.validate_vocabulary = ValidateVocabulary;
  ProgressBar progress;
  if (::isatty(STDERR_FILENO)) {
    args.options.progress = [&progress](uint64_t done, uint64_t total) {
      progress.Update(done, total);
    };
  }
  std::string input = args.input;
  if (!args.synthetic.empty()) {
    absl::StatusOr<std::string> synthetic = WriteSyntheticGguf(args);
    if (!synthetic.ok()) {
      std::fprintf(stderr, "npu-compile: %s\n",
                   synthetic.status().ToString().c_str());
      return 1;
    }
    input = *synthetic;
  }
  // The synthetic GGUF is a temporary too: an interrupt removes it.
  const int synthetic_slot = args.synthetic.empty() ? -1 : lnpu::RegisterTemporaryFile(input);
  const absl::Status compiled =
      lnpu::compiler::CompileGguf(input, args.output, args.options);
  if (!args.synthetic.empty()) std::remove(input.c_str());
  lnpu::UnregisterTemporaryFile(synthetic_slot);
  if (!compiled.ok()) {
    std::fprintf(stderr, "npu-compile: %s\n", compiled.ToString().c_str());
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
  using WeightType = lnpu::compiler::CompileOptions::WeightType;
  if (args.options.weights == WeightType::kQ8 ||
      args.options.weights == WeightType::kQ4 ||
      args.options.weights == WeightType::kAuto) {
    std::vector<std::string> fallbacks;
    for (const auto* w : *(*artifact)->model().weights()) {
      if (w->dtype() == LNPU_DTYPE_F16) fallbacks.push_back(w->name()->str());
    }
    if (!fallbacks.empty()) {
      std::printf("note: %zu matrices stay F16 (rows not a multiple of 32 "
                  "elements):",
                  fallbacks.size());
      for (const std::string& name : fallbacks) std::printf(" %s", name.c_str());
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lnpu::tools::RunToolMain("npu-compile", [&] { return Main(argc, argv); });
}
