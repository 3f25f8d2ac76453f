// Test support: whether a whole text is a sentence of a grammar.
#ifndef TESTS_STRUCTURED_OUTPUT_GRAMMAR_MATCHES_H_
#define TESTS_STRUCTURED_OUTPUT_GRAMMAR_MATCHES_H_

#include <memory>
#include <string>

#include "framework/structured_output/grammar.h"
#include "framework/structured_output/grammar_recognizer.h"

namespace lnpu::framework::structured_output::testing {

// True when `grammar` accepts every byte of `text` and accepts after the
// last one.
inline bool Matches(const std::shared_ptr<const Grammar>& grammar, const std::string& text) {
  GrammarRecognizer recognizer(grammar);
  return recognizer.Advance(text).ok() && recognizer.IsAccepting();
}

}  // namespace lnpu::framework::structured_output::testing

#endif  // TESTS_STRUCTURED_OUTPUT_GRAMMAR_MATCHES_H_
