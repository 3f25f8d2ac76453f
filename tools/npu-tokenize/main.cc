// npu-tokenize: prints the token ids of a text for a model's vocabulary, as
// llama.cpp's tokenize tool does.
//
//   npu-tokenize MODEL TEXT
//   npu-tokenize MODEL --file F [--no-bos]
//
// MODEL is a GGUF model or an .lnpu artifact. Prints the ids separated by
// spaces on one line; prints the error and exits with status 1 on failure
// (bad command line included).
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "framework/tokenizer/tokenizer.h"
#include "tools/common/model_tokenizer.h"
#include "tools/common/tool_main.h"

namespace {

constexpr char kUsage[] =
    R"(usage: npu-tokenize MODEL TEXT [options]
       npu-tokenize MODEL --file F [options]

Prints the token ids of TEXT for the vocabulary of MODEL (a GGUF model or
an .lnpu artifact), separated by spaces. Special-token spellings such as
"</s>" are tokenized as plain text.

options:
  -f, --file F   read the text from file F (as is, final newline included)
  --no-bos       leave out BOS (by default it is added when the vocabulary
                 asks for it)
  --             end of options: the next argument is TEXT even if it
                 starts with '-'
  -h, --help     show this help
)";

struct CommandLine {
  std::string model;
  std::optional<std::string> text;
  std::optional<std::string> file;
  bool no_bos = false;
};

// Returns nullopt (after printing the usage) for --help.
absl::StatusOr<std::optional<CommandLine>> ParseCommandLine(int argc,
                                                            char** argv) {
  CommandLine line;
  std::vector<std::string> positional;
  bool options_ended = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (options_ended || arg.empty() || arg[0] != '-' || arg == "-") {
      positional.push_back(arg);
    } else if (arg == "--") {
      options_ended = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return std::nullopt;
    } else if (arg == "--no-bos") {
      line.no_bos = true;
    } else if (arg == "-f" || arg == "--file") {
      if (i + 1 == argc) {
        return absl::InvalidArgumentError(arg + " needs a file name");
      }
      line.file = argv[++i];
    } else {
      return absl::InvalidArgumentError("unknown option " + arg);
    }
  }
  if (positional.empty()) {
    return absl::InvalidArgumentError("missing MODEL (a .gguf or .lnpu file)");
  }
  line.model = positional[0];
  if (positional.size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", positional[2],
        "': quote TEXT that contains spaces"));
  }
  if (positional.size() == 2) line.text = positional[1];
  if (line.text.has_value() == line.file.has_value()) {
    return absl::InvalidArgumentError(
        "give either TEXT or --file F, exactly one of them");
  }
  return line;
}

absl::Status Run(const CommandLine& line) {
  LNPU_ASSIGN_OR_RETURN(lnpu::tools::ModelTokenizer model,
                        lnpu::tools::ReadModelTokenizer(line.model));
  const bool add_bos = model.vocabulary.add_bos && !line.no_bos;
  absl::StatusOr<std::unique_ptr<lnpu::framework::Tokenizer>> tokenizer =
      lnpu::framework::Tokenizer::Create(std::move(model.vocabulary));
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(tokenizer.status(), line.model, ": tokenizer: ");
  std::string text;
  if (line.file.has_value()) {
    LNPU_ASSIGN_OR_RETURN(std::string read, lnpu::tools::ReadTextFile(*line.file));
    text = std::move(read);
  } else {
    text = *line.text;
  }
  absl::StatusOr<std::vector<int32_t>> ids = (*tokenizer)->Encode(text, add_bos);
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(ids.status(), line.file.has_value() ? *line.file : "TEXT", ": ");
  std::cout << absl::StrJoin(*ids, " ") << "\n";
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  absl::StatusOr<std::optional<CommandLine>> line = ParseCommandLine(argc, argv);
  if (!line.ok()) {
    std::cerr << "npu-tokenize: " << line.status().message()
              << " (see npu-tokenize --help)\n";
    return 1;
  }
  if (!line->has_value()) return 0;
  if (absl::Status status = Run(**line); !status.ok()) {
    std::cerr << "npu-tokenize: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lnpu::tools::RunToolMain("npu-tokenize", [&] { return Main(argc, argv); });
}
