// The artifact's Tokenizer table <-> base/vocabulary.h: the one conversion
// between the stored and the in-memory tokenizer description, used by the
// compiler (writing), the runtime and the tools (reading).
#ifndef COMPILER_ARTIFACTS_FORMAT_VOCABULARY_TABLE_H_
#define COMPILER_ARTIFACTS_FORMAT_VOCABULARY_TABLE_H_

#include <string>

#include "base/vocabulary.h"
#include "compiler_artifacts/format/model_generated.h"
#include "flatbuffers/flatbuffers.h"

namespace lnpu::artifact {

// `vocabulary` and the model's chat template (GGUF tokenizer.chat_template,
// may be empty) as a Tokenizer table.
flatbuffers::Offset<fb::Tokenizer> SerializeVocabulary(const Vocabulary& vocabulary,
                                                       const std::string& chat_template,
                                                       flatbuffers::FlatBufferBuilder& builder);

// The vocabulary of a verified Tokenizer table. A table without token
// types reads as all TokenType::kNormal.
Vocabulary VocabularyFromTable(const fb::Tokenizer& table);
// The table's chat template ("" when it has none).
std::string ChatTemplateFromTable(const fb::Tokenizer& table);

}  // namespace lnpu::artifact

#endif  // COMPILER_ARTIFACTS_FORMAT_VOCABULARY_TABLE_H_
