// The compiler: lowers a GGUF llama model into an .lnpu artifact of static
// NPU graphs (format: compiler_artifacts/format/).
#ifndef COMPILER_ARTIFACTS_COMPILER_COMPILER_H_
#define COMPILER_ARTIFACTS_COMPILER_COMPILER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace lnpu::compiler {

struct CompileOptions {
  // Prompt tokens a session can hold; with min_response_len it fixes the
  // KV-cache capacity (max_prompt_len + min_response_len slots). Both >= 1,
  // capacity <= 1 << 20.
  uint32_t max_prompt_len = 1024;
  uint32_t min_response_len = 128;
  // Token counts of the Prefill graphs, each >= 1. Sizes above
  // max_prompt_len are clamped to it and duplicates dropped, so these
  // defaults work with any max_prompt_len. Must not be empty.
  std::vector<uint32_t> prefill_chunks = {16, 64, 256};
  // Element type of the matmul weights and the embedding table: as stored
  // in the GGUF (F32 or F16), or converted. Norm weights are always F32.
  enum class WeightType { kKeep, kF32, kF16 } weights = WeightType::kKeep;
};

// Compiles the GGUF model at `gguf_path` (architecture "llama", F32/F16
// tensors) into `output_path`. The file appears only when complete: it is
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
