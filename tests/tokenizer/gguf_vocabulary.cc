#include "tests/tokenizer/gguf_vocabulary.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace lnpu::framework::testing {
namespace {

// tokenizer.ggml.* ids, with absence and UINT32_MAX meaning -1.
absl::StatusOr<int32_t> SpecialId(const gguf::GgufFile& file, const char* key) {
  if (!file.HasKey(key)) return -1;
  absl::StatusOr<int64_t> id = file.GetInt(key);
  if (!id.ok()) return id.status();
  if (*id == 0xFFFFFFFF || *id < 0) return -1;
  return static_cast<int32_t>(*id);
}

absl::StatusOr<bool> BoolOr(const gguf::GgufFile& file, const char* key,
                            bool absent) {
  if (!file.HasKey(key)) return absent;
  return file.GetBool(key);
}

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

absl::StatusOr<Vocabulary> VocabularyFromGguf(const gguf::GgufFile& file) {
  Vocabulary v;
  absl::StatusOr<std::string> model = file.GetString("tokenizer.ggml.model");
  if (!model.ok()) return model.status();
  if (*model == "llama") {
    v.type = TokenizerType::kSentencePiece;
  } else if (*model == "gpt2") {
    v.type = TokenizerType::kByteLevelBpe;
  } else {
    return absl::UnimplementedError(
        absl::StrCat("tokenizer.ggml.model \"", *model, "\" is not supported"));
  }
  const bool sentencepiece = v.type == TokenizerType::kSentencePiece;
  if (file.HasKey("tokenizer.ggml.pre")) {
    absl::StatusOr<std::string> pre = file.GetString("tokenizer.ggml.pre");
    if (!pre.ok()) return pre.status();
    v.pre = *std::move(pre);
  }
  auto tokens = file.GetStringArray("tokenizer.ggml.tokens");
  if (!tokens.ok()) return tokens.status();
  v.tokens = *std::move(tokens);
  if (file.HasKey("tokenizer.ggml.scores")) {
    auto scores = file.GetFloatArray("tokenizer.ggml.scores");
    if (!scores.ok()) return scores.status();
    v.scores = *std::move(scores);
  }
  if (file.HasKey("tokenizer.ggml.token_type")) {
    auto types = file.GetInt32Array("tokenizer.ggml.token_type");
    if (!types.ok()) return types.status();
    v.token_types = *std::move(types);
  } else {
    v.token_types.assign(v.tokens.size(),
                         static_cast<int32_t>(TokenType::kNormal));
  }
  if (file.HasKey("tokenizer.ggml.merges")) {
    auto merges = file.GetStringArray("tokenizer.ggml.merges");
    if (!merges.ok()) return merges.status();
    v.merges = *std::move(merges);
  }
  for (auto [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", &v.bos_id},
                         {"tokenizer.ggml.eos_token_id", &v.eos_id},
                         {"tokenizer.ggml.unknown_token_id", &v.unk_id},
                         {"tokenizer.ggml.padding_token_id", &v.pad_id}}) {
    absl::StatusOr<int32_t> value = SpecialId(file, key);
    if (!value.ok()) return value.status();
    *id = *value;
  }
  for (auto [key, flag, absent] :
       {std::tuple{"tokenizer.ggml.add_bos_token", &v.add_bos, sentencepiece},
        {"tokenizer.ggml.add_eos_token", &v.add_eos, false},
        {"tokenizer.ggml.add_space_prefix", &v.add_space_prefix,
         sentencepiece}}) {
    absl::StatusOr<bool> value = BoolOr(file, key, absent);
    if (!value.ok()) return value.status();
    *flag = *value;
  }
  return v;
}

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
  auto vocabulary = VocabularyFromGguf(**file);
  if (!vocabulary.ok()) return vocabulary.status();
  auto tokenizer = Tokenizer::Create(*std::move(vocabulary));
  if (!tokenizer.ok()) return tokenizer.status();
  const Tokenizer* result = tokenizer->get();
  tokenizers->emplace(path, *std::move(tokenizer));
  return result;
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
