#include "framework/prompt_lookup.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::framework {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(PromptLookupTest, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  //                                 0  1  2  3  4  5  6  7  8  9
  const std::vector<int32_t> context = {5, 6, 7, 8, 9, 5, 6, 1, 2, 5, 6};
  // "5 6" occurred at 0 and 5; the latest is 5, followed by 1 2 5 6.
  EXPECT_THAT(PromptLookupDraft(context, 1, 2, 3), ElementsAre(1, 2, 5));
  EXPECT_THAT(PromptLookupDraft(context, 1, 2, 10), ElementsAre(1, 2, 5, 6));
}

TEST(PromptLookupTest, PrefersTheLongestMatchingNgram) {
  // "3 4" last occurred at 0 (followed by 9); "4" alone last at 5
  // (followed by 7).
  const std::vector<int32_t> context = {3, 4, 9, 9, 1, 4, 7, 3, 4};
  EXPECT_THAT(PromptLookupDraft(context, 1, 2, 1), ElementsAre(9));
  EXPECT_THAT(PromptLookupDraft(context, 1, 1, 1), ElementsAre(7));
  // Only 3-grams and up: "9 3 4"... never occurred before.
  EXPECT_THAT(PromptLookupDraft(context, 3, 4, 4), IsEmpty());
}

TEST(PromptLookupTest, EmptyWithoutARepeatOrRoom) {
  EXPECT_THAT(PromptLookupDraft(std::vector<int32_t>{1, 2, 3, 4}, 1, 3, 4), IsEmpty());
  EXPECT_THAT(PromptLookupDraft(std::vector<int32_t>{1, 2, 1, 2}, 1, 3, 0), IsEmpty());
  EXPECT_THAT(PromptLookupDraft(std::vector<int32_t>{}, 1, 3, 4), IsEmpty());
  EXPECT_THAT(PromptLookupDraft(std::vector<int32_t>{7}, 1, 3, 4), IsEmpty());
  // A run of one token proposes more of it.
  EXPECT_THAT(PromptLookupDraft(std::vector<int32_t>{7, 7, 7}, 1, 2, 4), ElementsAre(7));
}

}  // namespace
}  // namespace lnpu::framework
