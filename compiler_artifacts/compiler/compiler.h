// The compiler: lowers a GGUF model of the llama family (architectures
// "llama" and "qwen2") into an .lnpu artifact of static NPU graphs (format:
// compiler_artifacts/format/).
#ifndef COMPILER_ARTIFACTS_COMPILER_COMPILER_H_
#define COMPILER_ARTIFACTS_COMPILER_COMPILER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/vocabulary.h"

namespace lnpu::compiler {

struct CompileOptions {
  // Prompt tokens a session can hold; with min_response_len it fixes the
  // KV-cache capacity (max_prompt_len + min_response_len slots). Both >= 1,
  // capacity <= 1 << 20.
  uint32_t max_prompt_len = 1024;
  uint32_t min_response_len = 128;
  // Token counts of the Prefill graphs, each >= 1. Sizes above
  // max_prompt_len are clamped to it and duplicates dropped, so these
  // defaults work with any max_prompt_len. Must not be empty. The 32 holds
  // a short chat turn (17-32 tokens) in one graph: on CPUs whose 16-row
  // chunks are compute-bound that is one pass where two 16-row ones cost
  // more (docs/performance.md, "A 32-token prefill graph").
  std::vector<uint32_t> prefill_chunks = {16, 32, 64, 256};
  // Lane counts of the batched decode graphs (model.fbs
  // Model.decode_batches), each in [1, 64]: a graph of B lanes runs the
  // decode steps of B sequences in one pass over the weights. 1 is the
  // ordinary decode graph, always present; duplicates are dropped. Each
  // graph adds B * (vocab_size + 3) * 4 bytes to every session's io buffer.
  std::vector<uint32_t> decode_batches;
  // Element type of the matmul weights and the embedding table, chosen per
  // tensor from its GGUF type. kQ8 and kQ4 are symmetric per-block int8 /
  // int4 with an f16 scale per 32 weights (LNPU_DTYPE_Q8_0 / Q4_0, what
  // NPUs run); a matrix whose rows are not a multiple of 32 elements is
  // stored as F16 instead. kAuto (the default) keeps a quantized file near
  // its size: F32 / F16 / BF16 / Q8_0 tensors become Q8_0, a Q6_K output
  // projection (untied, rows a multiple of 256) stays LNPU_DTYPE_Q6_K (UAPI
  // 1.6; runtime::Model::Load converts it to Q8_0 on a device that does not
  // prefer Q6_K), every other quantized tensor the device block type closest
  // to it in bits per weight (Q4_0 up to 6.5 bits: Q2_K..Q5_K, Q4_0..Q5_1,
  // IQ4_NL, IQ4_XS; Q8_0 for Q6_K), so a Q4_K_M file gives mostly Q4_0 with
  // Q8_0 where the file chose Q6_K in the layers. kKeep keeps F32, F16, Q8_0
  // and Q4_0 as stored, and a Q6_K output projection as kAuto does, widens
  // BF16 to F32 and re-quantizes every other quantized type to Q8_0. A
  // source tensor
  // already in the target type is copied bit-exactly; others are
  // dequantized exactly (gguf/dequantize.h) and converted. Norm weights and
  // biases are always F32.
  enum class WeightType { kAuto, kKeep, kF32, kF16, kQ8, kQ4 } weights =
      WeightType::kAuto;
  // Element type of the KV cache. New K/V rows are computed in F32 and
  // converted when the DMA scatters them into the cache: kF16 rounds them
  // (half the memory of kF32); kQ8 quantizes each head of each row to int8
  // with an f32 scale (LNPU_DTYPE_I8, (head_dim + 4) / (4 head_dim) of kF32;
  // needs head_dim a multiple of 4). Attention reads the new rows converted
  // the same way, so chunking a prompt does not change which values
  // attention reads (only the f32 rounding of its sums).
  enum class KvType { kF32, kF16, kQ8 } kv_dtype = KvType::kF16;
  // Estimated multiply-adds at most per compute job (>= 1). A graph's
  // compute commands are cut into consecutive jobs within this budget (a
  // command above it runs as a job of its own), so that a long prefill stays
  // well inside the device's job timeout on a slow device: the default,
  // 4 G multiply-adds, is about 2 s at 2 GMAC/s, a small board's portable
  // int8 path. Decode graphs of models up to ~4 B parameters stay one job.
  uint64_t max_job_macs = uint64_t{4} << 30;
  // Rows of the largest Verify graph (model.fbs), which computes the
  // logits of every row so that speculative decoding checks up to
  // verify_rows - 1 proposed tokens in one run; smaller ones of 2, 4, 8, ...
  // rows come with it (VerifyGraphRows), so that a step with fewer
  // proposals runs fewer rows. 0 (the default) compiles none. At most the
  // KV-cache capacity.
  uint32_t verify_rows = 0;
  // Compiles only the first keep_layers transformer layers (0 = all), e.g.
  // a cheap self-draft model for speculative decoding that shares the
  // source model's vocabulary and embeddings. At most the model's layers.
  uint32_t keep_layers = 0;
  // Sliding-window layers (gemma2, gemma3) keep their K/V in a ring of
  // window + max(verify_rows, 1) - 1 slots instead of the whole capacity
  // when that is smaller (model.fbs KvCache.window_ring_slots): a local
  // layer never attends further back than its window, and the extra
  // verify_rows - 1 slots let speculative decoding drop rejected rows. The
  // results are the same either way; false keeps every layer at capacity.
  bool window_ring = true;
  // When set, called from the compiling thread while the weights are
  // written, with (bytes written, total bytes) of the data section.
  std::function<void(uint64_t, uint64_t)> progress;
  // When set, called with the model's vocabulary before anything is
  // written; an error ends the compile with it. The tools pass the
  // tokenizer's own validation (framework::Tokenizer::Create), which lives
  // above this layer, so that no artifact is written that the runtime
  // would refuse to load.
  std::function<absl::Status(const Vocabulary&)> validate_vocabulary;
};

// The weight type named `name` as npu-compile --weights spells it: "auto",
// "keep", "f32", "f16", "q8", "q4". InvalidArgument naming the accepted
// names otherwise.
absl::StatusOr<CompileOptions::WeightType> ParseWeightType(
    const std::string& name);

// The row counts of the Verify graphs compiled for
// CompileOptions::verify_rows: the powers of two from 2 below it, then
// verify_rows itself (8: 2, 4, 8; 6: 2, 4, 6; 1: 1; 0: none).
std::vector<uint32_t> VerifyGraphRows(uint32_t verify_rows);

// Compiles the GGUF model at `gguf_path` (architecture "llama" or "qwen2";
// tensors of gguf::DequantizableTypeNames()) into `output_path`,
// streaming one tensor at a time (memory stays far below the model size). The file appears only when complete: it is
// written to "<output_path>.tmp" and renamed after fsync, and nothing is
// left behind on failure. Errors: InvalidArgument for bad options or an
// unsupported / inconsistent model (the message names the key, tensor or
// type and what is supported), the GGUF reader's errors for unreadable
// input, Unavailable for output I/O failures. Thread-safe (no shared state).
absl::Status CompileGguf(const std::string& gguf_path,
                         const std::string& output_path,
                         const CompileOptions& options);

}  // namespace lnpu::compiler

#endif  // COMPILER_ARTIFACTS_COMPILER_COMPILER_H_
