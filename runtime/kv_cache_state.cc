#include "runtime/kv_cache_state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lnpu::runtime {

KvCacheState::KvCacheState(uint32_t capacity)
    : owned_mask_(capacity, 0), mask_(absl::MakeSpan(owned_mask_)) {}

KvCacheState::KvCacheState(absl::Span<uint8_t> mask_storage) : mask_(mask_storage) {
  Clear();
}

absl::StatusOr<SlotPlacement> KvCacheState::Reserve(uint32_t n) const {
  if (n == 0) {
    return absl::InvalidArgumentError(
        "KV cache reservation of 0 slots: request at least one token");
  }
  if (n > free_slots()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "KV cache full: ", used_, " of ", capacity(), " slots used, ", n,
        " more requested; start over with Reset() or a new session, or "
        "recompile the model with a larger max_prompt_len/min_response_len"));
  }
  SlotPlacement placement;
  placement.first_slot = used_;
  placement.first_position = next_position();
  placement.count = n;
  return placement;
}

void KvCacheState::Commit(const SlotPlacement& placement) {
  if (placement.first_slot != used_ ||
      static_cast<int64_t>(placement.first_position) != static_cast<int64_t>(used_) ||
      placement.count > free_slots()) {
    std::fprintf(stderr,
                 "lnpu runtime: KvCacheState::Commit of slots [%u, +%u) that were "
                 "not reserved on the current state (%u of %u used)\n",
                 placement.first_slot, placement.count, used_, capacity());
    std::abort();
  }
  if (placement.count > 0) std::memset(mask_.data() + placement.first_slot, 1, placement.count);
  used_ += placement.count;
}

void KvCacheState::Clear() {
  if (!mask_.empty()) std::memset(mask_.data(), 0, mask_.size());
  used_ = 0;
}

}  // namespace lnpu::runtime
