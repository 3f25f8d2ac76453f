// The fuzzer's seeds and corpus, replayed without libFuzzer: each seed
// does what its name says, the committed corpus matches the seed
// generator, and every corpus file (seeds and saved findings) runs without
// breaking a UAPI contract.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tests/fuzz/ioctl_program.h"
#include "tests/fuzz/seed_corpus.h"

namespace lnpu::fuzz {
namespace {

// The ioctl fuzzer's folder of $LNPU_FUZZ_CORPUS (tests/fuzz/corpus).
std::filesystem::path CorpusDir() {
  const char* dir = std::getenv("LNPU_FUZZ_CORPUS");
  return std::filesystem::path(dir != nullptr ? dir : "tests/fuzz/corpus") /
         "softnpu_ioctl";
}

std::map<std::string, std::vector<uint8_t>> ReadCorpus() {
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& entry : std::filesystem::directory_iterator(CorpusDir())) {
    std::ifstream in(entry.path(), std::ios::binary);
    files[entry.path().filename().string()] = std::vector<uint8_t>(
        std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

// Runs the seed `name` with a 2 s job timeout, so that only a fault fails a
// job: a job of every compute opcode can outlast the fuzz device's 20 ms
// under emulation on a busy machine (a hang is still a violation after 5 s).
ProgramReport RunSeed(const std::string& name) {
  softnpu::SoftNpuOptions options = FuzzDeviceOptions();
  options.job_timeout_ms = 2000;
  for (const Seed& seed : SeedCorpus()) {
    if (seed.name == name) return RunIoctlProgram(seed.bytes, options);
  }
  ADD_FAILURE() << "no seed " << name;
  return {};
}

TEST(SeedCorpusTest, ComputeChainRunsEveryComputeOpcode) {
  const ProgramReport report = RunSeed("compute_chain");
  EXPECT_EQ(report.violation, "");
  EXPECT_EQ(report.jobs_submitted, 1u);
  EXPECT_EQ(report.jobs_completed, 1u);
  EXPECT_EQ(report.jobs_failed, 0u);
}

TEST(SeedCorpusTest, DmaChainCompletesBothJobs) {
  const ProgramReport report = RunSeed("dma_chain");
  EXPECT_EQ(report.violation, "");
  EXPECT_EQ(report.jobs_submitted, 2u);
  EXPECT_EQ(report.jobs_completed, 2u);
}

TEST(SeedCorpusTest, FaultsFailBothJobs) {
  const ProgramReport report = RunSeed("faults");
  EXPECT_EQ(report.violation, "");
  EXPECT_EQ(report.jobs_submitted, 2u);
  EXPECT_EQ(report.jobs_failed, 2u);
}

// The panel seeds: SUBMIT rejects the six malformed panel operands, and
// only the weight that ends exactly at the buffer's end runs.
TEST(SeedCorpusTest, PanelRejectionsRunOnlyTheLastJob) {
  for (const char* name : {"q8_0_p16_rejections", "q4_0_p16_rejections"}) {
    const ProgramReport report = RunSeed(name);
    EXPECT_EQ(report.violation, "") << name;
    EXPECT_EQ(report.jobs_submitted, 1u) << name;
    EXPECT_EQ(report.jobs_completed, 1u) << name;
  }
}

// The seed op_<name> of each opcode runs all its jobs to completion.
TEST(SeedCorpusTest, EveryOpcodeHasASeedWhoseJobsComplete) {
  const std::vector<OpcodeSeed> seeds = OpcodeSeeds();
  ASSERT_EQ(seeds.size(), size_t{LNPU_OP_COUNT});
  for (uint16_t opcode = 0; opcode < LNPU_OP_COUNT; ++opcode) {
    const OpcodeSeed& seed = seeds[opcode];
    EXPECT_EQ(seed.opcode, opcode) << seed.name;
    const ProgramReport report = RunSeed(seed.name);
    EXPECT_EQ(report.violation, "") << seed.name;
    EXPECT_GT(report.jobs_submitted, 0u) << seed.name;
    EXPECT_EQ(report.jobs_completed, report.jobs_submitted) << seed.name;
    EXPECT_EQ(report.jobs_failed, 0u) << seed.name;
  }
}

TEST(SeedCorpusTest, EverySeedKeepsTheContracts) {
  for (const Seed& seed : SeedCorpus()) {
    const ProgramReport report = RunIoctlProgram(seed.bytes);
    EXPECT_EQ(report.violation, "") << seed.name;
    EXPECT_GT(report.ioctls, 0u) << seed.name;
  }
}

TEST(SeedCorpusTest, CommittedCorpusMatchesTheGenerator) {
  const auto files = ReadCorpus();
  for (const Seed& seed : SeedCorpus()) {
    auto it = files.find(seed.name);
    ASSERT_NE(it, files.end())
        << seed.name << " is missing from " << CorpusDir()
        << "; run make_seed_corpus "
        << CorpusDir().parent_path().string();
    EXPECT_EQ(it->second, seed.bytes)
        << seed.name << " is stale; run make_seed_corpus "
        << CorpusDir().parent_path().string();
  }
}

TEST(SeedCorpusTest, EveryCorpusFileKeepsTheContracts) {
  for (const auto& [name, bytes] : ReadCorpus()) {
    EXPECT_EQ(RunIoctlProgram(bytes).violation, "") << name;
  }
}

// Arbitrary bytes: a deterministic pseudo-random sweep, so that the normal
// build exercises the decoder beyond the seeds even without libFuzzer.
TEST(SeedCorpusTest, PseudoRandomProgramsKeepTheContracts) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int program = 0; program < 40; ++program) {
    std::vector<uint8_t> bytes(64 + program * 8);
    for (uint8_t& b : bytes) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      b = static_cast<uint8_t>(state >> 56);
    }
    EXPECT_EQ(RunIoctlProgram(bytes).violation, "") << "program " << program;
  }
}

}  // namespace
}  // namespace lnpu::fuzz
