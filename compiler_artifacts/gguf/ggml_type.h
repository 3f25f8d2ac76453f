#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_GGML_TYPE_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_GGML_TYPE_H_

#include <array>
#include <cstddef>
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

// The storage of one GGML type: elements are stored in blocks of
// `block_elements` taking `block_bytes` each (1 / 4 for F32, 32 / 34 for
// Q8_0, 256 / 144 for Q4_K).
struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;  // ggml's name: "F32", "Q8_0", ...
  uint32_t block_elements;
  uint32_t block_bytes;
};

// Every known type, as defined by ggml (ggml-common.h; the K and IQ
// super-blocks hold QK_K = 256 elements). This is the one table of block
// sizes: code needing a block size reads it here.
inline constexpr std::array kGgmlTypeTraits = {
    GgmlTypeTraits{GgmlType::kF32, "F32", 1, 4},
    GgmlTypeTraits{GgmlType::kF16, "F16", 1, 2},
    GgmlTypeTraits{GgmlType::kQ4_0, "Q4_0", 32, 18},
    GgmlTypeTraits{GgmlType::kQ4_1, "Q4_1", 32, 20},
    GgmlTypeTraits{GgmlType::kQ5_0, "Q5_0", 32, 22},
    GgmlTypeTraits{GgmlType::kQ5_1, "Q5_1", 32, 24},
    GgmlTypeTraits{GgmlType::kQ8_0, "Q8_0", 32, 34},
    GgmlTypeTraits{GgmlType::kQ8_1, "Q8_1", 32, 36},
    GgmlTypeTraits{GgmlType::kQ2_K, "Q2_K", 256, 84},
    GgmlTypeTraits{GgmlType::kQ3_K, "Q3_K", 256, 110},
    GgmlTypeTraits{GgmlType::kQ4_K, "Q4_K", 256, 144},
    GgmlTypeTraits{GgmlType::kQ5_K, "Q5_K", 256, 176},
    GgmlTypeTraits{GgmlType::kQ6_K, "Q6_K", 256, 210},
    GgmlTypeTraits{GgmlType::kQ8_K, "Q8_K", 256, 292},
    GgmlTypeTraits{GgmlType::kIQ2_XXS, "IQ2_XXS", 256, 66},
    GgmlTypeTraits{GgmlType::kIQ2_XS, "IQ2_XS", 256, 74},
    GgmlTypeTraits{GgmlType::kIQ3_XXS, "IQ3_XXS", 256, 98},
    GgmlTypeTraits{GgmlType::kIQ1_S, "IQ1_S", 256, 50},
    GgmlTypeTraits{GgmlType::kIQ4_NL, "IQ4_NL", 32, 18},
    GgmlTypeTraits{GgmlType::kIQ3_S, "IQ3_S", 256, 110},
    GgmlTypeTraits{GgmlType::kIQ2_S, "IQ2_S", 256, 82},
    GgmlTypeTraits{GgmlType::kIQ4_XS, "IQ4_XS", 256, 136},
    GgmlTypeTraits{GgmlType::kI8, "I8", 1, 1},
    GgmlTypeTraits{GgmlType::kI16, "I16", 1, 2},
    GgmlTypeTraits{GgmlType::kI32, "I32", 1, 4},
    GgmlTypeTraits{GgmlType::kI64, "I64", 1, 8},
    GgmlTypeTraits{GgmlType::kF64, "F64", 1, 8},
    GgmlTypeTraits{GgmlType::kIQ1_M, "IQ1_M", 256, 56},
    GgmlTypeTraits{GgmlType::kBF16, "BF16", 1, 2},
    GgmlTypeTraits{GgmlType::kTQ1_0, "TQ1_0", 256, 54},
    GgmlTypeTraits{GgmlType::kTQ2_0, "TQ2_0", 256, 66},
};

// Index of `type` in kGgmlTypeTraits, or kGgmlTypeTraits.size() for values
// that are not a known type. (Lookups compare values, never pointers, so
// they stay constant expressions under -fsanitize=undefined.)
constexpr size_t GgmlTypeIndex(GgmlType type) {
  size_t i = 0;
  while (i < kGgmlTypeTraits.size() && kGgmlTypeTraits[i].type != type) ++i;
  return i;
}

// The traits of `type`, or nullptr for values that are not a known type.
inline const GgmlTypeTraits* FindGgmlTypeTraits(GgmlType type) {
  const size_t i = GgmlTypeIndex(type);
  return i < kGgmlTypeTraits.size() ? &kGgmlTypeTraits[i] : nullptr;
}

// Elements and bytes per block of a known `type` (0 for unknown values),
// usable in constant expressions: GgmlBlockBytes(GgmlType::kQ8_0) == 34.
constexpr uint32_t GgmlBlockElements(GgmlType type) {
  const size_t i = GgmlTypeIndex(type);
  return i < kGgmlTypeTraits.size() ? kGgmlTypeTraits[i].block_elements : 0;
}
constexpr uint32_t GgmlBlockBytes(GgmlType type) {
  const size_t i = GgmlTypeIndex(type);
  return i < kGgmlTypeTraits.size() ? kGgmlTypeTraits[i].block_bytes : 0;
}

// ggml's name of `type` ("F32", "Q8_0", ...); "type N" for values that are
// not a known type.
std::string_view GgmlTypeName(GgmlType type);

// {elements per block, bytes per block} of `type` ({1, 4} for F32,
// {32, 34} for Q8_0). InvalidArgument for values that are not a known type.
absl::StatusOr<std::pair<uint32_t, uint32_t>> GgmlTypeBlock(GgmlType type);

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_GGML_TYPE_H_
