// Helpers of the framework tests that run models on the software NPU.
#ifndef TESTS_FRAMEWORK_FRAMEWORK_TEST_UTIL_H_
#define TESTS_FRAMEWORK_FRAMEWORK_TEST_UTIL_H_

#include <memory>

#include "framework/generator.h"
#include "framework/llm.h"
#include "framework/session.h"
#include "gtest/gtest.h"
#include "tests/runtime/runtime_test_util.h"

namespace lnpu::framework::testing {

using ::lnpu::runtime::testing::ModelsDir;
using ::lnpu::runtime::testing::NewTempDir;

// Greedy decoding of exactly `max_new_tokens` tokens (EOS does not stop it).
inline GenerationConfig Greedy(int max_new_tokens) {
  GenerationConfig config;
  config.max_new_tokens = max_new_tokens;
  config.stop_at_eos = false;
  return config;
}

// A new session of `llm`, or nullptr after a test failure.
inline std::unique_ptr<Session> NewSession(const Llm& llm) {
  absl::StatusOr<std::unique_ptr<Session>> session = llm.CreateSession();
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

}  // namespace lnpu::framework::testing

#endif  // TESTS_FRAMEWORK_FRAMEWORK_TEST_UTIL_H_
