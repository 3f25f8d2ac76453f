#include "tests/tokenizer/gguf_vocabulary.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/common/model_tokenizer.h"

namespace lnpu::framework::testing {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string EnvPath(const char* variable, const std::string& relative) {
  const char* root = std::getenv(variable);
  if (root == nullptr) {
    ADD_FAILURE() << variable << " is not set: run the tests through meson test";
    return relative;
  }
  return absl::StrCat(root, "/", relative);
}

}  // namespace

absl::StatusOr<const Tokenizer*> SharedTokenizer(const std::string& path) {
  static std::mutex mutex;
  static auto* tokenizers =
      new std::map<std::string, std::unique_ptr<Tokenizer>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = tokenizers->find(path); it != tokenizers->end()) {
    return it->second.get();
  }
  auto file = gguf::GgufFile::Open(path);
  if (!file.ok()) return file.status();
  auto model = tools::ModelTokenizerFromGguf(**file);
  if (!model.ok()) return model.status();
  auto tokenizer = Tokenizer::Create(std::move(model->vocabulary));
  if (!tokenizer.ok()) return tokenizer.status();
  const Tokenizer* result = tokenizer->get();
  tokenizers->emplace(path, *std::move(tokenizer));
  return result;
}

int32_t TokenIdOf(const Tokenizer& tokenizer, const std::string& text) {
  const std::vector<std::string>& tokens = tokenizer.vocabulary().tokens;
  const auto it = std::find(tokens.begin(), tokens.end(), text);
  return it == tokens.end() ? -1 : static_cast<int32_t>(it - tokens.begin());
}

std::string TestDataPath(const std::string& relative) {
  return EnvPath("LNPU_TEST_DATA", relative);
}

std::string ModelPath(const std::string& file_name) {
  return EnvPath("LNPU_MODELS_DIR", file_name);
}

absl::StatusOr<std::vector<VocabTestCase>> ReadVocabTestCases(
    const std::string& gguf_path) {
  absl::StatusOr<std::string> inp = ReadFile(gguf_path + ".inp");
  if (!inp.ok()) return inp.status();
  absl::StatusOr<std::string> out = ReadFile(gguf_path + ".out");
  if (!out.ok()) return out.status();

  std::vector<VocabTestCase> cases;
  constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  std::string_view rest = *inp;
  for (size_t end; (end = rest.find(kSeparator)) != std::string_view::npos;) {
    cases.push_back({std::string(rest.substr(0, end)), {}});
    rest.remove_prefix(end + kSeparator.size());
  }
  std::istringstream lines(*out);
  std::string line;
  for (VocabTestCase& test_case : cases) {
    if (!std::getline(lines, line)) {
      return absl::InvalidArgumentError(
          absl::StrCat(gguf_path, ".out has fewer lines than ", cases.size()));
    }
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) test_case.ids.push_back(id);
  }
  return cases;
}

}  // namespace lnpu::framework::testing
