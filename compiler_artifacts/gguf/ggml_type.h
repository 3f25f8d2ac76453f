#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_GGML_TYPE_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_GGML_TYPE_H_

#include <cstdint>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace lnpu::gguf {

// Element type of a GGUF tensor, with ggml's numbering (the values are stored
// in GGUF files). Quantized types store elements in fixed-size blocks.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
};

// ggml's name of `type` ("F32", "Q8_0", ...); "type N" for values that are
// not a known type.
std::string_view GgmlTypeName(GgmlType type);

// {elements per block, bytes per block} of `type` ({1, 4} for F32,
// {32, 34} for Q8_0). InvalidArgument for values that are not a known type.
absl::StatusOr<std::pair<uint32_t, uint32_t>> GgmlTypeBlock(GgmlType type);

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_GGML_TYPE_H_
