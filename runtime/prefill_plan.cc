#include "runtime/prefill_plan.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lnpu::runtime {

absl::StatusOr<std::vector<PrefillRun>> PlanPrefill(uint32_t n,
                                                    absl::Span<const uint32_t> chunks) {
  if (n == 0) {
    return absl::InvalidArgumentError("prefill of 0 tokens: give at least one token");
  }
  if (chunks.empty()) {
    return absl::InvalidArgumentError(
        "no prefill chunk sizes: the model needs at least one compiled graph");
  }
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i] == 0 || (i > 0 && chunks[i] <= chunks[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "prefill chunk sizes [", absl::StrJoin(chunks, ", "),
          "] are not strictly ascending positive numbers"));
    }
  }

  std::vector<PrefillRun> runs;
  uint32_t left = n;
  while (left >= chunks.front()) {
    // Largest chunk <= left: the element before the first one > left.
    const auto above = std::upper_bound(chunks.begin(), chunks.end(), left);
    const uint32_t chunk = *(above - 1);
    runs.push_back({chunk, chunk});
    left -= chunk;
  }
  if (left > 0) runs.push_back({chunks.front(), left});
  return runs;
}

}  // namespace lnpu::runtime
