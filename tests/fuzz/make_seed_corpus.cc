// make_seed_corpus DIR: writes the fuzzers' seed corpora into DIR, one
// folder per target (softnpu_ioctl: seed_corpus.h; the parser targets:
// parser_seeds.h), one file per seed. Files already there that are not
// seeds (saved findings) stay. Run it after changing an input encoding:
//   make_seed_corpus tests/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/fuzz/parser_seeds.h"
#include "tests/fuzz/parser_targets.h"
#include "tests/fuzz/seed_corpus.h"

namespace {

bool WriteSeeds(const std::filesystem::path& dir,
                const std::vector<lnpu::fuzz::Seed>& seeds) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  for (const lnpu::fuzz::Seed& seed : seeds) {
    const std::filesystem::path path = dir / seed.name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(seed.bytes.data()),
              static_cast<std::streamsize>(seed.bytes.size()));
    if (!out.flush()) {
      std::fprintf(stderr, "make_seed_corpus: cannot write %s\n",
                   path.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seed_corpus DIR\n");
    return 2;
  }
  const std::filesystem::path root(argv[1]);
  if (!WriteSeeds(root / "softnpu_ioctl", lnpu::fuzz::SeedCorpus())) return 1;
  for (const lnpu::fuzz::ParserTarget& target : lnpu::fuzz::ParserTargets()) {
    auto seeds = lnpu::fuzz::ParserSeeds(target.name);
    if (!seeds.ok()) {
      std::fprintf(stderr, "make_seed_corpus: %s\n",
                   seeds.status().ToString().c_str());
      return 1;
    }
    if (!WriteSeeds(root / std::string(target.name), *seeds)) return 1;
  }
  return 0;
}
