#include "framework/sampler.h"

#include <cmath>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace lnpu::framework {
namespace {

GenerationConfig Config(float temperature, int top_k = 0, float top_p = 1.0f,
                        uint64_t seed = 1) {
  GenerationConfig config;
  config.temperature = temperature;
  config.top_k = top_k;
  config.top_p = top_p;
  config.seed = seed;
  return config;
}

TEST(SamplerTest, GreedyPicksArgmaxWithLowestIdOnTies) {
  Sampler sampler(Config(0.0f));
  EXPECT_EQ(sampler.Sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.0f}), 1);
  EXPECT_EQ(sampler.Sample(std::vector<float>{5.0f, 1.0f, 5.0f}), 0);
}

TEST(SamplerTest, GreedySkipsNonFiniteLogits) {
  Sampler sampler(Config(0.0f));
  EXPECT_EQ(sampler.Sample(std::vector<float>{NAN, 1.0f, INFINITY, 0.5f}), 1);
}

TEST(SamplerTest, TopKOneIsGreedyAtAnyTemperature) {
  Sampler sampler(Config(5.0f, /*top_k=*/1));
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(sampler.Sample(std::vector<float>{0.0f, 0.2f, 0.1f}), 1);
  }
}

TEST(SamplerTest, SameSeedSameSequenceOtherSeedDiffers) {
  const std::vector<float> logits(64, 0.0f);  // uniform
  Sampler a(Config(1.0f, 0, 1.0f, 42)), b(Config(1.0f, 0, 1.0f, 42)),
      c(Config(1.0f, 0, 1.0f, 43));
  std::vector<int32_t> sa, sb, sc;
  for (int i = 0; i < 100; ++i) {
    sa.push_back(a.Sample(logits));
    sb.push_back(b.Sample(logits));
    sc.push_back(c.Sample(logits));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(SamplerTest, TopKNeverPicksOutsideTheKBest) {
  Sampler sampler(Config(10.0f, /*top_k=*/2));
  const std::vector<float> logits = {1.0f, 4.0f, 3.0f, 0.0f, 3.5f};
  for (int i = 0; i < 500; ++i) {
    const int32_t id = sampler.Sample(logits);
    EXPECT_TRUE(id == 1 || id == 4) << id;
  }
}

TEST(SamplerTest, TopPKeepsTheSmallestNucleus) {
  // Probabilities at T=1: ~0.665, 0.245, 0.090.
  Sampler sampler(Config(1.0f, 0, /*top_p=*/0.6f));
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  for (int i = 0; i < 200; ++i) EXPECT_EQ(sampler.Sample(logits), 0);
  Sampler wider(Config(1.0f, 0, /*top_p=*/0.8f));
  std::map<int32_t, int> counts;
  for (int i = 0; i < 2000; ++i) ++counts[wider.Sample(logits)];
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_GT(counts[1], 0);
}

TEST(SamplerTest, FrequenciesFollowTheSoftmax) {
  Sampler sampler(Config(1.0f));
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f),
                                     std::log(0.2f)};
  std::vector<int> counts(3);
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[sampler.Sample(logits)];
  EXPECT_NEAR(counts[0] / double(n), 0.5, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 0.2, 0.02);
}

TEST(SamplerTest, LowTemperatureSharpensHighFlattens) {
  const std::vector<float> logits = {1.0f, 0.0f};
  Sampler cold(Config(0.05f)), hot(Config(100.0f));
  int cold_top = 0, hot_top = 0;
  for (int i = 0; i < 2000; ++i) {
    cold_top += cold.Sample(logits) == 0;
    hot_top += hot.Sample(logits) == 0;
  }
  EXPECT_GT(cold_top, 1990);
  EXPECT_NEAR(hot_top / 2000.0, 0.5, 0.05);
}

TEST(SamplerTest, ValidateRejectsBadSettingsWithAdvice) {
  EXPECT_TRUE(Sampler::Validate(Config(0.7f, 40, 0.9f)).ok());
  for (const GenerationConfig& bad :
       {Config(-1.0f), Config(NAN), Config(INFINITY), Config(1.0f, -3),
        Config(1.0f, 0, 0.0f), Config(1.0f, 0, 1.5f), Config(1.0f, 0, NAN)}) {
    const absl::Status status = Sampler::Validate(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(status.message().empty());
  }
}

}  // namespace
}  // namespace lnpu::framework
