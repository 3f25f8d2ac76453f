#include "compiler_artifacts/gguf/ggml_type.h"

#include <array>
#include <functional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace lnpu::gguf {
namespace {

struct TypeTraits {
  GgmlType type;
  std::string_view name;
  uint32_t block_elements;
  uint32_t block_bytes;
};

// Block layouts as defined by ggml (ggml-common.h); QK_K super-blocks hold
// 256 elements.
constexpr std::array kTypeTraits = {
    TypeTraits{GgmlType::kF32, "F32", 1, 4},
    TypeTraits{GgmlType::kF16, "F16", 1, 2},
    TypeTraits{GgmlType::kQ4_0, "Q4_0", 32, 18},
    TypeTraits{GgmlType::kQ4_1, "Q4_1", 32, 20},
    TypeTraits{GgmlType::kQ5_0, "Q5_0", 32, 22},
    TypeTraits{GgmlType::kQ5_1, "Q5_1", 32, 24},
    TypeTraits{GgmlType::kQ8_0, "Q8_0", 32, 34},
    TypeTraits{GgmlType::kQ8_1, "Q8_1", 32, 36},
    TypeTraits{GgmlType::kQ2_K, "Q2_K", 256, 84},
    TypeTraits{GgmlType::kQ3_K, "Q3_K", 256, 110},
    TypeTraits{GgmlType::kQ4_K, "Q4_K", 256, 144},
    TypeTraits{GgmlType::kQ5_K, "Q5_K", 256, 176},
    TypeTraits{GgmlType::kQ6_K, "Q6_K", 256, 210},
    TypeTraits{GgmlType::kQ8_K, "Q8_K", 256, 292},
    TypeTraits{GgmlType::kIQ2_XXS, "IQ2_XXS", 256, 66},
    TypeTraits{GgmlType::kIQ2_XS, "IQ2_XS", 256, 74},
    TypeTraits{GgmlType::kIQ3_XXS, "IQ3_XXS", 256, 98},
    TypeTraits{GgmlType::kIQ1_S, "IQ1_S", 256, 50},
    TypeTraits{GgmlType::kIQ4_NL, "IQ4_NL", 32, 18},
    TypeTraits{GgmlType::kIQ3_S, "IQ3_S", 256, 110},
    TypeTraits{GgmlType::kIQ2_S, "IQ2_S", 256, 82},
    TypeTraits{GgmlType::kIQ4_XS, "IQ4_XS", 256, 136},
    TypeTraits{GgmlType::kI8, "I8", 1, 1},
    TypeTraits{GgmlType::kI16, "I16", 1, 2},
    TypeTraits{GgmlType::kI32, "I32", 1, 4},
    TypeTraits{GgmlType::kI64, "I64", 1, 8},
    TypeTraits{GgmlType::kF64, "F64", 1, 8},
    TypeTraits{GgmlType::kIQ1_M, "IQ1_M", 256, 56},
    TypeTraits{GgmlType::kBF16, "BF16", 1, 2},
    TypeTraits{GgmlType::kTQ1_0, "TQ1_0", 256, 54},
    TypeTraits{GgmlType::kTQ2_0, "TQ2_0", 256, 66},
};

const TypeTraits* FindTraits(GgmlType type) {
  for (const TypeTraits& traits : kTypeTraits) {
    if (traits.type == type) return &traits;
  }
  return nullptr;
}

}  // namespace

std::string_view GgmlTypeName(GgmlType type) {
  if (const TypeTraits* traits = FindTraits(type)) return traits->name;
  // Unknown values only show up in messages about corrupt input. Their names
  // are interned (std::set nodes never move, so the views stay valid); the
  // set is capped so that hostile input cannot grow it without bound.
  static constexpr size_t kMaxInternedNames = 256;
  static absl::Mutex mutex(absl::kConstInit);
  static std::set<std::string, std::less<>>* names = new std::set<std::string, std::less<>>();
  const std::string name = absl::StrCat("type ", static_cast<uint32_t>(type));
  absl::MutexLock lock(&mutex);
  auto it = names->find(name);
  if (it != names->end()) return *it;
  if (names->size() >= kMaxInternedNames) return "type (unknown)";
  return *names->insert(name).first;
}

absl::StatusOr<std::pair<uint32_t, uint32_t>> GgmlTypeBlock(GgmlType type) {
  if (const TypeTraits* traits = FindTraits(type)) {
    return std::pair<uint32_t, uint32_t>{traits->block_elements, traits->block_bytes};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ggml tensor type ", static_cast<uint32_t>(type),
      ": the file needs a newer reader or is corrupt"));
}

}  // namespace lnpu::gguf
