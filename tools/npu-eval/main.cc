// npu-eval: accuracy of a model's q8 / q4 / f16 weights against its f32
// weights (quantization_eval.h), as a table or one JSON object.
//
//   npu-eval MODEL.gguf [--text TEXT | --file F | --random-tokens N] ...
//   npu-eval --synthetic PRESET ...
//
// Exit status 0 on success, 1 with a message on stderr otherwise (bad
// command line included).
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/interrupt.h"
#include "base/status_macros.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "compiler_artifacts/synthetic/synthetic_presets.h"
#include "framework/tokenizer/tokenizer.h"
#include "tools/common/json.h"
#include "tools/common/model_tokenizer.h"
#include "tools/common/temp_directory.h"
#include "tools/common/tool_main.h"
#include "tools/npu-eval/quantization_eval.h"

namespace {

constexpr char kUsage[] =
    R"(usage: npu-eval MODEL.gguf [options]
       npu-eval --synthetic PRESET [options]

Compiles the model with f32 weights (a quantized GGUF's own weights,
dequantized exactly) and an F32 KV cache (the baseline) and
with each weight type of --weights at the --kv-dtype KV cache, feeds every
compiled model the same tokens one at a time (teacher forcing) and compares
the logits at each position with the baseline's: top-1 agreement, mean and
max |logit error| in units of the baseline logits' standard deviation at that
position, and the KL divergence of the softmax distributions (nats).

model (exactly one):
  MODEL.gguf               a GGUF model (any architecture npu-compile takes)
  --synthetic PRESET       a random-weight f32 model of a real model's shapes
                           (the presets are listed at the end)
  --models-dir DIR         where models/vocab/ is for --synthetic (default
                           $LNPU_MODELS_DIR, else ./models)

tokens (at most one; default --random-tokens 64):
  --text TEXT              TEXT tokenized by the model's tokenizer
  -f, --file F             the text of file F, tokenized
  --random-tokens N        N token ids drawn uniformly from the vocabulary
  --seed S                 seed of the random token ids (default 1)
  --no-bos                 leave out BOS before a text

comparison:
  --weights A,B,..         weight types compared with the baseline, from
                           f32, f16, q8, q4, auto, keep (npu-compile
                           --weights; default q8,q4,f16); f32 here
                           measures the KV cache alone
  --kv-dtype f16|q8|f32    KV cache of the compared models (default f16)
  --device D               "auto" (default), "soft" or a device node path

output:
  --json                   one JSON object instead of the table
  -h, --help               show this help
)";

struct CommandLine {
  std::string model;
  std::string preset;
  std::string models_dir;
  std::optional<std::string> text;
  std::optional<std::string> file;
  std::optional<uint32_t> random_tokens;
  uint64_t seed = 1;
  bool no_bos = false;
  lnpu::eval::EvalOptions eval;
  bool json = false;
};

absl::StatusOr<std::optional<CommandLine>> ParseCommandLine(int argc, char** argv) {
  CommandLine line;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> absl::StatusOr<std::string> {
      if (i + 1 == argc) return absl::InvalidArgumentError(arg + " needs a value");
      return std::string(argv[++i]);
    };
    auto number = [&](uint64_t max) -> absl::StatusOr<uint64_t> {
      LNPU_ASSIGN_OR_RETURN(std::string text, value());
      uint64_t n = 0;
      if (!absl::SimpleAtoi(text, &n) || n > max) {
        return absl::InvalidArgumentError(
            absl::StrCat(arg, " '", text, "': give a whole number up to ", max));
      }
      return n;
    };
    absl::Status status;
    if (arg.empty() || arg[0] != '-') {
      positional.push_back(arg);
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage << "\nsynthetic presets: " << lnpu::synthetic::SyntheticPresetNames()
                << "\n";
      return std::nullopt;
    } else if (arg == "--json") {
      line.json = true;
    } else if (arg == "--no-bos") {
      line.no_bos = true;
    } else if (arg == "--synthetic" || arg == "--models-dir" || arg == "--text" ||
               arg == "-f" || arg == "--file" || arg == "--device" || arg == "--weights" ||
               arg == "--kv-dtype") {
      LNPU_ASSIGN_OR_RETURN(const std::string text, value());
      if (arg == "--synthetic") line.preset = text;
      if (arg == "--models-dir") line.models_dir = text;
      if (arg == "--text") line.text = text;
      if (arg == "-f" || arg == "--file") line.file = text;
      if (arg == "--device") line.eval.device = text;
      if (arg == "--weights") line.eval.weights = absl::StrSplit(text, ',');
      if (arg == "--kv-dtype") line.eval.kv_dtype = text;
    } else if (arg == "--random-tokens") {
      LNPU_ASSIGN_OR_RETURN(uint64_t n, number(1u << 20));
      if (n == 0) return absl::InvalidArgumentError("--random-tokens must be at least 1");
      line.random_tokens = static_cast<uint32_t>(n);
    } else if (arg == "--seed") {
      LNPU_ASSIGN_OR_RETURN(uint64_t n, number(UINT64_MAX));
      line.seed = n;
    } else {
      return absl::InvalidArgumentError("unknown option " + arg);
    }
  }
  if (positional.size() > 1) {
    return absl::InvalidArgumentError("more than one MODEL: " + positional[1]);
  }
  if (!positional.empty()) line.model = positional[0];
  if (line.model.empty() == line.preset.empty()) {
    return absl::InvalidArgumentError("give exactly one of MODEL.gguf and --synthetic PRESET");
  }
  if (int(line.text.has_value()) + int(line.file.has_value()) +
          int(line.random_tokens.has_value()) > 1) {
    return absl::InvalidArgumentError("give at most one of --text, --file and --random-tokens");
  }
  if (!line.text && !line.file && !line.random_tokens) line.random_tokens = 64;
  return line;
}

// The tokens to feed: the text tokenized, or seeded random ids.
absl::StatusOr<std::vector<int32_t>> Tokens(const CommandLine& line,
                                            const std::string& gguf_path) {
  LNPU_ASSIGN_OR_RETURN(lnpu::tools::ModelTokenizer model,
                        lnpu::tools::ReadModelTokenizer(gguf_path));
  if (line.random_tokens) {
    const auto vocab = static_cast<int32_t>(model.vocabulary.tokens.size());
    std::mt19937_64 random(line.seed);
    std::uniform_int_distribution<int32_t> id(0, vocab - 1);
    std::vector<int32_t> tokens(*line.random_tokens);
    for (int32_t& token : tokens) token = id(random);
    return tokens;
  }
  std::string text;
  if (line.file) {
    LNPU_ASSIGN_OR_RETURN(std::string read, lnpu::tools::ReadTextFile(*line.file));
    text = std::move(read);
  } else {
    text = *line.text;
  }
  const bool add_bos = !line.no_bos && model.vocabulary.add_bos;
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<lnpu::framework::Tokenizer> tokenizer,
                        lnpu::framework::Tokenizer::Create(std::move(model.vocabulary)));
  return tokenizer->Encode(text, add_bos);
}

std::string FormatText(const std::string& model, const std::string& source,
                       const std::string& kv_dtype, const lnpu::eval::EvalResult& result) {
  std::string out = absl::StrFormat(
      "model: %s (vocabulary %u)\ntokens: %u, %s, teacher-forced through the decode graph\n"
      "baseline: f32 weights, f32 KV cache; variants: %s KV cache\n"
      "error: |logit - baseline| / standard deviation of the baseline logits at the position\n\n",
      model, result.vocab_size, result.positions, source, kv_dtype);
  absl::StrAppendFormat(&out, "%-8s %12s %13s %11s %10s %10s %10s\n", "weights", "artifact MiB",
                        "top-1 agree", "mean error", "max error", "mean KL", "max KL");
  for (const lnpu::eval::VariantAccuracy& v : result.variants) {
    const lnpu::eval::LogitAccuracySummary& a = v.accuracy;
    absl::StrAppendFormat(&out, "%-8s %12.2f %12.2f%% %11.4f %10.4f %10.2e %10.2e\n",
                          v.weights, v.artifact_bytes / 1048576.0, 100.0 * a.top1_agreement,
                          a.mean_normalized_error, a.max_normalized_error, a.mean_kl,
                          a.max_kl);
  }
  return out;
}

std::string FormatJson(const std::string& model, const std::string& source,
                       const std::string& kv_dtype, const lnpu::eval::EvalResult& result) {
  lnpu::tools::JsonWriter json;
  json.BeginObject()
      .Key("model").String(model)
      .Key("vocab_size").Uint(result.vocab_size)
      .Key("positions").Uint(result.positions)
      .Key("tokens").String(source)
      .Key("baseline").BeginObject()
      .Key("weights").String("f32")
      .Key("kv_dtype").String("f32")
      .EndObject()
      .Key("variants").BeginArray();
  for (const lnpu::eval::VariantAccuracy& v : result.variants) {
    const lnpu::eval::LogitAccuracySummary& a = v.accuracy;
    json.BeginObject()
        .Key("weights").String(v.weights)
        .Key("kv_dtype").String(kv_dtype)
        .Key("artifact_bytes").Uint(v.artifact_bytes)
        .Key("top1_matches").Uint(a.top1_matches)
        .Key("top1_agreement").Double(a.top1_agreement)
        .Key("mean_normalized_error").Double(a.mean_normalized_error)
        .Key("max_normalized_error").Double(a.max_normalized_error)
        .Key("mean_kl").Double(a.mean_kl)
        .Key("max_kl").Double(a.max_kl)
        .EndObject();
  }
  json.EndArray().EndObject();
  return json.text();
}

absl::Status Run(CommandLine line) {
  std::unique_ptr<lnpu::tools::TempDirectory> synthetic_dir;
  std::string gguf_path = line.model;
  std::string model_name = line.model;
  if (!line.preset.empty()) {
    std::string models_dir = line.models_dir;
    if (models_dir.empty()) {
      const char* env = std::getenv("LNPU_MODELS_DIR");
      models_dir = env != nullptr ? env : "models";
    }
    LNPU_ASSIGN_OR_RETURN(lnpu::synthetic::RandomLlamaSpec spec,
                          lnpu::synthetic::SyntheticPresetSpec(
                              line.preset, models_dir, lnpu::gguf::GgmlType::kF32, /*seed=*/1));
    LNPU_ASSIGN_OR_RETURN(std::unique_ptr<lnpu::tools::TempDirectory> dir,
                          lnpu::tools::TempDirectory::Create("npu-eval"));
    synthetic_dir = std::move(dir);
    gguf_path = synthetic_dir->path() + "/model.gguf";
    if (!line.json) std::cerr << "npu-eval: writing the synthetic " << line.preset << " model\n";
    LNPU_RETURN_IF_ERROR(lnpu::synthetic::WriteRandomLlamaGguf(spec, gguf_path));
    model_name = absl::StrCat("synthetic ", line.preset, " (f32, seed 1)");
  }
  LNPU_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, Tokens(line, gguf_path));
  const std::string source =
      line.random_tokens ? absl::StrCat("random (seed ", line.seed, ")") : "text";
  if (!line.json) {
    line.eval.on_compile = [](std::string_view what) {
      std::cerr << "npu-eval: compiling and running " << what << "\n";
    };
  }
  LNPU_ASSIGN_OR_RETURN(lnpu::eval::EvalResult result,
                        lnpu::eval::EvaluateWeights(gguf_path, tokens, line.eval));
  std::cout << (line.json ? FormatJson(model_name, source, line.eval.kv_dtype, result)
                          : FormatText(model_name, source, line.eval.kv_dtype, result))
            << std::flush;
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  absl::StatusOr<std::optional<CommandLine>> line = ParseCommandLine(argc, argv);
  if (!line.ok()) {
    std::cerr << "npu-eval: " << line.status().message() << " (see npu-eval --help)\n";
    return 1;
  }
  if (!line->has_value()) return 0;  // --help
  // An interrupt ends the evaluation between two tokens; the temporary
  // directory is removed on the way out.
  lnpu::InterruptScope interrupt_scope;
  if (absl::Status status = Run(**std::move(line)); !status.ok()) {
    std::cerr << "npu-eval: " << status.message() << "\n";
    return lnpu::InterruptRequested() ? lnpu::InterruptExitCode() : 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lnpu::tools::RunToolMain("npu-eval", [&] { return Main(argc, argv); });
}
