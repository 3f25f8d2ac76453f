// An independent, dynamic reference implementation of the llama forward pass.
//
// This is the oracle of the product's correctness argument: the static NPU
// pipeline (fixed-capacity KV cache, attention mask bits, fixed-shape graphs,
// DMA of new K/V rows) must produce exactly the greedy tokens that this plain
// forward pass produces with a KV cache that simply grows by one row per token.
//
// It deliberately shares no code with the product's kernels, compiler or
// runtime: only the GGUF reader is used, to obtain the weights. Everything is
// scalar C++ with float storage and double accumulation, one token at a time,
// written straight from the llama architecture:
//   x = token_embd[token]
//   per layer:  h = x + Wo * Attention(RoPE(Wq * RMSNorm(x)), RoPE(Wk * ...), Wv * ...)
//               x = h + Wdown * (SiLU(Wgate * RMSNorm(h)) * (Wup * RMSNorm(h)))
//   logits = Woutput * RMSNorm(x)          (Woutput = token_embd when tied)
// RoPE rotates the first <arch>.rope.dimension_count dimensions of every
// head: llama pairs adjacent dimensions (2i, 2i+1), qwen2 pairs (i, i + d/2)
// ("NEOX"); Llama 3 frequency scaling divides frequency i by factor i (the
// rope_freqs.weight tensor, or computed from rope.scaling.type "llama3").
// qwen2 adds biases to the Q, K and V projections (llama when present).
// phi3 fuses Q/K/V into attn_qkv and gate/up into ffn_up, and scales its
// RoPE by LongRoPE factors (long beyond the trained context, else short)
// and the attention factor, which multiplies the rotated dimensions.
// qwen3 has no biases but RMS-normalizes each head of Q and K (weights
// attn_q_norm / attn_k_norm of head_dim) before RoPE, and its head size
// (attention.key_length) need not be dim / n_heads.
// gemma2 / gemma3 scale the embedding by sqrt(dim), RMS-normalize the
// outputs of attention and feed-forward (post_attention_norm,
// post_ffw_norm) before adding them to x, gate the feed-forward with the
// tanh-approximated GELU, scale the queries by 1 / sqrt(head_dim) (27B:
// 1 / sqrt(dim / n_heads)), restrict the local layers to a sliding window
// of the last attention.sliding_window positions (gemma2: even layers;
// gemma3: five of every six, rotating with base 10000), and gemma2 caps
// the attention scores and logits softly: cap * tanh(s / cap) (50 and 30
// unless the file says otherwise). gemma3 normalizes Q and K heads as
// qwen3 does. The GGUF norm weights already hold Gemma's (1 + w).
// Attention is grouped-query (query head h reads KV head h / (n_heads /
// n_kv_heads)). Optionally the cached K/V rows are rounded to f16, as an
// F16 KV cache stores them.
//
// Thread-safety: a ReferenceLlama is a mutable state machine (its KV cache);
// use one instance per thread. Distinct instances are independent.

#ifndef LNPU_TESTS_REFERENCE_REFERENCE_LLAMA_H_
#define LNPU_TESTS_REFERENCE_REFERENCE_LLAMA_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace lnpu::reference {

// Hyper-parameters of a loaded model, as read from GGUF metadata and
// cross-checked against the tensor shapes.
struct ReferenceLlamaConfig {
  std::string architecture;  // general.architecture
  int vocab_size = 0;
  int dim = 0;         // llama.embedding_length
  int n_layers = 0;    // llama.block_count
  int n_heads = 0;     // llama.attention.head_count
  int n_kv_heads = 0;  // llama.attention.head_count_kv (defaults to n_heads)
  int head_dim = 0;    // <arch>.attention.key_length, else dim / n_heads
  int ffn_dim = 0;     // llama.feed_forward_length
  int rope_dim = 0;    // llama.rope.dimension_count (defaults to head_dim)
  float rope_theta = 10000.0f;  // <arch>.rope.freq_base
  bool rope_neox = false;       // pairs (i, i + rope_dim / 2): qwen2, qwen3
  bool qk_norm = false;         // qwen3: RMSNorm of each Q and K head before RoPE
  // phi3: attn_qkv (Q, K, V rows) and ffn_up (gate, up rows) are fused.
  bool fused_projections = false;
  // smollm3: layers l with (l + 1) % nope_every == 0 skip RoPE; 0 = none.
  int nope_every = 0;
  // <arch>.rope.scaling.attn_factor: multiplies the rotated dimensions.
  double rope_attn_factor = 1.0;
  // <arch>.rope.scaling.original_context_length (0 when absent): phi3 uses
  // rope_factors_long beyond it, rope_factors_short up to it.
  int rope_original_context = 0;
  // Divisors of the RoPE frequencies (Llama 3 scaling); empty = none.
  std::vector<float> rope_freq_factors;
  float norm_eps = 0.0f;        // llama.attention.layer_norm_rms_epsilon
  bool tied_embeddings = false;  // output.weight absent: logits use token_embd
  bool gemma = false;            // gemma2 or gemma3 (see the file comment)
  double query_scale = 0.0;      // gemma: factor on q.k; else 1 / sqrt(head_dim)
  double attn_softcap = 0.0;     // gemma2: cap on attention scores; 0 = none
  double final_softcap = 0.0;    // gemma2: cap on logits; 0 = none
  int sliding_window = 0;        // gemma: window of the local layers; 0 = none
  int local_layer_period = 0;    // layer l is local iff l % period != period - 1
  float rope_theta_local = 0.0f; // gemma3: RoPE base of the local layers
};

struct ReferenceOptions {
  // Round every K and V row to f16 (nearest even, and back) before any
  // token reads it, its own token included, as an F16 KV cache stores it
  // and as the NPU's ATTENTION reads new rows with an F16 cache.
  bool round_kv_to_f16 = false;
  // Quantize every K and V row to int8 per head and back before any token
  // reads it, as an int8 KV cache (LNPU_DTYPE_I8) stores it: per head of
  // head_dim values d = max|x| / 127, q = round-half-even(x / d) in f32,
  // x' = d * q. Excludes round_kv_to_f16.
  bool quantize_kv_to_i8 = false;
  // When set, the values of each tensor (by GGUF name) come from here
  // instead of the GGUF file, e.g. the weights an artifact holds after
  // quantization; shapes are still checked against the GGUF's tensors.
  std::function<absl::StatusOr<std::vector<float>>(const std::string& name)>
      weight_values;
  // When set and true for a matrix (by GGUF name), every input vector of
  // that matrix is first rounded to int8 per block of 32 (d = max|x| / 127
  // in f32, q = round-half-even(x / d)), as an NPU multiplying Q8_0 / Q4_0
  // weights quantizes its activations.
  std::function<bool(const std::string& name)> int8_matmul_inputs;
  // The context the model runs with (the compiled cache capacity): selects
  // phi3's long or short LongRoPE factors.
  int context_length = 0;
};

class ReferenceLlama {
 public:
  // Loads a "llama", "qwen2", "qwen3", "phi3", "smollm3", "gemma2" or
  // "gemma3" GGUF file with
  // weights of any type GgufFile::TensorToF32 can widen
  // (gguf::DequantizableTypeNames()). Fails with InvalidArgument when the
  // architecture is another, a
  // required key or tensor is missing, or a tensor's shape disagrees with
  // the metadata; NotFound / other errors from the GGUF reader (or
  // options.weight_values) are passed through.
  static absl::StatusOr<std::unique_ptr<ReferenceLlama>> Load(
      const std::string& gguf_path, ReferenceOptions options = {});

  ReferenceLlama(const ReferenceLlama&) = delete;
  ReferenceLlama& operator=(const ReferenceLlama&) = delete;
  ~ReferenceLlama();

  const ReferenceLlamaConfig& config() const;

  // Runs `token` at position position(), appends its K/V rows to the cache,
  // advances position() by one and returns the vocab_size logits for the next
  // token. Precondition: 0 <= token < vocab_size (violations abort with a
  // message, since a reference that silently continued would be worthless).
  std::vector<float> Forward(int32_t token);

  // Empties the KV cache; the next Forward runs at position 0.
  void Reset();

  // Number of tokens currently in the KV cache.
  int position() const;

  // Resets, feeds `prompt` (must be non-empty; aborts otherwise) and then
  // greedily generates up to `n_new` tokens, choosing the argmax of the logits
  // with the lowest index winning ties. Generation ends early when the argmax
  // is `stop_token`, which is not included in the result (as in
  // framework::GenerationResult::tokens); a negative stop_token disables this.
  // Returns only the generated tokens, never the prompt.
  std::vector<int32_t> GenerateGreedy(absl::Span<const int32_t> prompt,
                                      int n_new, int32_t stop_token = -1);

 private:
  struct Weights;
  ReferenceLlama(ReferenceLlamaConfig config, std::unique_ptr<Weights> weights,
                 bool round_kv_to_f16, bool quantize_kv_to_i8);

  ReferenceLlamaConfig config_;
  bool round_kv_to_f16_;
  bool quantize_kv_to_i8_;
  std::unique_ptr<Weights> weights_;
  // Per layer, position-major K and V rows of n_kv_heads * head_dim floats.
  std::vector<std::vector<float>> k_cache_;
  std::vector<std::vector<float>> v_cache_;
  int position_ = 0;
};

// Index of the largest logit; the lowest index wins ties. `logits` must be
// non-empty.
int32_t ArgmaxLowestIndex(absl::Span<const float> logits);

}  // namespace lnpu::reference

#endif  // LNPU_TESTS_REFERENCE_REFERENCE_LLAMA_H_
