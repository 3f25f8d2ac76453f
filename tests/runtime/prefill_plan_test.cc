#include "runtime/prefill_plan.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::runtime {
namespace {

using ::testing::ElementsAre;

std::vector<PrefillRun> Plan(uint32_t n, std::vector<uint32_t> chunks) {
  absl::StatusOr<std::vector<PrefillRun>> runs = PlanPrefill(n, chunks);
  EXPECT_TRUE(runs.ok()) << runs.status();
  return runs.ok() ? *runs : std::vector<PrefillRun>();
}

TEST(PrefillPlanTest, ExactChunkSizesNeedNoPadding) {
  EXPECT_THAT(Plan(64, {16, 64}), ElementsAre(PrefillRun{64, 64}));
  EXPECT_THAT(Plan(16, {16, 64}), ElementsAre(PrefillRun{16, 16}));
  EXPECT_THAT(Plan(80, {16, 64}), ElementsAre(PrefillRun{64, 64}, PrefillRun{16, 16}));
}

TEST(PrefillPlanTest, LastPartialRunIsPaddedInTheSmallestChunk) {
  EXPECT_THAT(Plan(100, {16, 64}),
              ElementsAre(PrefillRun{64, 64}, PrefillRun{16, 16}, PrefillRun{16, 16},
                          PrefillRun{16, 4}));
  EXPECT_THAT(Plan(5, {16, 64}), ElementsAre(PrefillRun{16, 5}));
}

TEST(PrefillPlanTest, ManyChunksUseTheLargestThatFits) {
  const std::vector<uint32_t> chunks = {1, 4, 16, 64, 256};
  EXPECT_THAT(Plan(341, chunks),
              ElementsAre(PrefillRun{256, 256}, PrefillRun{64, 64}, PrefillRun{16, 16},
                          PrefillRun{4, 4}, PrefillRun{1, 1}));
  EXPECT_THAT(Plan(3, chunks), ElementsAre(PrefillRun{1, 1}, PrefillRun{1, 1},
                                           PrefillRun{1, 1}));
  EXPECT_THAT(Plan(130, {8, 64}),
              ElementsAre(PrefillRun{64, 64}, PrefillRun{64, 64}, PrefillRun{8, 2}));
}

TEST(PrefillPlanTest, LastRunsAddingUpToAChunkRunAsThatChunk) {
  const std::vector<uint32_t> chunks = {16, 32, 64, 256};
  // Not 16 + (8 padded to 16): the same 32 rows in one run.
  EXPECT_THAT(Plan(24, chunks), ElementsAre(PrefillRun{32, 24}));
  EXPECT_THAT(Plan(17, chunks), ElementsAre(PrefillRun{32, 17}));
  // Not 64 + 16 + (10 padded to 16).
  EXPECT_THAT(Plan(90, chunks), ElementsAre(PrefillRun{64, 64}, PrefillRun{32, 26}));
  // Not 32 + 16 + (2 padded to 16): the longest tail that adds up.
  EXPECT_THAT(Plan(50, chunks), ElementsAre(PrefillRun{64, 50}));
  // 32 + 16 rows are no chunk: more padding would be needed to merge them.
  EXPECT_THAT(Plan(40, chunks), ElementsAre(PrefillRun{32, 32}, PrefillRun{16, 8}));
  EXPECT_THAT(Plan(48, chunks), ElementsAre(PrefillRun{32, 32}, PrefillRun{16, 16}));
}

TEST(PrefillPlanTest, RunsCoverEveryTokenOnce) {
  for (const std::vector<uint32_t>& chunks :
       {std::vector<uint32_t>{3, 7, 32}, std::vector<uint32_t>{16, 32, 64, 256}}) {
    for (uint32_t n = 1; n <= 600; ++n) {
      uint32_t covered = 0;
      uint32_t rows = 0;
      const std::vector<PrefillRun> runs = Plan(n, chunks);
      for (size_t i = 0; i < runs.size(); ++i) {
        EXPECT_GE(runs[i].tokens, 1u);
        EXPECT_LE(runs[i].tokens, runs[i].chunk);
        EXPECT_TRUE(std::binary_search(chunks.begin(), chunks.end(), runs[i].chunk));
        // Only the last run may be partial.
        if (i + 1 < runs.size()) {
          EXPECT_EQ(runs[i].tokens, runs[i].chunk);
        }
        covered += runs[i].tokens;
        rows += runs[i].chunk;
      }
      EXPECT_EQ(covered, n);
      // No padding beyond the smallest chunk's: fewer than 3 or 16 rows.
      EXPECT_LT(rows - n, chunks.front()) << n;
      // No tail of two or more runs adds up to a chunk.
      uint32_t tail = runs.back().chunk;
      for (size_t i = runs.size() - 1; i-- > 0;) {
        tail += runs[i].chunk;
        EXPECT_FALSE(std::binary_search(chunks.begin(), chunks.end(), tail)) << n;
      }
    }
  }
}

TEST(PrefillPlanTest, RejectsBadInput) {
  const std::vector<uint32_t> good = {16, 64};
  EXPECT_EQ(PlanPrefill(0, good).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanPrefill(5, {}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<uint32_t> unsorted = {64, 16};
  EXPECT_EQ(PlanPrefill(5, unsorted).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<uint32_t> repeated = {16, 16};
  EXPECT_EQ(PlanPrefill(5, repeated).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<uint32_t> zero = {0, 16};
  EXPECT_EQ(PlanPrefill(5, zero).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lnpu::runtime
