#include "runtime/prefill_plan.h"

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

TEST(PrefillPlanTest, RunsCoverEveryTokenOnce) {
  const std::vector<uint32_t> chunks = {3, 7, 32};
  for (uint32_t n = 1; n <= 200; ++n) {
    uint32_t covered = 0;
    const std::vector<PrefillRun> runs = Plan(n, chunks);
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_GE(runs[i].tokens, 1u);
      EXPECT_LE(runs[i].tokens, runs[i].chunk);
      // Only the last run may be partial.
      if (i + 1 < runs.size()) {
        EXPECT_EQ(runs[i].tokens, runs[i].chunk);
      }
      covered += runs[i].tokens;
    }
    EXPECT_EQ(covered, n);
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
