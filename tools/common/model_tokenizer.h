// The tokenizer description of a model file, read without a device: from a
// GGUF model (tokenizer.ggml.*, tokenizer.chat_template) or from a compiled
// .lnpu artifact. Both routes give the same Vocabulary for the same model:
// the GGUF route is the compiler's reader (compiler::ReadVocabulary), the
// artifact route the format's one conversion (VocabularyFromTable).
//
// Stateless; thread-safe.
#ifndef TOOLS_COMMON_MODEL_TOKENIZER_H_
#define TOOLS_COMMON_MODEL_TOKENIZER_H_

#include <string>

#include "absl/status/statusor.h"
#include "compiler_artifacts/format/model_generated.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "base/vocabulary.h"

namespace lnpu::tools {

struct ModelTokenizer {
  Vocabulary vocabulary;
  std::string chat_template;  // GGUF tokenizer.chat_template; may be empty
};

// Reads the model at `path`, a GGUF file or an .lnpu artifact (told apart
// by their magic bytes). Errors name the path: NotFound / PermissionDenied
// for unreadable files, InvalidArgument for a file that is neither, and the
// GGUF reader's, the compiler's tokenizer checks' (naming the key) or the
// artifact verifier's errors.
absl::StatusOr<ModelTokenizer> ReadModelTokenizer(const std::string& path);

// tokenizer.ggml.* of `file`, with llama.cpp's defaults for absent keys
// (compiler::ReadVocabulary).
absl::StatusOr<ModelTokenizer> ModelTokenizerFromGguf(
    const gguf::GgufFile& file);

// The tokenizer table of a verified artifact. Absent token types read as
// TokenType::kNormal.
ModelTokenizer ModelTokenizerFromArtifact(
    const artifact::fb::Tokenizer& tokenizer);

}  // namespace lnpu::tools

#endif  // TOOLS_COMMON_MODEL_TOKENIZER_H_
