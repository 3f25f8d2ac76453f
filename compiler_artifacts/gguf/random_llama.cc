#include "compiler_artifacts/gguf/random_llama.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler_artifacts/gguf/gguf_writer.h"
#include "compiler_artifacts/gguf/half.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::gguf {
namespace {

constexpr absl::string_view kWordStart = "\xE2\x96\x81";  // U+2581, SentencePiece's space.
constexpr uint32_t kSpecialAndByteTokens = 3 + 256;
constexpr uint32_t kLetters = 26;
constexpr uint32_t kMinVocab = kSpecialAndByteTokens + kLetters;
constexpr uint64_t kMaxModelBytes = uint64_t{4} << 30;

// Frequent English letter bigrams and suffixes, most frequent first.
constexpr std::string_view kCommonGrams[] = {
    "th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te",
    "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou",
    "io", "le", "ve", "co", "me", "de", "hi", "ri", "ro", "ic", "ne", "ea", "ra", "ce",
    "li", "ch", "ll", "be", "ma", "si", "om", "ur", "ing", "ion", "ent", "ly", "ay",
};

// Common English words (many from children's stories), each added with all
// its "▁"-prefixed prefixes so that SentencePiece merges can reach it.
constexpr std::string_view kCommonWords[] = {
    "the",   "and",    "was",    "to",     "a",     "she",   "he",     "it",     "of",
    "in",    "her",    "his",    "they",   "with",  "that",  "day",    "said",   "play",
    "little", "girl",  "boy",    "named",  "Lily",  "Tim",   "Once",   "upon",   "time",
    "there", "loved",  "outside", "park",  "big",   "happy", "friend", "mom",    "saw",
    "very",  "went",   "one",    "had",    "but",   "so",    "wanted", "tree",   "dog",
    "cat",   "ball",   "fun",    "sun",    "together", "is", "you",    "not",    "for",
};

// Builds the normal pieces in decreasing-score order, without duplicates.
class PieceList {
 public:
  explicit PieceList(size_t wanted) : wanted_(wanted) { pieces_.reserve(wanted); }

  bool full() const { return pieces_.size() >= wanted_; }
  void Add(std::string piece) {
    if (!full() && seen_.insert(piece).second) pieces_.push_back(std::move(piece));
  }
  std::vector<std::string> Take() && { return std::move(pieces_); }

 private:
  size_t wanted_;
  std::vector<std::string> pieces_;
  absl::flat_hash_set<std::string> seen_;
};

std::vector<std::string> MakeNormalPieces(size_t count) {
  PieceList pieces(count);
  for (char c = 'a'; c <= 'z'; ++c) pieces.Add(std::string(1, c));
  pieces.Add(std::string(kWordStart));
  for (char c = 'a'; c <= 'z'; ++c) pieces.Add(absl::StrCat(kWordStart, std::string(1, c)));
  for (char c = 'A'; c <= 'Z'; ++c) pieces.Add(std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) pieces.Add(absl::StrCat(kWordStart, std::string(1, c)));
  for (char c = '0'; c <= '9'; ++c) pieces.Add(std::string(1, c));
  for (char c : std::string_view(".,!?'\"-:;()")) pieces.Add(std::string(1, c));
  for (std::string_view gram : kCommonGrams) pieces.Add(std::string(gram));
  for (std::string_view word : kCommonWords) {
    for (size_t length = 1; length <= word.size(); ++length) {
      pieces.Add(absl::StrCat(kWordStart, ToAbsl(word.substr(0, length))));
    }
  }
  // Letter n-grams, bare and word-initial, n = 2, 3, ... until full.
  for (size_t n = 2; !pieces.full(); ++n) {
    std::string gram(n, 'a');
    while (!pieces.full()) {
      pieces.Add(gram);
      pieces.Add(absl::StrCat(kWordStart, gram));
      size_t position = n;  // Next n-gram in lexicographic order.
      while (position > 0 && gram[position - 1] == 'z') gram[--position] = 'a';
      if (position == 0) break;
      ++gram[position - 1];
    }
  }
  return std::move(pieces).Take();
}

// SplitMix64: small, fast, and identical on every platform (unlike the
// standard distributions), so a seed always gives the same model.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double Uniform() { return static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double Normal() {
    const double radius = std::sqrt(-2.0 * std::log(Uniform()));
    return radius * std::cos(2.0 * std::numbers::pi * Uniform());
  }

 private:
  uint64_t state_;
};

// Per-tensor seed: the tensor's content depends only on the model seed and
// its name, not on the order tensors are generated in.
uint64_t TensorSeed(uint64_t seed, std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  Random mix(seed ^ hash);
  return mix.Next();
}

uint64_t TypeBytes(GgmlType type) { return type == GgmlType::kF32 ? 4 : 2; }

std::vector<uint8_t> Encode(const std::vector<float>& values, GgmlType type) {
  std::vector<uint8_t> bytes(values.size() * TypeBytes(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == GgmlType::kF32) {
      std::memcpy(&bytes[4 * i], &values[i], 4);
      continue;
    }
    const uint16_t bits =
        type == GgmlType::kF16 ? FloatToFloat16(values[i]) : FloatToBFloat16(values[i]);
    std::memcpy(&bytes[2 * i], &bits, 2);
  }
  return bytes;
}

absl::Status InvalidSpec(std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("RandomLlamaSpec: ", ToAbsl(message)));
}

absl::Status ValidateSpec(const RandomLlamaSpec& spec) {
  if (spec.vocab_size < kMinVocab || spec.vocab_size > kMaxRandomLlamaVocab) {
    return InvalidSpec(absl::StrCat("vocab_size ", spec.vocab_size, " must be in [", kMinVocab,
                                    ", ", kMaxRandomLlamaVocab,
                                    "] (3 control + 256 byte + 26 letter tokens at least)"));
  }
  if (spec.dim == 0 || spec.n_layers == 0 || spec.n_heads == 0 || spec.n_kv_heads == 0 ||
      spec.ffn_dim == 0 || spec.context_length == 0) {
    return InvalidSpec("dim, n_layers, n_heads, n_kv_heads, ffn_dim and context_length must be "
                       "positive");
  }
  if (spec.dim % spec.n_heads != 0) {
    return InvalidSpec(absl::StrCat("dim ", spec.dim, " is not a multiple of n_heads ",
                                    spec.n_heads));
  }
  if (spec.n_heads % spec.n_kv_heads != 0) {
    return InvalidSpec(absl::StrCat("n_heads ", spec.n_heads, " is not a multiple of n_kv_heads ",
                                    spec.n_kv_heads));
  }
  const uint32_t head_dim = spec.dim / spec.n_heads;
  const uint32_t rope_dim = spec.rope_dim == 0 ? head_dim : spec.rope_dim;
  if (rope_dim % 2 != 0 || rope_dim > head_dim) {
    return InvalidSpec(absl::StrCat("rope dimension ", rope_dim,
                                    " must be even and at most head_dim ", head_dim,
                                    " (dim / n_heads)"));
  }
  if (!(std::isfinite(spec.rope_theta) && spec.rope_theta > 0)) {
    return InvalidSpec(absl::StrCat("rope_theta ", spec.rope_theta, " must be positive and finite"));
  }
  if (!(std::isfinite(spec.norm_eps) && spec.norm_eps > 0)) {
    return InvalidSpec(absl::StrCat("norm_eps ", spec.norm_eps, " must be positive and finite"));
  }
  if (spec.weight_type != GgmlType::kF32 && spec.weight_type != GgmlType::kF16 &&
      spec.weight_type != GgmlType::kBF16) {
    return InvalidSpec(absl::StrCat("weight_type ", ToAbsl(GgmlTypeName(spec.weight_type)),
                                    " is not supported: use F32, F16 or BF16"));
  }
  // All factors are < 2^32 and there are few of them, so double is exact
  // enough to compare against the limit without overflow.
  const double kv_dim = static_cast<double>(head_dim) * spec.n_kv_heads;
  const double per_layer = 2.0 * spec.dim * spec.dim + 2.0 * spec.dim * kv_dim +
                           3.0 * spec.dim * spec.ffn_dim;
  const double matmul_elements = per_layer * spec.n_layers +
                                 static_cast<double>(spec.dim) * spec.vocab_size *
                                     (spec.tied_embeddings ? 1 : 2);
  const double bytes = matmul_elements * static_cast<double>(TypeBytes(spec.weight_type));
  if (bytes > static_cast<double>(kMaxModelBytes)) {
    return InvalidSpec(absl::StrFormat("the model would need %.0f bytes of weights; the limit is "
                                       "%d bytes: shrink dim, n_layers, ffn_dim or vocab_size",
                                       bytes, kMaxModelBytes));
  }
  return absl::OkStatus();
}

// Adds one tensor of normal values: mean `mean`, standard deviation `std`.
absl::Status AddRandomTensor(GgufWriter& writer, const RandomLlamaSpec& spec, std::string name,
                             GgmlType type, std::vector<uint64_t> dims, double mean, double std) {
  uint64_t elements = 1;
  for (uint64_t dim : dims) elements *= dim;
  Random random(TensorSeed(spec.seed, name));
  std::vector<float> values(elements);
  for (float& value : values) value = static_cast<float>(mean + std * random.Normal());
  return writer.AddTensor(std::move(name), type, std::move(dims), Encode(values, type));
}

uint32_t FileType(GgmlType weight_type) {
  // llama.cpp's llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_BF16.
  switch (weight_type) {
    case GgmlType::kF16: return 1;
    case GgmlType::kBF16: return 32;
    default: return 0;
  }
}

}  // namespace

absl::StatusOr<LlamaVocabulary> MakeLlamaVocabulary(uint32_t vocab_size) {
  if (vocab_size < kMinVocab || vocab_size > kMaxRandomLlamaVocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        "llama vocabulary size ", vocab_size, " must be in [", kMinVocab, ", ",
        kMaxRandomLlamaVocab, "] (3 control + 256 byte + 26 letter tokens at least)"));
  }
  LlamaVocabulary vocabulary;
  vocabulary.tokens.reserve(vocab_size);
  vocabulary.scores.reserve(vocab_size);
  vocabulary.token_types.reserve(vocab_size);
  auto add = [&](std::string token, float score, LlamaTokenType type) {
    vocabulary.tokens.push_back(std::move(token));
    vocabulary.scores.push_back(score);
    vocabulary.token_types.push_back(static_cast<int32_t>(type));
  };
  add("<unk>", 0.0f, LlamaTokenType::kUnknown);
  add("<s>", 0.0f, LlamaTokenType::kControl);
  add("</s>", 0.0f, LlamaTokenType::kControl);
  for (int byte = 0; byte < 256; ++byte) add(absl::StrFormat("<0x%02X>", byte), 0.0f, LlamaTokenType::kByte);
  std::vector<std::string> pieces = MakeNormalPieces(vocab_size - kSpecialAndByteTokens);
  for (size_t i = 0; i < pieces.size(); ++i) {
    add(std::move(pieces[i]), -static_cast<float>(i), LlamaTokenType::kNormal);
  }
  return vocabulary;
}

absl::Status WriteRandomLlamaGguf(const RandomLlamaSpec& spec, const std::string& path) {
  if (absl::Status status = ValidateSpec(spec); !status.ok()) return status;
  absl::StatusOr<LlamaVocabulary> vocabulary = MakeLlamaVocabulary(spec.vocab_size);
  if (!vocabulary.ok()) return vocabulary.status();

  const uint32_t head_dim = spec.dim / spec.n_heads;
  const uint64_t dim = spec.dim;
  const uint64_t kv_dim = uint64_t{head_dim} * spec.n_kv_heads;
  const uint64_t ffn = spec.ffn_dim;
  const uint64_t vocab = spec.vocab_size;

  GgufWriter writer;
  writer.SetString("general.architecture", "llama");
  writer.SetString("general.name",
                   absl::StrCat("random-llama-d", spec.dim, "-l", spec.n_layers, "-v",
                                spec.vocab_size, "-", ToAbsl(GgmlTypeName(spec.weight_type)), "-seed",
                                spec.seed));
  writer.SetUint32("general.file_type", FileType(spec.weight_type));
  writer.SetUint32("llama.vocab_size", spec.vocab_size);
  writer.SetUint32("llama.context_length", spec.context_length);
  writer.SetUint32("llama.embedding_length", spec.dim);
  writer.SetUint32("llama.block_count", spec.n_layers);
  writer.SetUint32("llama.feed_forward_length", spec.ffn_dim);
  writer.SetUint32("llama.attention.head_count", spec.n_heads);
  writer.SetUint32("llama.attention.head_count_kv", spec.n_kv_heads);
  writer.SetUint32("llama.rope.dimension_count", spec.rope_dim == 0 ? head_dim : spec.rope_dim);
  writer.SetFloat32("llama.rope.freq_base", spec.rope_theta);
  writer.SetFloat32("llama.attention.layer_norm_rms_epsilon", spec.norm_eps);
  writer.SetString("tokenizer.ggml.model", "llama");
  writer.SetStringArray("tokenizer.ggml.tokens", std::move(vocabulary->tokens));
  writer.SetFloat32Array("tokenizer.ggml.scores", std::move(vocabulary->scores));
  writer.SetInt32Array("tokenizer.ggml.token_type", std::move(vocabulary->token_types));
  writer.SetUint32("tokenizer.ggml.bos_token_id", 1);
  writer.SetUint32("tokenizer.ggml.eos_token_id", 2);
  writer.SetUint32("tokenizer.ggml.unknown_token_id", 0);
  writer.SetBool("tokenizer.ggml.add_bos_token", true);
  writer.SetBool("tokenizer.ggml.add_eos_token", false);

  const GgmlType weight = spec.weight_type;
  const double norm_std = 0.05;
  // A matmul with n outputs and k inputs has dims [k, n] (ggml's ne0 = k).
  auto matmul = [&](std::string name, uint64_t inputs, uint64_t outputs) {
    return AddRandomTensor(writer, spec, std::move(name), weight, {inputs, outputs}, 0.0,
                           1.0 / std::sqrt(static_cast<double>(inputs)));
  };
  auto norm = [&](std::string name) {
    return AddRandomTensor(writer, spec, std::move(name), GgmlType::kF32, {dim}, 1.0, norm_std);
  };
  if (absl::Status status =
          AddRandomTensor(writer, spec, "token_embd.weight", weight, {dim, vocab}, 0.0, 1.0);
      !status.ok()) {
    return status;
  }
  // Per layer, in llama.cpp's order; outputs == 0 marks a norm weight.
  struct LayerTensor {
    std::string_view name;
    uint64_t inputs;
    uint64_t outputs;
  };
  const LayerTensor layer_tensors[] = {
      {"attn_norm", dim, 0},   {"attn_q", dim, dim},   {"attn_k", dim, kv_dim},
      {"attn_v", dim, kv_dim}, {"attn_output", dim, dim}, {"ffn_norm", dim, 0},
      {"ffn_gate", dim, ffn},  {"ffn_up", dim, ffn},   {"ffn_down", ffn, dim},
  };
  for (uint32_t layer = 0; layer < spec.n_layers; ++layer) {
    for (const LayerTensor& tensor : layer_tensors) {
      std::string name = absl::StrCat("blk.", layer, ".", ToAbsl(tensor.name), ".weight");
      absl::Status status = tensor.outputs == 0
                                ? norm(std::move(name))
                                : matmul(std::move(name), tensor.inputs, tensor.outputs);
      if (!status.ok()) return status;
    }
  }
  if (absl::Status status = norm("output_norm.weight"); !status.ok()) return status;
  if (!spec.tied_embeddings) {
    if (absl::Status status = matmul("output.weight", dim, vocab); !status.ok()) return status;
  }
  return writer.Write(path);
}

}  // namespace lnpu::gguf
