#include "tests/structured_output/random_walk.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "absl/strings/str_format.h"
#include "framework/structured_output/grammar_matcher.h"
#include "framework/structured_output/grammar_recognizer.h"
#include "base/vocabulary.h"
#include "gtest/gtest.h"

namespace lnpu::framework::structured_output::testing {
namespace {

bool Allowed(const std::vector<uint64_t>& mask, int32_t token) {
  return (mask[token / 64] >> (token % 64) & 1) != 0;
}

// Compares `mask` with what the grammar allows token by token from the
// oracle's state (which it keeps).
void CheckAgainstOracle(const std::vector<uint64_t>& mask, GrammarRecognizer& oracle,
                        const Tokenizer& tokenizer) {
  const GrammarRecognizer::StateId state = oracle.state();
  const std::vector<int32_t>& types = tokenizer.vocabulary().token_types;
  int mismatches = 0;
  for (int32_t id = 0; id < tokenizer.vocab_size() && mismatches < 5; ++id) {
    bool expected;
    if (tokenizer.IsEndOfGeneration(id)) {
      expected = oracle.IsAccepting();
    } else {
      const auto type = static_cast<TokenType>(types[id]);
      const std::string bytes = tokenizer.TokenBytes(id);
      expected = (type == TokenType::kNormal || type == TokenType::kByte ||
                  type == TokenType::kUserDefined) &&
                 !bytes.empty() && oracle.Advance(bytes).ok();
      oracle.set_state(state);
    }
    if (expected != Allowed(mask, id)) {
      ADD_FAILURE() << "token " << id << " (\"" << tokenizer.TokenBytes(id) << "\"): mask says "
                    << Allowed(mask, id) << ", the grammar says " << expected;
      ++mismatches;
    }
  }
}

// A token that ends what is open: one of the single bytes `"`, `]`, `}`,
// else a digit; -1 when none is allowed.
int32_t ClosingToken(const std::vector<int32_t>& allowed, const Tokenizer& tokenizer,
                     std::mt19937_64& rng) {
  for (const char* preferred : {"\"]}", "0123456789"}) {
    std::vector<int32_t> candidates;
    for (int32_t id : allowed) {
      const std::string bytes = tokenizer.TokenBytes(id);
      if (bytes.size() == 1 && std::string_view(preferred).find(bytes[0]) != std::string::npos) {
        candidates.push_back(id);
      }
    }
    if (!candidates.empty()) {
      return candidates[std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(rng)];
    }
  }
  return -1;
}

}  // namespace

Walk RandomWalk(const std::shared_ptr<const Grammar>& grammar,
                const std::shared_ptr<const TokenTrie>& trie, const WalkOptions& options) {
  const Tokenizer& tokenizer = trie->tokenizer();
  GrammarMatcher matcher(grammar, trie);
  GrammarRecognizer oracle(grammar);
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int32_t> any_token(0, tokenizer.vocab_size() - 1);
  Walk walk;
  std::vector<uint64_t> mask;
  for (int step = 0; step < options.max_steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = matcher.AllowedTokens(mask);
    walk.mask_microseconds.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!status.ok()) {
      ADD_FAILURE() << "step " << step << ": " << status << " after \"" << walk.text << "\"";
      return walk;
    }
    if (options.oracle_every > 0 && step % options.oracle_every == 0) {
      CheckAgainstOracle(mask, oracle, tokenizer);
    }
    std::vector<int32_t> allowed;
    bool end_allowed = false;
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
      if (!Allowed(mask, id)) continue;
      if (trie->is_end_token(id)) {
        end_allowed = true;
      } else {
        allowed.push_back(id);
      }
    }
    // Disallowed tokens are refused, and refusing changes nothing.
    for (int probe = 0; probe < 16; ++probe) {
      const int32_t id = any_token(rng);
      if (Allowed(mask, id)) continue;
      const absl::Status refused = matcher.Accept(id);
      EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument)
          << "token " << id << " (\"" << tokenizer.TokenBytes(id) << "\") after \"" << walk.text
          << "\"";
    }
    const bool closing = step >= options.max_steps / 2;
    if (end_allowed && (allowed.empty() || closing || rng() % 4 == 0)) {
      EXPECT_TRUE(matcher.IsComplete());
      EXPECT_TRUE(matcher.Accept(tokenizer.eos_id() >= 0 && trie->is_end_token(tokenizer.eos_id())
                                     ? tokenizer.eos_id()
                                     : trie->end_tokens().front())
                      .ok());
      walk.ended = true;
      return walk;
    }
    if (allowed.empty()) {
      ADD_FAILURE() << "step " << step << ": nothing allowed after \"" << walk.text << "\"";
      return walk;
    }
    int32_t token = closing ? ClosingToken(allowed, tokenizer, rng) : -1;
    if (token < 0) {
      token = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    }
    const std::string bytes = tokenizer.TokenBytes(token);
    const absl::Status accepted = matcher.Accept(token);
    if (!accepted.ok()) {
      ADD_FAILURE() << "allowed token " << token << " was refused: " << accepted;
      return walk;
    }
    EXPECT_TRUE(oracle.Advance(bytes).ok());
    walk.text += bytes;
  }
  return walk;
}

std::string DescribeTimes(std::vector<double> microseconds) {
  if (microseconds.empty()) return "no masks";
  std::sort(microseconds.begin(), microseconds.end());
  double total = 0;
  for (double t : microseconds) total += t;
  const size_t n = microseconds.size();
  return absl::StrFormat("mean %.0f us, p50 %.0f us, p90 %.0f us, max %.0f us over %d masks",
                         total / n, microseconds[n / 2], microseconds[n * 9 / 10],
                         microseconds.back(), n);
}

}  // namespace lnpu::framework::structured_output::testing
