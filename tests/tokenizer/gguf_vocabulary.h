// Test support: the tokenizer inputs the tests need, read from GGUF vocab
// files (through tools/common/model_tokenizer.h, the path npu-tokenize
// takes) and llama.cpp's tokenizer test vectors.
#ifndef TESTS_TOKENIZER_GGUF_VOCABULARY_H_
#define TESTS_TOKENIZER_GGUF_VOCABULARY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "framework/tokenizer/tokenizer.h"

namespace lnpu::framework::testing {

// A tokenizer for the GGUF file at `path`, loaded once per path and kept
// for the life of the process.
absl::StatusOr<const Tokenizer*> SharedTokenizer(const std::string& path);

// The id of the token spelled `text` in the vocabulary's own table (a
// lookup, not an encoding: an independent source of expected ids), or -1.
int32_t TokenIdOf(const Tokenizer& tokenizer, const std::string& text);

// A path under $LNPU_TEST_DATA / $LNPU_MODELS_DIR (fails the test if unset).
std::string TestDataPath(const std::string& relative);
std::string ModelPath(const std::string& file_name);

// One case of llama.cpp's test-tokenizer-0 vectors: a text and the ids it
// encodes to (without BOS).
struct VocabTestCase {
  std::string text;
  std::vector<int32_t> ids;
};

// Reads `<vocab>.inp` / `<vocab>.out`: texts separated by
// "\n__ggml_vocab_test__\n" (so each text loses the line break before its
// separator), ids one line per text.
absl::StatusOr<std::vector<VocabTestCase>> ReadVocabTestCases(
    const std::string& gguf_path);

}  // namespace lnpu::framework::testing

#endif  // TESTS_TOKENIZER_GGUF_VOCABULARY_H_
