#include "kernel_iface/softnpu/compute/quant_matmul.h"

#include <atomic>
#include <vector>

namespace lnpu::softnpu::compute {
namespace {

// Every path compiled into this build, best first.
std::vector<const QuantMatmulPath*> CompiledPaths() {
  return {
#if defined(LNPU_X86_QUANT_MATMUL_PATHS)
      &kAmxQuantMatmulPath,
      &kAvx512VnniQuantMatmulPath,
      &kAvxVnniQuantMatmulPath,
      &kAvx2QuantMatmulPath,
#endif
#if defined(__aarch64__)
      &kNeonI8mmQuantMatmulPath,
      &kNeonDotprodQuantMatmulPath,
#endif
      &kHighwayQuantMatmulPath,
  };
}

std::atomic<const QuantMatmulPath*> path_for_test{nullptr};

}  // namespace

std::span<const QuantMatmulPath* const> SupportedQuantMatmulPaths() {
  static const std::vector<const QuantMatmulPath*>* const supported = [] {
    auto* paths = new std::vector<const QuantMatmulPath*>;
    for (const QuantMatmulPath* path : CompiledPaths()) {
      if (path->supported()) paths->push_back(path);
    }
    return paths;
  }();
  return *supported;
}

const QuantMatmulPath& ActiveQuantMatmulPath() {
  const QuantMatmulPath* forced = path_for_test.load(std::memory_order_relaxed);
  return forced != nullptr ? *forced : *SupportedQuantMatmulPaths().front();
}

decltype(QuantMatmulPath::gemv) ActiveQuantGemv() {
  const QuantMatmulPath* active = &ActiveQuantMatmulPath();
  bool at_or_after_active = false;
  for (const QuantMatmulPath* path : SupportedQuantMatmulPaths()) {
    at_or_after_active = at_or_after_active || path == active;
    if (at_or_after_active && path->gemv != nullptr) return path->gemv;
  }
  return kHighwayQuantMatmulPath.gemv;
}

void SetQuantMatmulPathForTest(const QuantMatmulPath* path) {
  path_for_test.store(path, std::memory_order_relaxed);
}

}  // namespace lnpu::softnpu::compute
