#include "tools/common/flag_command_line.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace lnpu::tools {
namespace {

constexpr size_t kHelpColumn = 28;  // where the help text of an entry starts
constexpr size_t kLineWidth = 80;

// "--top-k N" for an int flag named top_k; "-m PATH"-style single letters
// get one dash.
std::string EntryName(const absl::CommandLineFlag& flag) {
  const std::string dashed = absl::StrReplaceAll(flag.Name(), {{"_", "-"}});
  std::string entry = absl::StrCat(dashed.size() == 1 ? "-" : "--", dashed);
  if (flag.IsOfType<bool>()) return entry;
  if (flag.IsOfType<std::string>()) return entry + " TEXT";
  if (flag.IsOfType<std::vector<std::string>>()) return entry + " A,B,..";
  if (flag.IsOfType<float>() || flag.IsOfType<double>()) return entry + " X";
  return entry + " N";
}

// `text` word-wrapped into lines that start at column kHelpColumn.
void AppendWrapped(absl::string_view text, std::string* out) {
  size_t column = kHelpColumn;
  bool first = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!first && column + 1 + word.size() > kLineWidth) {
      absl::StrAppend(out, "\n", std::string(kHelpColumn, ' '));
      column = kHelpColumn;
      first = true;
    }
    if (!first) {
      out->push_back(' ');
      ++column;
    }
    absl::StrAppend(out, word);
    column += word.size();
    first = false;
  }
  out->push_back('\n');
}

// Abseil reports a flag's file without leading slashes (the default
// FlagsUsageConfig::normalize_filename), so an absolute __FILE__ is compared
// without them too.
std::string WithoutLeadingSlashes(absl::string_view path) {
  const size_t start = path.find_first_not_of('/');
  return std::string(start == absl::string_view::npos ? "" : path.substr(start));
}

}  // namespace

std::string FlagUsage(const char* synopsis, const char* flags_file) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (WithoutLeadingSlashes(flag->Filename()) == WithoutLeadingSlashes(flags_file)) {
      flags.push_back(flag);
    }
  }
  // The one-letter flags (-m, -p) first, then the rest by name.
  std::sort(flags.begin(), flags.end(), [](const auto* a, const auto* b) {
    return std::make_pair(a->Name().size() > 1, a->Name()) <
           std::make_pair(b->Name().size() > 1, b->Name());
  });
  std::string usage = absl::StrCat(
      synopsis, "\noptions (spelled with dashes or underscores: --top-k or --top_k):\n");
  for (const absl::CommandLineFlag* flag : flags) {
    std::string entry = absl::StrCat("  ", EntryName(*flag));
    entry += entry.size() + 2 <= kHelpColumn ? std::string(kHelpColumn - entry.size(), ' ')
                                             : "\n" + std::string(kHelpColumn, ' ');
    usage += entry;
    std::string help = flag->Help();
    const std::string default_value = flag->DefaultValue();
    if (!default_value.empty() && !flag->IsOfType<bool>()) {
      absl::StrAppend(&help, " (default ", default_value, ")");
    }
    AppendWrapped(help, &usage);
  }
  absl::StrAppend(&usage, "  -h, --help", std::string(kHelpColumn - 12, ' '), "show this help\n");
  return usage;
}

std::vector<char*> ParseFlagCommandLine(int argc, char** argv, const char* synopsis,
                                        const char* flags_file) {
  absl::SetProgramUsageMessage(synopsis);  // Abseil's --helpfull shows it
  for (int i = 1; i < argc; ++i) {
    char* arg = argv[i];
    if (std::strcmp(arg, "--") == 0) break;  // the rest are not flags
    if (std::strcmp(arg, "-h") == 0 || std::strcmp(arg, "--help") == 0) {
      std::fputs(FlagUsage(synopsis, flags_file).c_str(), stdout);
      std::exit(0);
    }
    if (std::strncmp(arg, "--", 2) != 0) continue;
    for (char* c = arg + 2; *c != '\0' && *c != '='; ++c) {
      if (*c == '-') *c = '_';
    }
  }
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace lnpu::tools
