#include "runtime/kv_cache_state.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::runtime {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(KvCacheStateTest, StartsEmpty) {
  KvCacheState cache(8);
  EXPECT_EQ(cache.capacity(), 8u);
  EXPECT_EQ(cache.used(), 0u);
  EXPECT_EQ(cache.free_slots(), 8u);
  EXPECT_EQ(cache.next_position(), 0);
  EXPECT_EQ(cache.mask().size(), 8u);
  EXPECT_THAT(cache.mask(), Each(0));
}

TEST(KvCacheStateTest, ReserveChangesNothingAndCommitMarksSlots) {
  KvCacheState cache(8);
  absl::StatusOr<SlotPlacement> placement = cache.Reserve(3);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->first_slot, 0u);
  EXPECT_EQ(placement->first_position, 0);
  EXPECT_EQ(placement->count, 3u);
  EXPECT_EQ(placement->slot(2), 2);
  EXPECT_EQ(placement->position(2), 2);
  EXPECT_EQ(cache.used(), 0u);
  EXPECT_THAT(cache.mask(), Each(0));

  cache.Commit(*placement);
  EXPECT_EQ(cache.used(), 3u);
  EXPECT_EQ(cache.free_slots(), 5u);
  EXPECT_EQ(cache.next_position(), 3);
  EXPECT_THAT(cache.mask(), ElementsAre(1, 1, 1, 0, 0, 0, 0, 0));
}

TEST(KvCacheStateTest, PositionsAndSlotsContinueAcrossCommits) {
  KvCacheState cache(8);
  cache.Commit(*cache.Reserve(3));
  absl::StatusOr<SlotPlacement> next = cache.Reserve(2);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->slot(0), 3);
  EXPECT_EQ(next->position(1), 4);
  cache.Commit(*next);
  EXPECT_EQ(cache.next_position(), 5);
  EXPECT_THAT(cache.mask(), ElementsAre(1, 1, 1, 1, 1, 0, 0, 0));
}

TEST(KvCacheStateTest, FullCacheIsResourceExhaustedAndUnchanged) {
  KvCacheState cache(1152);
  cache.Commit(*cache.Reserve(1150));
  const std::vector<uint8_t> before(cache.mask().begin(), cache.mask().end());

  absl::StatusOr<SlotPlacement> placement = cache.Reserve(5);
  ASSERT_FALSE(placement.ok());
  EXPECT_EQ(placement.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(placement.status().message(),
              HasSubstr("KV cache full: 1150 of 1152 slots used, 5 more requested"));
  EXPECT_EQ(cache.used(), 1150u);
  EXPECT_EQ(std::vector<uint8_t>(cache.mask().begin(), cache.mask().end()), before);

  // Exactly the free slots still fit.
  ASSERT_TRUE(cache.Reserve(2).ok());
  cache.Commit(*cache.Reserve(2));
  EXPECT_EQ(cache.free_slots(), 0u);
  EXPECT_EQ(cache.Reserve(1).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(KvCacheStateTest, ReserveZeroIsInvalid) {
  KvCacheState cache(4);
  EXPECT_EQ(cache.Reserve(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KvCacheStateTest, ClearEmptiesTheCache) {
  KvCacheState cache(4);
  cache.Commit(*cache.Reserve(4));
  cache.Clear();
  EXPECT_EQ(cache.used(), 0u);
  EXPECT_EQ(cache.next_position(), 0);
  EXPECT_THAT(cache.mask(), Each(0));
  absl::StatusOr<SlotPlacement> placement = cache.Reserve(4);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(placement->first_slot, 0u);
}

TEST(KvCacheStateTest, ExternalMaskIsTheSourceOfTruth) {
  std::vector<uint8_t> storage = {7, 7, 7, 7, 7};
  KvCacheState cache(absl::MakeSpan(storage));
  EXPECT_EQ(cache.capacity(), 5u);
  EXPECT_THAT(storage, Each(0));  // cleared on construction
  cache.Commit(*cache.Reserve(2));
  EXPECT_THAT(storage, ElementsAre(1, 1, 0, 0, 0));
  EXPECT_EQ(cache.mask().data(), storage.data());
  cache.Clear();
  EXPECT_THAT(storage, Each(0));
}

TEST(KvCacheStateDeathTest, CommitOfStalePlacementAborts) {
  KvCacheState cache(4);
  const SlotPlacement placement = *cache.Reserve(2);
  cache.Commit(placement);
  EXPECT_DEATH(cache.Commit(placement), "not reserved");
}

}  // namespace
}  // namespace lnpu::runtime
