#include "runtime/prefill_plan.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lnpu::runtime {
namespace {

// Replaces the longest tail of two or more runs whose rows add up to a
// chunk size by one run of that chunk. One pass is enough: a longer tail of
// the result adds up to what a longer tail before it did, which was no
// chunk. Only the last run may be partial before and after.
void MergeTailRuns(absl::Span<const uint32_t> chunks, std::vector<PrefillRun>& runs) {
  uint64_t rows = 0;
  uint32_t tokens = 0;
  size_t merge_from = runs.size();
  PrefillRun merged;
  for (size_t i = runs.size(); i-- > 0;) {
    rows += runs[i].chunk;
    tokens += runs[i].tokens;
    if (runs.size() - i >= 2 && std::binary_search(chunks.begin(), chunks.end(), rows)) {
      merge_from = i;
      merged = {static_cast<uint32_t>(rows), tokens};
    }
  }
  if (merge_from == runs.size()) return;
  runs.resize(merge_from);
  runs.push_back(merged);
}

}  // namespace

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
  MergeTailRuns(chunks, runs);
  return runs;
}

}  // namespace lnpu::runtime
