#include "base/argmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace lnpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The definition, one value at a time.
int32_t ReferenceArgmax(const std::vector<float>& v) {
  int32_t best = 0;
  bool found = false;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isfinite(v[i]) && (!found || v[i] > v[best])) {
      best = static_cast<int32_t>(i);
      found = true;
    }
  }
  return best;
}

TEST(ArgmaxTest, EmptyAndNothingFiniteGiveZero) {
  EXPECT_EQ(Argmax({}), 0);
  EXPECT_EQ(MaxFinite({}), -kInf);
  const std::vector<float> none = {kNaN, kInf, -kInf, kNaN};
  EXPECT_EQ(Argmax(none), 0);
  EXPECT_EQ(MaxFinite(none), -kInf);
}

TEST(ArgmaxTest, SkipsNaNAndInfinities) {
  std::vector<float> v(40, -5.0f);
  v[3] = kInf;
  v[7] = kNaN;
  v[21] = 2.0f;
  v[33] = kNaN;
  EXPECT_EQ(Argmax(v), 21);
  EXPECT_EQ(MaxFinite(v), 2.0f);
}

TEST(ArgmaxTest, LowestIndexOnTiesIncludingSignedZeros) {
  std::vector<float> v(37, -1.0f);
  v[30] = 4.0f;
  v[17] = 4.0f;
  v[36] = 4.0f;
  EXPECT_EQ(Argmax(v), 17);
  std::vector<float> zeros(20, -1.0f);
  zeros[9] = 0.0f;
  zeros[5] = -0.0f;
  EXPECT_EQ(Argmax(zeros), 5);
}

TEST(ArgmaxTest, MaximumInTheTailPastWholeLanes) {
  for (size_t n = 1; n <= 70; ++n) {
    std::vector<float> v(n, -3.0f);
    v[n - 1] = 1.0f;
    EXPECT_EQ(Argmax(v), static_cast<int32_t>(n - 1)) << n;
    v[0] = 1.0f;
    EXPECT_EQ(Argmax(v), 0) << n;
  }
}

TEST(ArgmaxTest, MatchesTheDefinitionOnRandomVectors) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::uniform_int_distribution<int> special(0, 50);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + static_cast<size_t>(rng() % 3000);
    std::vector<float> v(n);
    for (float& x : v) {
      const int s = special(rng);
      // Rounded to a coarse grid so that ties are common.
      x = s == 0 ? kNaN : s == 1 ? kInf : s == 2 ? -kInf : std::round(normal(rng));
    }
    ASSERT_EQ(Argmax(v), ReferenceArgmax(v)) << "trial " << trial;
    const int32_t best = ReferenceArgmax(v);
    if (std::isfinite(v[best])) {
      ASSERT_EQ(MaxFinite(v), v[best]);
    }
  }
}

}  // namespace
}  // namespace lnpu
