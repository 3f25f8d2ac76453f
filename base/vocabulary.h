// The one description of a model's tokenizer: the token list and the rules
// for using it, as GGUF stores them under tokenizer.ggml.*. Every layer
// passes this same type along: the compiler reads it from GGUF
// (compiler::ReadVocabulary, which applies llama.cpp's defaults for absent
// keys), the artifact stores it (compiler_artifacts/format/vocabulary_table.h
// converts both ways), the runtime exposes it (runtime::ModelInfo), and
// framework::Tokenizer::Create validates and uses it.
#ifndef LNPU_BASE_VOCABULARY_H_
#define LNPU_BASE_VOCABULARY_H_

#include <cstdint>
#include <string>
#include <vector>

namespace lnpu {

enum class TokenizerType {
  kSentencePiece,  // GGUF tokenizer.ggml.model "llama": score-driven merges
  kByteLevelBpe,   // GGUF tokenizer.ggml.model "gpt2": ranked merges on bytes
                   // ("gemma4": on characters, with pre "gemma4")
};

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,  // "<0xHH>": stands for the single byte 0xHH
};

struct Vocabulary {
  TokenizerType type = TokenizerType::kSentencePiece;
  // Byte-level BPE pre-tokenizer name (GGUF tokenizer.ggml.pre; see
  // PreTokenizerNamed), "gemma4" for Gemma 4 vocabularies. Ignored for
  // SentencePiece.
  std::string pre;
  // Token texts, indexed by token id. SentencePiece texts spell spaces as
  // U+2581; byte-level BPE texts are in the GPT-2 byte alphabet.
  std::vector<std::string> tokens;
  // One merge score per token (SentencePiece: required; byte-level BPE:
  // unused, may be empty).
  std::vector<float> scores;
  // One TokenType value per token (the artifact reader fills kNormal for a
  // model that has none).
  std::vector<int32_t> token_types;
  // Byte-level BPE merge rules "left right", highest priority first.
  std::vector<std::string> merges;
  // Special token ids; -1 when the model has none.
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
  // Whether prompts for this model start with BOS / end with EOS. Encode
  // does not consult these: callers pass add_bos explicitly. The defaults
  // are llama.cpp's for SentencePiece vocabularies; the GGUF reader sets
  // all three from the file or from its family's defaults.
  bool add_bos = true, add_eos = false;
  // SentencePiece only: Encode prepends a space to non-empty text, and
  // Decode drops it again.
  bool add_space_prefix = true;

  bool operator==(const Vocabulary&) const = default;
};

}  // namespace lnpu

#endif  // LNPU_BASE_VOCABULARY_H_
