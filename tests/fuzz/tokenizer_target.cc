// The tokenizers' fuzz targets (parser_targets.h).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "framework/tokenizer/streaming_detokenizer.h"
#include "framework/tokenizer/tokenizer.h"
#include "framework/tokenizer/utf8.h"
#include "tests/fuzz/parser_targets.h"
#include "tools/common/model_tokenizer.h"

namespace lnpu::fuzz {
namespace {

using framework::Tokenizer;
using framework::TokenizerType;

// tests/data, from $LNPU_TEST_DATA (meson test sets it) or as built.
std::string TestDataDir() {
  const char* dir = std::getenv("LNPU_TEST_DATA");
  return dir != nullptr ? dir : LNPU_FUZZ_TEST_DATA;
}

// The tokenizer of the GGUF vocabulary file at `path`.
absl::StatusOr<std::unique_ptr<Tokenizer>> ReadTokenizer(
    const std::string& path) {
  auto gguf = gguf::GgufFile::Open(path);
  if (!gguf.ok()) return gguf.status();
  auto model = tools::ModelTokenizerFromGguf(**gguf);
  if (!model.ok()) return model.status();
  return Tokenizer::Create(std::move(model->vocabulary));
}

// The tokenizer of tests/data/vocab/<file>; aborts if it cannot be read,
// as no input can be run without it.
const Tokenizer& LoadTokenizer(const std::string& file) {
  const std::string path = absl::StrCat(TestDataDir(), "/vocab/", file);
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = ReadTokenizer(path);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "cannot load the tokenizer %s: %s\n", path.c_str(),
                 tokenizer.status().ToString().c_str());
    std::abort();
  }
  return *tokenizer->release();
}

// Decode's contract: the concatenated TokenBytes, the first token after an
// optional BOS losing one leading space for SentencePiece with
// add_space_prefix.
std::string ExpectedDecode(const Tokenizer& t, absl::Span<const int32_t> ids) {
  std::string text;
  const bool strip_space =
      t.vocabulary().type == TokenizerType::kSentencePiece &&
      t.vocabulary().add_space_prefix;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = t.TokenBytes(ids[i]);
    const bool first_text_token =
        i == 0 ? ids[0] != t.bos_id() : (i == 1 && ids[0] == t.bos_id());
    if (strip_space && first_text_token && !piece.empty() && piece[0] == ' ') {
      piece.erase(0, 1);
    }
    text += piece;
  }
  return text;
}

void CheckEncode(const Tokenizer& t, std::string_view text, bool add_bos,
                 ParserRun& run) {
  const bool well_formed = framework::utf8::Validate(text).ok();
  // BOS can be asked for only when the vocabulary has one.
  const bool valid = well_formed && (!add_bos || t.bos_id() >= 0);
  const absl::StatusOr<std::vector<int32_t>> ids = t.Encode(text, add_bos);
  if (ids.ok() != valid) {
    run.Fail(absl::StrCat("Encode ", ids.ok() ? "accepts" : "rejects",
                          well_formed ? " well-formed" : " ill-formed",
                          " UTF-8 (add_bos ", add_bos, "): ",
                          ids.status().ToString()));
    return;
  }
  if (!ids.ok()) return;
  run.accepted = true;
  for (int32_t id : *ids) {
    if (id < 0 || id >= t.vocab_size()) {
      run.Fail(absl::StrCat("Encode gives the id ", id, " outside the vocabulary"));
      return;
    }
  }
  if (add_bos != (!ids->empty() && ids->front() == t.bos_id())) {
    run.Fail("BOS is not first exactly when asked for");
  }
  const bool spm = t.vocabulary().type == TokenizerType::kSentencePiece;
  if (!(spm && text.find("\xE2\x96\x81") != std::string_view::npos)) {
    const std::string decoded = t.Decode(*ids);
    if (decoded != text) {
      run.Fail(absl::StrCat("Decode(Encode(text)) is \"", decoded,
                            "\", not the text"));
    }
  }
  const framework::TextSegment segment{std::string(text), false};
  const auto segments = t.EncodeSegments({&segment, 1}, add_bos);
  if (!segments.ok() || *segments != *ids) {
    run.Fail("EncodeSegments of one plain segment differs from Encode");
  }
}

void CheckDecode(const Tokenizer& t, absl::Span<const uint8_t> bytes,
                 ParserRun& run) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 2 < bytes.size(); i += 3) {
    const int32_t raw = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16);
    ids.push_back(raw % (t.vocab_size() + 16) - 8);
  }
  const std::string decoded = t.Decode(ids);
  if (decoded != ExpectedDecode(t, ids)) {
    run.Fail("Decode is not the concatenated token bytes");
  }
  framework::StreamingDetokenizer stream(t);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.Push(id);
  streamed += stream.Flush();
  if (!framework::utf8::Validate(streamed).ok()) {
    run.Fail("the streaming detokenizer gives ill-formed UTF-8");
  }
  if (framework::utf8::Validate(decoded).ok() && streamed != decoded) {
    run.Fail("the streaming detokenizer differs from a well-formed Decode");
  }
}

ParserRun RunTokenizer(const Tokenizer& t, absl::Span<const uint8_t> input) {
  ParserRun run;
  const bool add_bos = !input.empty() && (input[0] & 1) != 0;
  if (!input.empty()) input.remove_prefix(1);
  const std::string_view text(reinterpret_cast<const char*>(input.data()),
                              input.size());
  CheckEncode(t, text, add_bos, run);
  CheckDecode(t, input, run);
  return run;
}

}  // namespace

ParserRun RunSentencePieceTokenizerTarget(absl::Span<const uint8_t> input) {
  static const Tokenizer& tokenizer =
      LoadTokenizer("ggml-vocab-llama-spm.gguf");
  return RunTokenizer(tokenizer, input);
}

ParserRun RunByteLevelBpeTokenizerTarget(absl::Span<const uint8_t> input) {
  static const Tokenizer& tokenizer = LoadTokenizer("ggml-vocab-qwen2.gguf");
  return RunTokenizer(tokenizer, input);
}

}  // namespace lnpu::fuzz
