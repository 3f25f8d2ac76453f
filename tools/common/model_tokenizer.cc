#include "tools/common/model_tokenizer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/llama_source.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/vocabulary_table.h"
#include "flatbuffers/flatbuffers.h"

namespace lnpu::tools {
namespace {

namespace fb = ::lnpu::artifact::fb;

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

ModelTokenizer ModelTokenizerFromArtifact(const fb::Tokenizer& table) {
  return {artifact::VocabularyFromTable(table), artifact::ChatTemplateFromTable(table)};
}

absl::StatusOr<ModelTokenizer> ModelTokenizerFromGguf(const gguf::GgufFile& file) {
  LNPU_ASSIGN_OR_RETURN(Vocabulary vocabulary, compiler::ReadVocabulary(file));
  LNPU_ASSIGN_OR_RETURN(std::string chat_template, compiler::ReadChatTemplate(file));
  return ModelTokenizer{std::move(vocabulary), std::move(chat_template)};
}

absl::StatusOr<ModelTokenizer> ReadModelTokenizer(const std::string& path) {
  // Kept as a StatusOr: GCC 12 takes the string moved out by
  // LNPU_ASSIGN_OR_RETURN for maybe-uninitialized (-Wmaybe-uninitialized).
  const absl::StatusOr<std::string> magic = ReadMagic(path);
  LNPU_RETURN_IF_ERROR(magic.status());
  const std::string_view head = *magic;
  if (head.substr(0, 4) == "GGUF") {
    LNPU_ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> file, gguf::GgufFile::Open(path));
    absl::StatusOr<ModelTokenizer> tokenizer = ModelTokenizerFromGguf(*file);
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(tokenizer.status(), path, ": ");
    return tokenizer;
  }
  if (head == "LNPUART1") {
    LNPU_ASSIGN_OR_RETURN(std::unique_ptr<artifact::Artifact> artifact,
                          artifact::Artifact::Open(path));
    return ModelTokenizerFromArtifact(*artifact->model().tokenizer());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, " is neither a GGUF model nor an .lnpu artifact (unknown magic "
            "bytes); pass a .gguf model or an artifact from npu-compile"));
}

}  // namespace lnpu::tools
