#include "runtime/kv_cache_state.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::runtime {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `n` token ids 100, 101, ...
std::vector<int32_t> Tokens(uint32_t n, int32_t first = 100) {
  std::vector<int32_t> tokens(n);
  for (uint32_t i = 0; i < n; ++i) tokens[i] = first + static_cast<int32_t>(i);
  return tokens;
}

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
  EXPECT_EQ(placement->slot(0), 0);
  EXPECT_EQ(placement->first_position, 0);
  EXPECT_EQ(placement->count, 3u);
  EXPECT_EQ(placement->slot(2), 2);
  EXPECT_EQ(placement->position(2), 2);
  EXPECT_EQ(cache.used(), 0u);
  EXPECT_THAT(cache.mask(), Each(0));

  cache.Commit(*placement, Tokens(placement->count));
  EXPECT_EQ(cache.used(), 3u);
  EXPECT_EQ(cache.free_slots(), 5u);
  EXPECT_EQ(cache.next_position(), 3);
  EXPECT_THAT(cache.mask(), ElementsAre(1, 1, 1, 0, 0, 0, 0, 0));
}

TEST(KvCacheStateTest, PositionsAndSlotsContinueAcrossCommits) {
  KvCacheState cache(8);
  cache.Commit(*cache.Reserve(3), Tokens(3));
  absl::StatusOr<SlotPlacement> next = cache.Reserve(2);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->slot(0), 3);
  EXPECT_EQ(next->position(1), 4);
  cache.Commit(*next, Tokens(next->count));
  EXPECT_EQ(cache.next_position(), 5);
  EXPECT_THAT(cache.mask(), ElementsAre(1, 1, 1, 1, 1, 0, 0, 0));
}

TEST(KvCacheStateTest, FullCacheIsResourceExhaustedAndUnchanged) {
  KvCacheState cache(1152);
  cache.Commit(*cache.Reserve(1150), Tokens(1150));
  const std::vector<uint8_t> before(cache.mask().begin(), cache.mask().end());

  absl::StatusOr<SlotPlacement> placement = cache.Reserve(5);
  ASSERT_FALSE(placement.ok());
  EXPECT_EQ(cache.CheckRoomFor(5).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(placement.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(placement.status().message(),
              HasSubstr("KV cache full: 1150 of 1152 slots used, 5 more requested"));
  EXPECT_EQ(cache.used(), 1150u);
  EXPECT_EQ(std::vector<uint8_t>(cache.mask().begin(), cache.mask().end()), before);

  // Exactly the free slots still fit.
  ASSERT_TRUE(cache.Reserve(2).ok());
  cache.Commit(*cache.Reserve(2), Tokens(2));
  EXPECT_EQ(cache.free_slots(), 0u);
  EXPECT_EQ(cache.Reserve(1).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(KvCacheStateTest, ReserveZeroIsInvalid) {
  KvCacheState cache(4);
  EXPECT_EQ(cache.Reserve(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KvCacheStateTest, ClearEmptiesTheCache) {
  KvCacheState cache(4);
  cache.Commit(*cache.Reserve(4), Tokens(4));
  cache.Clear();
  EXPECT_EQ(cache.used(), 0u);
  EXPECT_EQ(cache.next_position(), 0);
  EXPECT_THAT(cache.mask(), Each(0));
  absl::StatusOr<SlotPlacement> placement = cache.Reserve(4);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(placement->slot(0), 0);
}

TEST(KvCacheStateTest, ExternalMaskIsTheSourceOfTruth) {
  std::vector<uint8_t> storage = {7, 7, 7, 7, 7};
  KvCacheState cache(absl::MakeSpan(storage));
  EXPECT_EQ(cache.capacity(), 5u);
  EXPECT_THAT(storage, Each(0));  // cleared on construction
  cache.Commit(*cache.Reserve(2), Tokens(2));
  EXPECT_THAT(storage, ElementsAre(1, 1, 0, 0, 0));
  EXPECT_EQ(cache.mask().data(), storage.data());
  cache.Clear();
  EXPECT_THAT(storage, Each(0));
}

TEST(KvCacheStateTest, TruncateRestoresTheStateBeforeTheDroppedTokens) {
  KvCacheState truncated(8);
  truncated.Commit(*truncated.Reserve(3), Tokens(3));
  truncated.Commit(*truncated.Reserve(4), Tokens(4, 200));
  ASSERT_TRUE(truncated.Truncate(4).ok());

  KvCacheState expected(8);
  expected.Commit(*expected.Reserve(3), Tokens(3));
  expected.Commit(*expected.Reserve(1), Tokens(1, 200));
  EXPECT_EQ(truncated.next_position(), 4);
  EXPECT_EQ(truncated.used(), 4u);
  EXPECT_EQ(truncated.free_slots(), 4u);
  EXPECT_THAT(truncated.mask(), ElementsAre(1, 1, 1, 1, 0, 0, 0, 0));
  EXPECT_EQ(std::vector<uint8_t>(truncated.mask().begin(), truncated.mask().end()),
            std::vector<uint8_t>(expected.mask().begin(), expected.mask().end()));
  EXPECT_EQ(std::vector<int32_t>(truncated.slot_tokens().begin(), truncated.slot_tokens().end()),
            std::vector<int32_t>(expected.slot_tokens().begin(), expected.slot_tokens().end()));
  EXPECT_EQ(truncated.TokensInContext(), expected.TokensInContext());

  // The next token takes the first dropped slot.
  absl::StatusOr<SlotPlacement> next = truncated.Reserve(1);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->first_position, 4);
  EXPECT_EQ(next->slot(0), 4);
  // Truncating to the current count changes nothing.
  ASSERT_TRUE(truncated.Truncate(4).ok());
  EXPECT_EQ(truncated.used(), 4u);
}

TEST(KvCacheStateTest, TruncateRefusesGrowingAndNegativeCounts) {
  KvCacheState cache(8);
  cache.Commit(*cache.Reserve(3), Tokens(3));
  for (int32_t bad : {4, -1}) {
    const absl::Status status = cache.Truncate(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("holds 3"));
  }
  EXPECT_EQ(cache.next_position(), 3);
  EXPECT_EQ(cache.used(), 3u);
}

TEST(KvCacheStateRingTest, TruncateWorksBeforeTheRingWrapsAndIsRefusedAfter) {
  KvCacheState cache(8);
  ASSERT_TRUE(cache.SetPolicy(CacheFullPolicy::Ring(2)).ok());
  cache.Commit(*cache.Reserve(5), Tokens(5));
  ASSERT_TRUE(cache.Truncate(3).ok());
  EXPECT_THAT(cache.mask(), ElementsAre(1, 1, 1, 0, 0, 0, 0, 0));
  cache.Commit(*cache.Reserve(3), Tokens(3, 200));
  absl::StatusOr<SlotPlacement> wrap = cache.Reserve(4);
  ASSERT_TRUE(wrap.ok());
  cache.Evict(*wrap);
  cache.Commit(*wrap, Tokens(4, 300));
  ASSERT_TRUE(cache.wrapped());
  const absl::Status status = cache.Truncate(7);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("wrapped"));
  EXPECT_EQ(cache.next_position(), 10);
}

TEST(KvCacheStateRingTest, SlotsWrapPastTheSinksAndPositionsKeepIncreasing) {
  const CacheFullPolicy ring = CacheFullPolicy::Ring(2);
  // Capacity 6, 2 sinks: positions 0..5 in slots 0..5, then 6 -> 2, 7 -> 3,
  // 8 -> 4, 9 -> 5, 10 -> 2.
  EXPECT_EQ(SlotOf(5, 6, ring), 5);
  EXPECT_EQ(SlotOf(6, 6, ring), 2);
  EXPECT_EQ(SlotOf(9, 6, ring), 5);
  EXPECT_EQ(SlotOf(10, 6, ring), 2);
  EXPECT_EQ(SlotOf(6, 6, CacheFullPolicy{}), -1);

  KvCacheState cache(6);
  cache.Commit(*cache.Reserve(6), Tokens(6));  // tokens 100..105
  ASSERT_TRUE(cache.SetPolicy(ring).ok());     // allowed until the cache wraps
  EXPECT_FALSE(cache.wrapped());
  EXPECT_EQ(cache.free_slots(), 0u);

  absl::StatusOr<SlotPlacement> next = cache.Reserve(3);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->position(0), 6);
  EXPECT_EQ(next->slot(0), 2);
  EXPECT_EQ(next->slot(2), 4);
  // Before the step: the overwritten slots are hidden, the rest stays.
  EXPECT_EQ(cache.Evict(*next), 3u);
  EXPECT_THAT(cache.mask(), ElementsAre(1, 1, 0, 0, 0, 1));
  EXPECT_EQ(cache.used(), 3u);
  cache.Commit(*next, Tokens(3, 200));
  EXPECT_TRUE(cache.wrapped());
  EXPECT_EQ(cache.next_position(), 9);
  EXPECT_EQ(cache.used(), 6u);
  EXPECT_THAT(cache.mask(), Each(1));
  EXPECT_THAT(cache.slot_tokens(), ElementsAre(100, 101, 200, 201, 202, 105));
  // Sinks, then the oldest kept token (position 5) onwards.
  EXPECT_THAT(cache.TokensInContext(), ElementsAre(100, 101, 105, 200, 201, 202));

  // The ring keeps going: position 9 -> slot 5, 10 -> slot 2.
  absl::StatusOr<SlotPlacement> more = cache.Reserve(2);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->slot(0), 5);
  EXPECT_EQ(more->slot(1), 2);
  cache.Evict(*more);
  cache.Commit(*more, Tokens(2, 300));
  EXPECT_THAT(cache.TokensInContext(), ElementsAre(100, 101, 201, 202, 300, 301));
}

// The slot positions (for sliding-window attention) follow the tokens
// through a wrapping ring, a restore and a clear.
TEST(KvCacheStateRingTest, SlotPositionsFollowTheTokensTheSlotsHold) {
  std::vector<uint8_t> mask(6);
  std::vector<int32_t> positions(6, 77);
  const auto position_bytes = absl::MakeSpan(reinterpret_cast<uint8_t*>(positions.data()),
                                             positions.size() * sizeof(int32_t));
  KvCacheState cache(absl::MakeSpan(mask), position_bytes);
  EXPECT_THAT(positions, Each(0));  // cleared on construction
  ASSERT_TRUE(cache.SetPolicy(CacheFullPolicy::Ring(2)).ok());
  cache.Commit(*cache.Reserve(4), Tokens(4));
  EXPECT_THAT(positions, ElementsAre(0, 1, 2, 3, 0, 0));
  for (int step = 0; step < 2; ++step) {  // positions 4..9
    const SlotPlacement next = *cache.Reserve(3);
    cache.Evict(next);
    cache.Commit(next, Tokens(3));
  }
  // Sinks 0, 1; then 6 -> 2, 7 -> 3, 8 -> 4, 9 -> 5.
  EXPECT_THAT(positions, ElementsAre(0, 1, 6, 7, 8, 9));
  const SlotPlacement wrap = *cache.Reserve(2);  // 10 -> 2, 11 -> 3
  cache.Evict(wrap);
  cache.Commit(wrap, Tokens(2));
  EXPECT_THAT(positions, ElementsAre(0, 1, 10, 11, 8, 9));

  ASSERT_TRUE(cache.Restore(CacheFullPolicy::Ring(2), 13, std::vector<uint8_t>(6, 1),
                            Tokens(6)).ok());
  // 13 positions in a ring of 4 after 2 sinks: 9..12 in slots 5, 2, 3, 4.
  EXPECT_THAT(positions, ElementsAre(0, 1, 10, 11, 12, 9));
  ASSERT_TRUE(cache.Restore({}, 3, {1, 1, 1}, Tokens(3)).ok());
  EXPECT_THAT(positions, ElementsAre(0, 1, 2, 0, 0, 0));
  cache.Clear();
  EXPECT_THAT(positions, Each(0));
}

TEST(KvCacheStateRingTest, StepsLargerThanTheRingAndBadPoliciesAreRefused) {
  KvCacheState cache(6);
  EXPECT_EQ(cache.SetPolicy(CacheFullPolicy::Ring(6)).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(cache.SetPolicy(CacheFullPolicy::Ring(2)).ok());
  absl::StatusOr<SlotPlacement> too_big = cache.Reserve(5);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("ring of 4 slots"));
  EXPECT_TRUE(cache.CheckRoomFor(1000).ok());  // a ring always has room

  cache.Commit(*cache.Reserve(4), Tokens(4));
  cache.Commit(*cache.Reserve(4), Tokens(4));  // wrapped
  EXPECT_EQ(cache.SetPolicy(CacheFullPolicy::Ring(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cache.SetPolicy(CacheFullPolicy::Ring(2)).ok());  // unchanged
  cache.Clear();
  EXPECT_TRUE(cache.SetPolicy({}).ok());
}

TEST(KvCacheStateRingTest, RestoreValidatesBeforeChangingAnything) {
  KvCacheState cache(4);
  cache.Commit(*cache.Reserve(2), Tokens(2));
  const std::vector<uint8_t> mask = {1, 1, 0};
  const std::vector<int32_t> tokens = {5, 6, -1};
  // Sizes must be min(next_position, capacity).
  EXPECT_EQ(cache.Restore({}, 2, mask, tokens).code(), absl::StatusCode::kInvalidArgument);
  // Positions past the capacity need a ring.
  EXPECT_EQ(cache.Restore({}, 9, {1, 1, 1, 1}, {1, 2, 3, 4}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Restore({}, 3, {1, 2, 1}, {1, 2, 3}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Restore({}, 3, {1, 1, 1}, {1, -1, 3}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.next_position(), 2);
  EXPECT_THAT(cache.mask(), ElementsAre(1, 1, 0, 0));

  ASSERT_TRUE(cache.Restore(CacheFullPolicy::Ring(1), 9, {1, 1, 1, 1},
                            {1, 2, 3, 4}).ok());
  EXPECT_TRUE(cache.wrapped());
  EXPECT_EQ(cache.used(), 4u);
  EXPECT_EQ(cache.Reserve(1)->slot(0), SlotOf(9, 4, CacheFullPolicy::Ring(1)));
}

TEST(KvCacheStateDeathTest, CommitOfStalePlacementAborts) {
  KvCacheState cache(4);
  const SlotPlacement placement = *cache.Reserve(2);
  cache.Commit(placement, Tokens(2));
  EXPECT_DEATH(cache.Commit(placement, Tokens(2)), "not reserved");
}

}  // namespace
}  // namespace lnpu::runtime
