// The parser fuzz targets (parser_targets.h) without libFuzzer: each seed
// is accepted or rejected as its name says and keeps the properties, the
// committed corpus matches the seed generator, every corpus file (seeds
// and saved findings) keeps the properties, and so do deterministic
// mutations of the seeds, so that every build (ASan included) runs the
// targets beyond their seeds.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/fuzz/parser_seeds.h"
#include "tests/fuzz/parser_targets.h"

namespace lnpu::fuzz {
namespace {

std::filesystem::path CorpusRoot() {
  const char* dir = std::getenv("LNPU_FUZZ_CORPUS");
  return dir != nullptr ? dir : "tests/fuzz/corpus";
}

std::map<std::string, std::vector<uint8_t>> ReadCorpus(
    const std::filesystem::path& dir) {
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    files[entry.path().filename().string()] = std::vector<uint8_t>(
        std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

class ParserCorpusTest : public ::testing::TestWithParam<std::string> {
 protected:
  const ParserTarget& target() const { return *FindParserTarget(GetParam()); }
  std::vector<Seed> Seeds() const {
    auto seeds = ParserSeeds(GetParam());
    EXPECT_TRUE(seeds.ok()) << seeds.status();
    return seeds.ok() ? *seeds : std::vector<Seed>{};
  }
  std::filesystem::path CorpusDir() const { return CorpusRoot() / GetParam(); }
};

TEST_P(ParserCorpusTest, SeedsAreAcceptedOrRejectedAsNamed) {
  const std::vector<Seed> seeds = Seeds();
  int valid = 0, bad = 0;
  for (const Seed& seed : seeds) {
    const ParserRun run = target().run(seed.bytes);
    EXPECT_EQ(run.violation, "") << seed.name;
    const bool expect_valid = absl::StartsWith(seed.name, "valid_");
    EXPECT_TRUE(expect_valid || absl::StartsWith(seed.name, "bad_"))
        << seed.name;
    EXPECT_EQ(run.accepted, expect_valid) << seed.name;
    ++(expect_valid ? valid : bad);
  }
  EXPECT_GT(valid, 0);
  EXPECT_GT(bad, 0);
}

TEST_P(ParserCorpusTest, CommittedCorpusMatchesTheGenerator) {
  const auto files = ReadCorpus(CorpusDir());
  for (const Seed& seed : Seeds()) {
    auto it = files.find(seed.name);
    ASSERT_NE(it, files.end())
        << seed.name << " is missing from " << CorpusDir()
        << "; run make_seed_corpus " << CorpusRoot().string();
    EXPECT_EQ(it->second, seed.bytes)
        << seed.name << " is stale; run make_seed_corpus "
        << CorpusRoot().string();
  }
}

TEST_P(ParserCorpusTest, EveryCorpusFileKeepsTheProperties) {
  const auto files = ReadCorpus(CorpusDir());
  EXPECT_FALSE(files.empty());
  for (const auto& [name, bytes] : files) {
    EXPECT_EQ(target().run(bytes).violation, "") << name;
  }
}

// Each seed with bytes overwritten, truncated and extended, deterministically.
TEST_P(ParserCorpusTest, MutatedSeedsKeepTheProperties) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (const Seed& seed : Seeds()) {
    for (int mutation = 0; mutation < 24; ++mutation) {
      std::vector<uint8_t> bytes = seed.bytes;
      if (bytes.empty()) bytes.push_back(0);
      switch (mutation % 3) {
        case 0:
          for (int i = 0; i < 1 + mutation / 3; ++i) {
            bytes[next() % bytes.size()] = static_cast<uint8_t>(next());
          }
          break;
        case 1:
          bytes.resize(next() % bytes.size());
          break;
        default:
          for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(next()));
          break;
      }
      EXPECT_EQ(target().run(bytes).violation, "")
          << seed.name << " mutation " << mutation;
    }
  }
}

std::vector<std::string> TargetNames() {
  std::vector<std::string> names;
  for (const ParserTarget& target : ParserTargets()) {
    names.emplace_back(target.name);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Targets, ParserCorpusTest,
                         ::testing::ValuesIn(TargetNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace lnpu::fuzz
