// Splitting a prompt into runs of the compiled prefill graphs.
//
// A compiled graph has a fixed number of rows, so a prompt of n tokens is
// run as a sequence of graphs: repeatedly the largest chunk size that is
// not larger than the tokens left; when the tokens left are fewer than the
// smallest chunk, one last run of the smallest chunk that holds them, its
// tail rows padded. Example with chunks {16, 64}: 100 tokens run as
// 64 + 16 + 16 + (4 real rows padded to 16). Then the last runs whose rows
// add up to a chunk size become one run of that chunk: the same rows and
// padding in fewer runs, each of which streams all the weights once.
// Example with chunks {16, 32, 64}: 24 tokens run as (24 real rows padded
// to 32), not 16 + (8 padded to 16); 90 as 64 + (26 padded to 32).
#ifndef RUNTIME_PREFILL_PLAN_H_
#define RUNTIME_PREFILL_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace lnpu::runtime {

struct PrefillRun {
  uint32_t chunk = 0;   // rows of the graph to run (a compiled chunk size)
  uint32_t tokens = 0;  // real tokens in it, 1..chunk; the rest is padding

  bool operator==(const PrefillRun&) const = default;
};

// The runs for `n` tokens over `chunks` (compiled chunk sizes, strictly
// ascending, all > 0). InvalidArgument for n == 0 or malformed chunks.
absl::StatusOr<std::vector<PrefillRun>> PlanPrefill(uint32_t n,
                                                    absl::Span<const uint32_t> chunks);

}  // namespace lnpu::runtime

#endif  // RUNTIME_PREFILL_PLAN_H_
