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

// Every seed: the areas above and OpcodeSeeds().
std::vector<Seed> SeedCorpus();

// The seed "op_<name>" of each opcode of lnpu_accel.h, in opcode order:
// every flag, dtype and mode of that opcode on valid operands, in jobs
// that all complete.
struct OpcodeSeed {
  uint16_t opcode;  // LNPU_OP_*
  std::string name;
  std::vector<uint8_t> (*program)();
};
std::vector<OpcodeSeed> OpcodeSeeds();

}  // namespace lnpu::fuzz

#endif  // TESTS_FUZZ_SEED_CORPUS_H_
