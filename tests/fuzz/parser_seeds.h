// Seed corpora of the parser fuzz targets (parser_targets.h): small valid
// inputs named valid_*, which the target's parser accepts, and near-valid
// ones named bad_* (truncated, a wrong magic, version, checksum or field),
// which it rejects. tests/fuzz/corpus/<target>/ holds them as files
// (written by make_seed_corpus); parser_corpus_test checks that the two
// agree and that each seed is accepted or rejected as its name says.
#ifndef TESTS_FUZZ_PARSER_SEEDS_H_
#define TESTS_FUZZ_PARSER_SEEDS_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/fuzz/seed_corpus.h"

namespace lnpu::fuzz {

// The seeds of `target` (a ParserTarget name). The artifact seeds are
// models compiled on the fly (deterministically) in ScratchDirectory();
// errors are those of the GGUF writer and the compiler. InvalidArgument
// for an unknown target.
absl::StatusOr<std::vector<Seed>> ParserSeeds(std::string_view target);

}  // namespace lnpu::fuzz

#endif  // TESTS_FUZZ_PARSER_SEEDS_H_
