// The command line of a tool whose options are ABSL_FLAGs (npu-llm,
// npu-llm-session-bench): the tool's own usage on -h / --help, listing
// every flag the tool defines, instead of Abseil's ("No flags matched"),
// and the dash spellings the documentation uses (--top-k) as well as
// Abseil's underscores (--top_k). The tools with a hand-written parser
// spell their options with dashes already.
#ifndef TOOLS_COMMON_FLAG_COMMAND_LINE_H_
#define TOOLS_COMMON_FLAG_COMMAND_LINE_H_

#include <string>
#include <vector>

namespace lnpu::tools {

// The usage text: `synopsis` (a "usage: ..." line and a description,
// newline-terminated), then one entry per ABSL_FLAG defined in the source
// file `flags_file` (pass __FILE__ from the file that defines them): the
// one-letter flags first, then the others by name, spelled with dashes, each
// with its help text and default value.
std::string FlagUsage(const char* synopsis, const char* flags_file);

// absl::ParseCommandLine(argc, argv) after two steps:
//   - "-h" or "--help" before any "--" prints FlagUsage(synopsis,
//     flags_file) to stdout and exits 0;
//   - the name part of each "--name[=value]" before any "--" has its dashes
//     rewritten to underscores, in place in argv.
// Returns absl::ParseCommandLine's result: argv[0], then the positional
// arguments. An unknown flag or a bad value exits 1 with Abseil's message,
// as absl::ParseCommandLine does. Call once, from main().
std::vector<char*> ParseFlagCommandLine(int argc, char** argv, const char* synopsis,
                                        const char* flags_file);

}  // namespace lnpu::tools

#endif  // TOOLS_COMMON_FLAG_COMMAND_LINE_H_
