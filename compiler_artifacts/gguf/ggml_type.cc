#include "compiler_artifacts/gguf/ggml_type.h"

#include <functional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace lnpu::gguf {

std::string_view GgmlTypeName(GgmlType type) {
  if (const GgmlTypeTraits* traits = FindGgmlTypeTraits(type)) return traits->name;
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
  if (const GgmlTypeTraits* traits = FindGgmlTypeTraits(type)) {
    return std::pair<uint32_t, uint32_t>{traits->block_elements, traits->block_bytes};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ggml tensor type ", static_cast<uint32_t>(type),
      ": the file needs a newer reader or is corrupt"));
}

}  // namespace lnpu::gguf
