#include "framework/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

TEST(SamplerTest, TopProbabilityIsTheSoftmaxOfTheBestLogit) {
  EXPECT_FLOAT_EQ(Sampler::TopProbability(std::vector<float>(8, 0.5f)), 0.125f);
  EXPECT_FLOAT_EQ(Sampler::TopProbability(std::vector<float>{std::log(3.0f), 0.0f}), 0.75f);
  EXPECT_FLOAT_EQ(Sampler::TopProbability(std::vector<float>{-INFINITY, 2.0f, -INFINITY}), 1.0f);
  EXPECT_EQ(Sampler::TopProbability(std::vector<float>{-INFINITY, -INFINITY}), 0.0f);
  EXPECT_EQ(Sampler::TopProbability(std::vector<float>{1.0f, NAN}), 0.0f);
  EXPECT_EQ(Sampler::TopProbability(std::vector<float>{1.0f, INFINITY}), 0.0f);
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

// Pearson's chi-square statistic of `counts` (n draws) against `expected`
// probabilities; tokens with expected probability 0 must not occur.
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& expected, int n) {
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double e = expected[i] * n;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi2;
}

TEST(SamplerTest, DistributionIsWhatSampleDrawsFrom) {
  Sampler sampler(Config(0.7f, /*top_k=*/3));
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f, 0.5f};
  std::vector<float> p;
  sampler.Distribution(logits, {}, {}, &p);
  ASSERT_EQ(p.size(), logits.size());
  // Top 3 of the logits at temperature 0.7; the others 0.
  const double e1 = std::exp(2.0 / 0.7), e3 = std::exp(1.5 / 0.7), e4 = std::exp(0.5 / 0.7);
  const double total = e1 + e3 + e4;
  EXPECT_NEAR(p[1], e1 / total, 1e-6);
  EXPECT_NEAR(p[3], e3 / total, 1e-6);
  EXPECT_NEAR(p[4], e4 / total, 1e-6);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[2], 0.0f);

  Sampler greedy(Config(0.0f));
  greedy.Distribution(logits, {}, {}, &p);
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0, 0}));
}

// The acceptance rule keeps the target distribution whatever the draft
// distribution: for each fixed (target, draft) pair, draw a proposal from
// the draft and apply the rule 200000 times, then compare the results'
// frequencies with the target by a chi-square test. The bound is the 0.999
// quantile of chi-square with 5 degrees of freedom (20.5); the seeds are
// fixed, so the test is deterministic.
TEST(SamplerTest, AcceptOrResampleKeepsTheTargetDistribution) {
  const std::vector<float> target = {0.4f, 0.25f, 0.15f, 0.1f, 0.07f, 0.03f};
  const std::vector<std::vector<float>> drafts = {
      {0.05f, 0.05f, 0.1f, 0.1f, 0.3f, 0.4f},    // far from the target
      {0.4f, 0.25f, 0.15f, 0.1f, 0.07f, 0.03f},  // equal: always accepted
      {0.0f, 0.5f, 0.5f, 0.0f, 0.0f, 0.0f},      // misses tokens entirely
  };
  const std::vector<double> expected(target.begin(), target.end());
  constexpr int kDraws = 200000;
  uint64_t seed = 7;
  for (const std::vector<float>& draft : drafts) {
    Sampler proposer(Config(1.0f, 0, 1.0f, seed++));
    Sampler sampler(Config(1.0f, 0, 1.0f, seed++));
    std::vector<int> counts(target.size());
    int accepted = 0;
    for (int i = 0; i < kDraws; ++i) {
      const int32_t proposed = proposer.Draw(draft);
      const int32_t token = sampler.AcceptOrResample(target, draft, proposed);
      ++counts[static_cast<size_t>(token)];
      accepted += token == proposed;
    }
    EXPECT_LT(ChiSquare(counts, expected, kDraws), 20.5) << "draft " << draft[0];
    // Acceptance probability: sum over tokens of min(target, draft).
    double overlap = 0;
    for (size_t i = 0; i < target.size(); ++i) overlap += std::min(target[i], draft[i]);
    EXPECT_NEAR(accepted / double(kDraws), overlap, 0.005) << "draft " << draft[0];
  }
}

TEST(SamplerTest, AcceptOrResampleOfAPointMassProposal) {
  // A deterministic proposal (prompt lookup): accepted with the target's
  // probability of it, else a draw from the target without it.
  const std::vector<float> target = {0.5f, 0.3f, 0.2f, 0.0f};
  constexpr int kDraws = 200000;
  Sampler sampler(Config(1.0f, 0, 1.0f, 11));
  std::vector<int> counts(target.size());
  for (int i = 0; i < kDraws; ++i)
    ++counts[static_cast<size_t>(sampler.AcceptOrResample(target, {}, 1))];
  // 2 degrees of freedom: 0.999 quantile 13.8.
  EXPECT_LT(ChiSquare(counts, {0.5, 0.3, 0.2, 0.0}, kDraws), 13.8);

  // Greedy targets accept exactly the argmax and otherwise return it.
  Sampler greedy(Config(0.0f));
  const std::vector<float> point = {0, 0, 1, 0};
  EXPECT_EQ(greedy.AcceptOrResample(point, {}, 2), 2);
  EXPECT_EQ(greedy.AcceptOrResample(point, {}, 0), 2);
  EXPECT_EQ(greedy.AcceptOrResample(point, {0, 0, 0, 1}, 3), 2);
  // A proposal that holds all the target's mass is always kept.
  EXPECT_EQ(greedy.AcceptOrResample({0, 1, 0, 0}, {0, 0.5f, 0.5f, 0}, 1), 1);
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

GenerationConfig Greedy() { return Config(0.0f); }

TEST(SamplerTest, LogitBiasAddsAndMinusInfinityBans) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  GenerationConfig ban = Greedy();
  ban.logit_bias = {{2, -INFINITY}};
  EXPECT_EQ(Sampler(ban).Sample(logits), 1);
  GenerationConfig boost = Greedy();
  boost.logit_bias = {{0, 2.5f}};
  EXPECT_EQ(Sampler(boost).Sample(logits), 0);
  GenerationConfig small = Greedy();
  small.logit_bias = {{0, 1.5f}};  // 2.5 < 3
  EXPECT_EQ(Sampler(small).Sample(logits), 2);
  // A banned token is never drawn, at any temperature.
  GenerationConfig hot = Config(100.0f);
  hot.logit_bias = {{0, -INFINITY}, {2, -INFINITY}};
  Sampler sampler(hot);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(sampler.Sample(logits), 1);
}

TEST(SamplerTest, AllowedTokenMaskBansTheOthersBeforeEverything) {
  // 70 tokens: two mask words. Token 3 has the best logit but is not
  // allowed; 65 (in the second word) is the best allowed one.
  std::vector<float> logits(70, 0.0f);
  logits[3] = 9.0f;
  logits[10] = 1.0f;
  logits[65] = 2.0f;
  const std::vector<uint64_t> allowed = {uint64_t{1} << 10, uint64_t{1} << (65 - 64)};
  Sampler greedy(Config(0.0f));
  EXPECT_EQ(greedy.Sample(logits, {}, allowed), 65);
  EXPECT_EQ(greedy.Sample(logits), 3);  // no mask: everything allowed
  // A positive bias cannot bring a banned token back.
  GenerationConfig biased = Config(0.0f);
  biased.logit_bias[3] = 100.0f;
  Sampler with_bias(biased);
  EXPECT_EQ(with_bias.Sample(logits, {}, allowed), 65);
  // Sampling at any temperature stays inside the mask.
  Sampler hot(Config(3.0f, 0, 1.0f, 7));
  for (int i = 0; i < 200; ++i) {
    const int32_t token = hot.Sample(logits, {}, allowed);
    EXPECT_TRUE(token == 10 || token == 65) << token;
  }
  // Tokens past the mask's end are not allowed.
  const std::vector<uint64_t> first_word_only = {uint64_t{1} << 10};
  EXPECT_EQ(greedy.Sample(logits, {}, first_word_only), 10);
}

TEST(SamplerTest, NothingLeftWhenTheBiasBansEveryAllowedToken) {
  std::vector<float> logits(70, 1.0f);
  const std::vector<uint64_t> allowed = {uint64_t{1} << 10, uint64_t{1} << (65 - 64)};
  for (const float temperature : {0.0f, 1.0f}) {
    SCOPED_TRACE(temperature);
    GenerationConfig config = Config(temperature);
    config.logit_bias[10] = -INFINITY;
    Sampler sampler(config);
    EXPECT_EQ(sampler.Sample(logits, {}, allowed), 65);
    EXPECT_FALSE(sampler.nothing_left());
    config.logit_bias[65] = -INFINITY;
    Sampler banned(config);
    EXPECT_EQ(banned.Sample(logits, {}, allowed), 0);
    EXPECT_TRUE(banned.nothing_left());
    std::vector<float> p;
    banned.Distribution(logits, {}, allowed, &p);
    EXPECT_TRUE(banned.nothing_left());
    // Without the mask, the other tokens are left again.
    banned.Distribution(logits, {}, {}, &p);
    EXPECT_FALSE(banned.nothing_left());
    EXPECT_EQ(p[10], 0.0f);
  }
}

TEST(SamplerTest, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  GenerationConfig config = Greedy();
  config.repetition_penalty = 1.1f;
  const std::vector<int32_t> history = {0};
  // 2.0 / 1.1 = 1.82 < 1.9.
  EXPECT_EQ(Sampler(config).Sample(std::vector<float>{2.0f, 1.9f}, history), 1);
  // 2.2 / 1.1 = 2.0 > 1.9.
  EXPECT_EQ(Sampler(config).Sample(std::vector<float>{2.2f, 1.9f}, history), 0);
  // -1.0 * 1.1 = -1.1 < -1.05.
  EXPECT_EQ(Sampler(config).Sample(std::vector<float>{-1.0f, -1.05f}, history),
            1);
  // Without history nothing changes.
  EXPECT_EQ(Sampler(config).Sample(std::vector<float>{2.0f, 1.9f}), 0);
}

TEST(SamplerTest, PenaltiesApplyOnlyToTheLastRepeatLastNTokens) {
  GenerationConfig config = Greedy();
  config.repetition_penalty = 2.0f;
  config.repeat_last_n = 1;
  const std::vector<float> logits = {3.0f, 2.0f, 1.0f};
  // Token 0 is outside the window of one; token 2 is penalized.
  EXPECT_EQ(Sampler(config).Sample(logits, std::vector<int32_t>{0, 2}), 0);
  // Token 0 inside the window: 1.5 < 2.
  EXPECT_EQ(Sampler(config).Sample(logits, std::vector<int32_t>{2, 0}), 1);
  config.repeat_last_n = 0;  // off
  EXPECT_EQ(Sampler(config).Sample(logits, std::vector<int32_t>{0}), 0);
}

TEST(SamplerTest, FrequencyPenaltyScalesWithCountPresenceDoesNot) {
  const std::vector<float> logits = {3.0f, 2.0f};
  const std::vector<int32_t> three_times = {0, 0, 0};
  GenerationConfig frequency = Greedy();
  frequency.frequency_penalty = 0.4f;  // 3 - 3 * 0.4 = 1.8 < 2
  EXPECT_EQ(Sampler(frequency).Sample(logits, three_times), 1);
  frequency.frequency_penalty = 0.3f;  // 3 - 0.9 = 2.1 > 2
  EXPECT_EQ(Sampler(frequency).Sample(logits, three_times), 0);
  GenerationConfig presence = Greedy();
  presence.presence_penalty = 0.9f;  // 3 - 0.9 = 2.1 however often
  EXPECT_EQ(Sampler(presence).Sample(logits, three_times), 0);
  presence.presence_penalty = 1.1f;  // 1.9 < 2
  EXPECT_EQ(Sampler(presence).Sample(logits, std::vector<int32_t>{0}), 1);
}

TEST(SamplerTest, PenaltiesIgnoreHistoryIdsOutsideTheVocabulary) {
  GenerationConfig config = Greedy();
  config.repetition_penalty = 5.0f;
  config.logit_bias = {{7, -INFINITY}};  // not in a 2-token vocabulary
  EXPECT_EQ(Sampler(config).Sample(std::vector<float>{2.0f, 1.0f},
                                   std::vector<int32_t>{-1, 2, 99}),
            0);
}

TEST(SamplerTest, MinPKeepsTokensAtLeastMinPTimesTheBest) {
  // p = 0.5, 0.3, 0.15, 0.05; min_p 0.35 keeps p >= 0.175: ids 0 and 1.
  GenerationConfig config = Config(1.0f);
  config.min_p = 0.35f;
  Sampler sampler(config);
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f),
                                     std::log(0.15f), std::log(0.05f)};
  std::map<int32_t, int> counts;
  for (int i = 0; i < 2000; ++i) ++counts[sampler.Sample(logits)];
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_EQ(counts.count(3), 0u);
}

TEST(SamplerTest, TopPAndMinPFilterBeforeTemperature) {
  // At temperature 1 token 0 has p = 0.665 >= 0.6, so the nucleus is {0}
  // even though temperature 10 would flatten the distribution afterwards.
  Sampler top_p(Config(10.0f, 0, 0.6f));
  GenerationConfig min_p_config = Config(10.0f);
  min_p_config.min_p = 0.5f;  // p1 / p0 = 0.37 < 0.5
  Sampler min_p(min_p_config);
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(top_p.Sample(logits), 0);
    EXPECT_EQ(min_p.Sample(logits), 0);
  }
}

TEST(SamplerTest, SameSeedSameSequenceWithAllControls) {
  GenerationConfig config = Config(0.8f, 20, 0.95f, 7);
  config.min_p = 0.01f;
  config.repetition_penalty = 1.3f;
  config.presence_penalty = 0.2f;
  config.frequency_penalty = 0.1f;
  config.logit_bias = {{3, -INFINITY}, {5, 0.5f}};
  std::vector<float> logits(32);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(i * 0.7f);
  auto run = [&](uint64_t seed) {
    GenerationConfig c = config;
    c.seed = seed;
    Sampler sampler(c);
    std::vector<int32_t> history;
    for (int i = 0; i < 64; ++i) history.push_back(sampler.Sample(logits, history));
    return history;
  };
  const std::vector<int32_t> a = run(7);
  EXPECT_EQ(a, run(7));
  EXPECT_NE(a, run(8));
  for (int32_t id : a) EXPECT_NE(id, 3);
}

// The sampling chain as the sampler defines it (sampler.h), with a full sort
// of every finite logit: the draw for a uniform number u in [0, 1) of the
// candidates' total mass.
struct FullSortSampler {
  GenerationConfig config;

  // (weight at the temperature, id) of the candidates, in sampling order.
  std::vector<std::pair<double, int32_t>> Candidates(const std::vector<float>& logits) const {
    std::vector<std::pair<float, int32_t>> sorted;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (std::isfinite(logits[i])) sorted.emplace_back(logits[i], static_cast<int32_t>(i));
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    if (config.top_k > 0 && static_cast<size_t>(config.top_k) < sorted.size()) {
      sorted.resize(static_cast<size_t>(config.top_k));
    }
    const double max = sorted.front().first;
    if (config.top_p < 1.0f) {
      double total = 0;
      for (const auto& [logit, id] : sorted) total += std::exp(logit - max);
      double mass = 0;
      size_t n = 0;
      while (n < sorted.size()) {
        mass += std::exp(sorted[n].first - max) / total;
        ++n;
        if (mass >= config.top_p) break;
      }
      sorted.resize(n);
    }
    if (config.min_p > 0.0f) {
      const double threshold = max + std::log(static_cast<double>(config.min_p));
      size_t n = 1;
      while (n < sorted.size() && sorted[n].first >= threshold) ++n;
      sorted.resize(n);
    }
    std::vector<std::pair<double, int32_t>> weighted;
    for (const auto& [logit, id] : sorted) {
      weighted.emplace_back(
          static_cast<float>(std::exp((logit - max) / config.temperature)), id);
    }
    return weighted;
  }
};

// Logits of `n` tokens: normal with the given spread, every `tie_every`-th
// rounded to a coarse grid (ties), a few non-finite.
std::vector<float> LargeLogits(size_t n, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> logits(n);
  for (size_t i = 0; i < n; ++i) {
    logits[i] = normal(rng);
    if (i % 7 == 0) logits[i] = std::round(logits[i]);
  }
  logits[n / 3] = NAN;
  logits[n / 2] = -INFINITY;
  return logits;
}

// The sampler sorts only as much of a large vocabulary as the filters and
// the draw need; what it keeps and what it draws are those of a full sort.
TEST(SamplerTest, PartialSortingMatchesAFullSortOnLargeVocabularies) {
  struct Case {
    float temperature;
    int top_k;
    float top_p;
    float min_p;
  };
  const Case cases[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 0, 0.9f, 0.0f}, {0.8f, 40, 1.0f, 0.0f},
                        {0.8f, 0, 1.0f, 0.05f}, {1.3f, 0, 0.95f, 0.02f}, {0.2f, 0, 1.0f, 0.0f},
                        {1.0f, 3000, 0.5f, 0.0f}};
  for (const float spread : {0.5f, 3.0f, 12.0f}) {
    const std::vector<float> logits = LargeLogits(50000, spread, 17);
    for (const Case& c : cases) {
      GenerationConfig config = Config(c.temperature, c.top_k, c.top_p, /*seed=*/5);
      config.min_p = c.min_p;
      const std::vector<std::pair<double, int32_t>> expected =
          FullSortSampler{config}.Candidates(logits);
      const std::string where = absl::StrCat("spread ", spread, " temperature ", c.temperature,
                                             " top_k ", c.top_k, " top_p ", c.top_p,
                                             " min_p ", c.min_p);
      Sampler sampler(config);
      std::vector<float> probabilities;
      sampler.Distribution(logits, {}, {}, &probabilities);
      double total = 0;
      for (const auto& [weight, id] : expected) total += weight;
      // The same tokens kept (a weight under e^-87 of the largest may round
      // to probability 0 on either side).
      std::vector<bool> kept(logits.size(), false);
      for (const auto& [weight, id] : expected) {
        kept[static_cast<size_t>(id)] = true;
        if (weight / total > 1e-30) {
          ASSERT_GT(probabilities[static_cast<size_t>(id)], 0.0f) << where;
        }
      }
      for (size_t id = 0; id < logits.size(); ++id) {
        if (probabilities[id] > 0.0f) {
          ASSERT_TRUE(kept[id]) << where << " token " << id;
        }
      }
      for (const auto& [weight, id] : expected) {
        ASSERT_NEAR(probabilities[static_cast<size_t>(id)], weight / total, 1e-6) << where;
      }
      // Sample() draws u * total with the sampler's generator: replay it.
      std::mt19937_64 replay(config.seed);
      for (int draw = 0; draw < 40; ++draw) {
        std::uniform_real_distribution<double> uniform(0.0, total);
        double r = uniform(replay);
        int32_t want = expected.back().second;
        for (const auto& [weight, id] : expected) {
          if (r < weight) {
            want = id;
            break;
          }
          r -= weight;
        }
        ASSERT_EQ(sampler.Sample(logits), want) << where << " draw " << draw;
      }
    }
  }
}

TEST(SamplerTest, ValidateCoversEveryControl) {
  GenerationConfig good = Config(0.7f, 40, 0.9f);
  good.min_p = 0.05f;
  good.repetition_penalty = 1.1f;
  good.presence_penalty = -0.5f;
  good.frequency_penalty = 0.5f;
  good.repeat_last_n = 0;
  good.logit_bias = {{0, -INFINITY}, {9, 3.0f}};
  good.stop_token_ids = {9};
  good.stop_strings = {"\n\n", "User:"};
  EXPECT_TRUE(Sampler::Validate(good).ok());
  EXPECT_TRUE(Sampler::Validate(good, 10).ok());

  struct Case {
    const char* field;
    void (*spoil)(GenerationConfig&);
    std::optional<int32_t> vocab_size;
  };
  const Case cases[] = {
      {"min_p", [](GenerationConfig& c) { c.min_p = -0.1f; }, {}},
      {"min_p", [](GenerationConfig& c) { c.min_p = 1.5f; }, {}},
      {"min_p", [](GenerationConfig& c) { c.min_p = NAN; }, {}},
      {"repetition_penalty",
       [](GenerationConfig& c) { c.repetition_penalty = 0.0f; }, {}},
      {"repetition_penalty",
       [](GenerationConfig& c) { c.repetition_penalty = INFINITY; }, {}},
      {"presence_penalty",
       [](GenerationConfig& c) { c.presence_penalty = NAN; }, {}},
      {"frequency_penalty",
       [](GenerationConfig& c) { c.frequency_penalty = -INFINITY; }, {}},
      {"repeat_last_n", [](GenerationConfig& c) { c.repeat_last_n = -1; }, {}},
      {"logit_bias", [](GenerationConfig& c) { c.logit_bias = {{1, NAN}}; }, {}},
      {"logit_bias",
       [](GenerationConfig& c) { c.logit_bias = {{1, INFINITY}}; }, {}},
      {"logit_bias", [](GenerationConfig& c) { c.logit_bias = {{-2, 1.0f}}; },
       {}},
      {"logit_bias", [](GenerationConfig& c) { c.logit_bias = {{10, 1.0f}}; },
       10},
      {"stop_token_ids", [](GenerationConfig& c) { c.stop_token_ids = {-1}; },
       {}},
      {"stop_token_ids", [](GenerationConfig& c) { c.stop_token_ids = {10}; },
       10},
      {"stop_strings", [](GenerationConfig& c) { c.stop_strings = {"a", ""}; },
       {}},
      {"stop_strings",
       [](GenerationConfig& c) { c.stop_strings = {"\xC3"}; }, {}},
  };
  for (const Case& c : cases) {
    GenerationConfig bad = good;
    c.spoil(bad);
    const absl::Status status = Sampler::Validate(bad, c.vocab_size);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(std::string(status.message()).find(c.field), std::string::npos)
        << status.message();
  }
}

}  // namespace
}  // namespace lnpu::framework
