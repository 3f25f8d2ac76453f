#include "compiler_artifacts/format/vocabulary_table.h"

namespace lnpu::artifact {
namespace {

std::string StringOf(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

std::vector<std::string> StringsOf(
    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v == nullptr) return out;
  out.reserve(v->size());
  for (const flatbuffers::String* s : *v) out.push_back(StringOf(s));
  return out;
}

template <typename T>
std::vector<T> VectorOf(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? std::vector<T>() : std::vector<T>(v->begin(), v->end());
}

}  // namespace

flatbuffers::Offset<fb::Tokenizer> SerializeVocabulary(const Vocabulary& v,
                                                       const std::string& chat_template,
                                                       flatbuffers::FlatBufferBuilder& builder) {
  const auto pre = builder.CreateString(v.pre);
  const auto tokens = builder.CreateVectorOfStrings(v.tokens);
  flatbuffers::Offset<flatbuffers::Vector<float>> scores;
  if (!v.scores.empty()) scores = builder.CreateVector(v.scores);
  flatbuffers::Offset<flatbuffers::Vector<int32_t>> types;
  if (!v.token_types.empty()) types = builder.CreateVector(v.token_types);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> merges;
  if (!v.merges.empty()) merges = builder.CreateVectorOfStrings(v.merges);
  const auto chat = builder.CreateString(chat_template);
  const fb::TokenizerModel model = v.type == TokenizerType::kByteLevelBpe
                                       ? fb::TokenizerModel::Gpt2
                                       : fb::TokenizerModel::Llama;
  return fb::CreateTokenizer(builder, model, pre, tokens, scores, types, merges, v.bos_id,
                             v.eos_id, v.unk_id, v.pad_id, v.add_bos, v.add_eos,
                             v.add_space_prefix, chat);
}

Vocabulary VocabularyFromTable(const fb::Tokenizer& table) {
  Vocabulary v;
  v.type = table.model() == fb::TokenizerModel::Gpt2 ? TokenizerType::kByteLevelBpe
                                                     : TokenizerType::kSentencePiece;
  v.pre = StringOf(table.pre());
  v.tokens = StringsOf(table.tokens());
  v.scores = VectorOf(table.scores());
  v.token_types = VectorOf(table.token_types());
  if (v.token_types.empty()) {
    v.token_types.assign(v.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  }
  v.merges = StringsOf(table.merges());
  v.bos_id = table.bos_id();
  v.eos_id = table.eos_id();
  v.unk_id = table.unk_id();
  v.pad_id = table.pad_id();
  v.add_bos = table.add_bos();
  v.add_eos = table.add_eos();
  v.add_space_prefix = table.add_space_prefix();
  return v;
}

std::string ChatTemplateFromTable(const fb::Tokenizer& table) {
  return StringOf(table.chat_template());
}

}  // namespace lnpu::artifact
