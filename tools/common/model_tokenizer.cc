#include "tools/common/model_tokenizer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/compiler/llama_source.h"
#include "compiler_artifacts/format/artifact.h"
#include "flatbuffers/flatbuffers.h"

namespace lnpu::tools {
namespace {

namespace fb = ::lnpu::artifact::fb;

std::string StringOf(const flatbuffers::String* s) {
  return s == nullptr ? std::string() : s->str();
}

// The first bytes of `path`, enough for either magic.
absl::StatusOr<std::string> ReadMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    const std::string reason = std::strerror(error);
    if (error == EACCES) {
      return absl::PermissionDeniedError(absl::StrCat(path, ": ", reason));
    }
    return absl::NotFoundError(absl::StrCat(
        path, ": cannot open (", reason, "); pass a .gguf or .lnpu file"));
  }
  std::string magic(8, '\0');
  in.read(magic.data(), static_cast<std::streamsize>(magic.size()));
  magic.resize(static_cast<size_t>(in.gcount()));
  return magic;
}

}  // namespace

ModelTokenizer ModelTokenizerFromArtifact(const fb::Tokenizer& tok) {
  ModelTokenizer result;
  framework::Vocabulary& v = result.vocabulary;
  v.type = tok.model() == fb::TokenizerModel::Gpt2
               ? framework::TokenizerType::kByteLevelBpe
               : framework::TokenizerType::kSentencePiece;
  v.pre = StringOf(tok.pre());
  if (tok.tokens() != nullptr) {
    for (const flatbuffers::String* token : *tok.tokens()) {
      v.tokens.push_back(StringOf(token));
    }
  }
  if (tok.scores() != nullptr) {
    v.scores.assign(tok.scores()->begin(), tok.scores()->end());
  }
  if (tok.token_types() != nullptr && tok.token_types()->size() != 0) {
    v.token_types.assign(tok.token_types()->begin(), tok.token_types()->end());
  } else {
    v.token_types.assign(v.tokens.size(),
                         static_cast<int32_t>(framework::TokenType::kNormal));
  }
  if (tok.merges() != nullptr) {
    for (const flatbuffers::String* merge : *tok.merges()) {
      v.merges.push_back(StringOf(merge));
    }
  }
  v.bos_id = tok.bos_id();
  v.eos_id = tok.eos_id();
  v.unk_id = tok.unk_id();
  v.pad_id = tok.pad_id();
  v.add_bos = tok.add_bos();
  v.add_eos = tok.add_eos();
  v.add_space_prefix = tok.add_space_prefix();
  result.chat_template = StringOf(tok.chat_template());
  return result;
}

absl::StatusOr<ModelTokenizer> ModelTokenizerFromGguf(
    const gguf::GgufFile& file) {
  absl::StatusOr<compiler::TokenizerSource> source =
      compiler::ReadTokenizer(file);
  if (!source.ok()) return source.status();
  // Through the artifact's table, so that both routes share one conversion.
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(compiler::SerializeTokenizer(*source, builder));
  return ModelTokenizerFromArtifact(
      *flatbuffers::GetRoot<fb::Tokenizer>(builder.GetBufferPointer()));
}

absl::StatusOr<ModelTokenizer> ReadModelTokenizer(const std::string& path) {
  absl::StatusOr<std::string> magic = ReadMagic(path);
  if (!magic.ok()) return magic.status();
  const std::string_view head = *magic;
  if (head.substr(0, 4) == "GGUF") {
    absl::StatusOr<std::unique_ptr<gguf::GgufFile>> file =
        gguf::GgufFile::Open(path);
    if (!file.ok()) return file.status();
    absl::StatusOr<ModelTokenizer> tokenizer = ModelTokenizerFromGguf(**file);
    if (!tokenizer.ok()) {
      return absl::Status(tokenizer.status().code(),
                          absl::StrCat(path, ": ",
                                       std::string(tokenizer.status().message())));
    }
    return tokenizer;
  }
  if (head == "LNPUART1") {
    absl::StatusOr<std::unique_ptr<artifact::Artifact>> artifact =
        artifact::Artifact::Open(path);
    if (!artifact.ok()) return artifact.status();
    return ModelTokenizerFromArtifact(*(*artifact)->model().tokenizer());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, " is neither a GGUF model nor an .lnpu artifact (unknown magic "
            "bytes); pass a .gguf model or an artifact from npu-compile"));
}

}  // namespace lnpu::tools
