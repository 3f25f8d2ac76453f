#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_RANDOM_LLAMA_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_RANDOM_LLAMA_H_

// Random-weight llama models with a SentencePiece-style vocabulary, written as
// GGUF files laid out exactly like llama.cpp's conversions, for tests and
// benchmarks of the compiler, runtime and tokenizer.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_artifacts/gguf/ggml_type.h"

namespace lnpu::gguf {

struct RandomLlamaSpec {
  uint32_t vocab_size = 512;  // >= 285: 3 control, 256 byte and 26 letter tokens.
  uint32_t dim = 64;
  uint32_t n_layers = 2;
  uint32_t n_heads = 8;
  uint32_t n_kv_heads = 2;
  uint32_t ffn_dim = 160;
  uint32_t rope_dim = 0;  // 0 = head_dim.
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  uint32_t context_length = 2048;
  bool tied_embeddings = false;  // No output.weight: the output reuses token_embd.weight.
  GgmlType weight_type = GgmlType::kF32;  // F32, F16 or BF16; norms are always F32.
  uint64_t seed = 1;
};

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class LlamaTokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// A SentencePiece-style vocabulary: "<unk>" (0), "<s>" (1), "</s>" (2), the
// byte tokens "<0x00>".."<0xFF>" (3..258), then normal pieces by decreasing
// score: the letters a..z, "▁" (U+2581, word start), "▁"-prefixed letters,
// capitals, digits, punctuation, frequent bigrams and suffixes, common
// English words with their prefixes,
// then letter n-grams until `vocab_size` pieces exist. Deterministic.
struct LlamaVocabulary {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> token_types;  // LlamaTokenType values.
};
// InvalidArgument if vocab_size < 285 or > kMaxRandomLlamaVocab.
inline constexpr uint32_t kMaxRandomLlamaVocab = 1u << 22;
absl::StatusOr<LlamaVocabulary> MakeLlamaVocabulary(uint32_t vocab_size);

// Writes a llama model with the spec's shapes and seeded normal weights:
// matmul weights have std 1/sqrt(fan_in), token embeddings std 1, norm
// weights 1 + N(0, 0.05^2), so activations stay O(1) through the layers.
// The same spec always gives the same bytes. InvalidArgument naming the field
// for an inconsistent spec (e.g. dim not a multiple of n_heads) or for models
// above 4 GiB; errors of GgufWriter::Write otherwise.
absl::Status WriteRandomLlamaGguf(const RandomLlamaSpec& spec, const std::string& path);

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_RANDOM_LLAMA_H_
