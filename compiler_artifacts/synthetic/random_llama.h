#ifndef LNPU_COMPILER_ARTIFACTS_SYNTHETIC_RANDOM_LLAMA_H_
#define LNPU_COMPILER_ARTIFACTS_SYNTHETIC_RANDOM_LLAMA_H_

// Random-weight models of the llama family (architectures "llama" and
// "qwen2") with a synthetic SentencePiece-style vocabulary or a real one
// copied from a vocabulary GGUF, written as GGUF files laid out exactly like
// llama.cpp's conversions, for tests and benchmarks of the compiler, runtime
// and tokenizer. Files are written through GgufWriter with every tensor
// streamed one row at a time, so multi-gigabyte models need only a few MiB
// of memory.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_artifacts/gguf/ggml_type.h"
#include "compiler_artifacts/synthetic/synthetic_vocabulary.h"

namespace lnpu::synthetic {

// The shape fields share their names with compiler::LlamaHParams but are
// what to write (0 = derived, as llama.cpp's files leave keys out), not what
// a reader found: the compiler reads them back from the written file, and
// this library does not depend on it.
struct RandomLlamaSpec {
  // "llama"; "qwen2": qwen2.* keys, QKV biases, NEOX RoPE (in the
  // compiler's reading of the architecture); "qwen3": qwen3.* keys, no
  // biases, per-head RMS norms of Q and K (blk.N.attn_{q,k}_norm.weight),
  // attention.key_length / value_length, NEOX RoPE; "phi3": fused
  // blk.N.attn_qkv and blk.N.ffn_up (gate then up rows), LongRoPE factor
  // tensors rope_factors_{short,long}.weight, NEOX RoPE; "smollm3": the
  // llama layout (every fourth layer without RoPE is the architecture's);
  // "gemma2": blk.N.post_attention_norm and post_ffw_norm besides the
  // llama tensors; "gemma3": those and the per-head Q/K norms of qwen3.
  std::string architecture = "llama";
  // With vocabulary_gguf empty: the synthetic vocabulary's size
  // (synthetic_vocabulary.h), >= kMinLlamaVocab. Else 0 or the token count
  // of that file.
  uint32_t vocab_size = 512;
  // A GGUF file whose tokenizer.* keys (a real vocabulary, e.g.
  // models/vocab/ggml-vocab-qwen2.gguf) are copied into the model.
  std::string vocabulary_gguf;
  // With vocabulary_gguf: the vocabulary's last filler tokens (type unused,
  // or llama.cpp's "[PAD<id>]") respelled as these user-defined tokens, in
  // order, as later models of a family add tokens (Qwen2.5's "<tool_call>").
  std::vector<std::string> added_tokens;
  uint32_t dim = 64;
  uint32_t n_layers = 2;
  uint32_t n_heads = 8;
  uint32_t n_kv_heads = 2;
  uint32_t ffn_dim = 160;
  // 0 = dim / n_heads; else the head size, written as
  // <arch>.attention.key_length and value_length (qwen3: 1024-wide models
  // with 16 heads of 128).
  uint32_t head_dim = 0;
  uint32_t rope_dim = 0;  // 0 = head_dim.
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  uint32_t context_length = 2048;
  bool tied_embeddings = false;  // No output.weight: the output reuses token_embd.weight.
  // Matmul weights and token_embd: any type of CanDequantize (dequantize.h).
  // A matrix whose rows are not a multiple of the type's block (32, or 256
  // for the K types and IQ4_XS) is written as F16. Norms and biases are
  // always F32.
  gguf::GgmlType weight_type = gguf::GgmlType::kF32;
  // blk.N.attn_{q,k,v}.bias tensors (std 0.1); always written for qwen2.
  bool qkv_bias = false;
  // > 0: Llama 3 RoPE scaling keys (<arch>.rope.scaling.type "llama3",
  // factor, low/high_freq_factor 1 / 4, original_context_length 8192).
  float llama3_rope_factor = 0.0f;
  // phi3: <arch>.rope.scaling.attn_factor (0 = not written) and
  // original_context_length (0 = not written).
  float rope_attn_factor = 0.0f;
  uint32_t rope_original_context = 0;
  // gemma2 / gemma3: <arch>.attention.sliding_window,
  // attn_logit_softcapping and final_logit_softcapping (0 = not written).
  uint32_t sliding_window = 0;
  float attn_logit_softcap = 0.0f;
  float final_logit_softcap = 0.0f;
  uint64_t seed = 1;
};

// Writes a model with the spec's shapes and seeded random weights: matmul
// weights have std 1/sqrt(fan_in), token embeddings std 1, norm weights
// 1 + N(0, 0.05^2), so activations stay O(1) through the layers (normal
// values, quantized as llama.cpp does for Q8_0 / Q4_0; blocks of the other
// quantized types hold uniform random quants and scales, with d (and dmin or
// m) chosen to give about the same mean and std). The same
// spec always gives the same bytes. The file appears complete or not at
// all (written to <path>.tmp, renamed). InvalidArgument naming the field
// for an inconsistent spec (e.g. dim not a multiple of n_heads) or for
// models above 64 GiB; I/O errors naming the path otherwise.
absl::Status WriteRandomLlamaGguf(const RandomLlamaSpec& spec, const std::string& path);

}  // namespace lnpu::synthetic

#endif  // LNPU_COMPILER_ARTIFACTS_SYNTHETIC_RANDOM_LLAMA_H_
