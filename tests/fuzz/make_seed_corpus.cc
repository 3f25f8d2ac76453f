// make_seed_corpus DIR: writes the fuzzer's seed corpus (seed_corpus.h)
// into DIR, one file per seed. Run it after changing the program encoding:
//   make_seed_corpus tests/fuzz/corpus
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/fuzz/seed_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seed_corpus DIR\n");
    return 2;
  }
  for (const lnpu::fuzz::Seed& seed : lnpu::fuzz::SeedCorpus()) {
    const std::string path = std::string(argv[1]) + "/" + seed.name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(seed.bytes.data()),
              static_cast<std::streamsize>(seed.bytes.size()));
    if (!out.flush()) {
      std::fprintf(stderr, "make_seed_corpus: cannot write %s\n",
                   path.c_str());
      return 1;
    }
  }
  return 0;
}
