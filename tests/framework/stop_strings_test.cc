#include "framework/stop_strings.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lnpu::framework {
namespace {

// Pushes `pieces` in order; returns everything emitted (Flush included).
std::string PushAll(StopStringMatcher& matcher,
                const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& piece : pieces) out += matcher.Push(piece);
  return out + matcher.Flush();
}

TEST(StopStringMatcherTest, StopSplitAcrossPieces) {
  for (const std::vector<std::string>& pieces :
       std::vector<std::vector<std::string>>{
           {"Hello</", "s> more"},
           {"Hello<", "/", "s> more"},
           {"Hello", "<", "/s", ">", " more"},
       }) {
    StopStringMatcher matcher({"</s>"});
    EXPECT_EQ(PushAll(matcher, pieces), "Hello");
    EXPECT_TRUE(matcher.stopped());
  }
}

TEST(StopStringMatcherTest, HoldsBackOnlyWhatCouldStartAStop) {
  StopStringMatcher matcher({"User:"});
  EXPECT_EQ(matcher.Push("Hi there. Us"), "Hi there. ");
  EXPECT_EQ(matcher.Push("e"), "");
  EXPECT_EQ(matcher.Push("r:"), "");
  EXPECT_TRUE(matcher.stopped());
  EXPECT_EQ(matcher.Push("ignored"), "");
  EXPECT_EQ(matcher.Flush(), "");
}

TEST(StopStringMatcherTest, OverlappingPrefixes) {
  StopStringMatcher matcher({"aab"});
  EXPECT_EQ(matcher.Push("a"), "");
  EXPECT_EQ(matcher.Push("a"), "");
  EXPECT_EQ(matcher.Push("a"), "a");  // "aa" may still start "aab"
  EXPECT_EQ(matcher.Push("b"), "");
  EXPECT_TRUE(matcher.stopped());
  StopStringMatcher whole({"aab"});
  EXPECT_EQ(whole.Push("xaaab"), "xa");
  EXPECT_TRUE(whole.stopped());
}

TEST(StopStringMatcherTest, StopAtTheVeryStart) {
  StopStringMatcher matcher({"###"});
  EXPECT_EQ(matcher.Push("###"), "");
  EXPECT_TRUE(matcher.stopped());
  EXPECT_EQ(matcher.Flush(), "");
}

TEST(StopStringMatcherTest, NearMissesAreReleased) {
  StopStringMatcher matcher({"</s>"});
  EXPECT_EQ(matcher.Push("a </"), "a ");
  EXPECT_EQ(matcher.Push("b"), "</b");
  EXPECT_EQ(matcher.Push(" <"), " ");
  EXPECT_EQ(matcher.Flush(), "<");  // the end: a held near-miss is text
  EXPECT_FALSE(matcher.stopped());
}

TEST(StopStringMatcherTest, EarliestOfMultipleStopsWins) {
  StopStringMatcher matcher({"world", "lo w", "\n"});
  EXPECT_EQ(PushAll(matcher, {"hel", "lo wor", "ld\n"}), "hel");
  EXPECT_TRUE(matcher.stopped());
  StopStringMatcher other({"xyz", "\n"});
  EXPECT_EQ(PushAll(other, {"one\ntwo xyz"}), "one");
}

TEST(StopStringMatcherTest, EmptyListPassesTextThrough) {
  StopStringMatcher matcher({});
  EXPECT_EQ(matcher.Push("any text"), "any text");
  EXPECT_EQ(matcher.Push(""), "");
  EXPECT_EQ(matcher.Flush(), "");
  EXPECT_FALSE(matcher.stopped());
  StopStringMatcher empty_stop({""});  // ignored
  EXPECT_EQ(empty_stop.Push("abc"), "abc");
}

TEST(StopStringMatcherTest, NeverSplitsAUtf8Character) {
  // "é" is C3 A9; "€" is E2 82 AC.
  StopStringMatcher matcher({"STOP"});
  EXPECT_EQ(matcher.Push("caf\xC3"), "caf");
  EXPECT_EQ(matcher.Push("\xA9 \xE2\x82"), "\xC3\xA9 ");
  EXPECT_EQ(matcher.Push("\xAC"), "\xE2\x82\xAC");
  // Stops that start with a multi-byte character.
  StopStringMatcher euro({"\xE2\x82\xAC" "5"});
  EXPECT_EQ(euro.Push("price \xE2\x82"), "price ");
  EXPECT_EQ(euro.Push("\xAC"), "");
  EXPECT_EQ(euro.Push("4"), "\xE2\x82\xAC" "4");
  EXPECT_EQ(euro.Push("\xE2\x82\xAC" "5!"), "");
  EXPECT_TRUE(euro.stopped());
}

}  // namespace
}  // namespace lnpu::framework
