// libFuzzer target for one parser of parser_targets.h, chosen when built:
// LNPU_FUZZ_TARGET names it, LNPU_FUZZ_FUNCTION is its function (so that
// each fuzzer links only its own parser). A crash, a sanitizer report, a
// hang or a broken property (reported here, then abort) is a finding.
// Built only with -Dfuzz=true and clang; see tests/fuzz/README.md.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/types/span.h"
#include "tests/fuzz/parser_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lnpu::fuzz::ParserRun run =
      lnpu::fuzz::LNPU_FUZZ_FUNCTION(absl::MakeConstSpan(data, size));
  if (!run.violation.empty()) {
    std::fprintf(stderr, "%s: property broken: %s\n", LNPU_FUZZ_TARGET,
                 run.violation.c_str());
    std::abort();
  }
  return 0;
}
