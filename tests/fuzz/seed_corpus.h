// The seed corpus of the software-NPU fuzzer: hand-written ioctl programs
// (tests/fuzz/ioctl_program.h) that reach every ioctl, every opcode with
// valid operands, job chains across engines, faults, USERPTR imports,
// mappings that outlive their handle, two files and ABI size variants.
// tests/fuzz/corpus/ holds them as files (written by make_seed_corpus);
// fuzz_corpus_test checks that the two agree and that each seed does what
// its name says.
#ifndef TESTS_FUZZ_SEED_CORPUS_H_
#define TESTS_FUZZ_SEED_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace lnpu::fuzz {

struct Seed {
  std::string name;  // file name in tests/fuzz/corpus/
  std::vector<uint8_t> bytes;
};

std::vector<Seed> SeedCorpus();

}  // namespace lnpu::fuzz

#endif  // TESTS_FUZZ_SEED_CORPUS_H_
