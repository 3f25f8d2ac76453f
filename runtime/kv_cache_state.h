// Slot and mask bookkeeping of a session's fixed-capacity KV cache.
//
// The cache has `capacity` slots. Tokens take slots in order: the i-th
// token of a session (position i) lives in slot i, so the used slots are
// always [0, used()). A slot becomes visible to attention when its mask
// byte is 1; Commit() sets it after the step that wrote the slot's K/V has
// completed. This is pure host logic; the device only reads the mask.
//
// Thread-safety: none; owned by one Session (or test) at a time.
#ifndef RUNTIME_KV_CACHE_STATE_H_
#define RUNTIME_KV_CACHE_STATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace lnpu::runtime {

// Where `count` new tokens go: token i takes slot first_slot + i at RoPE
// position first_position + i.
struct SlotPlacement {
  uint32_t first_slot = 0;
  int32_t first_position = 0;
  uint32_t count = 0;

  int32_t slot(uint32_t i) const { return static_cast<int32_t>(first_slot + i); }
  int32_t position(uint32_t i) const { return first_position + static_cast<int32_t>(i); }
};

class KvCacheState {
 public:
  // A cache whose mask lives in host memory owned by this object.
  explicit KvCacheState(uint32_t capacity);
  // A cache whose mask is `mask_storage` (e.g. the mapped device mask),
  // which then is the single source of truth and must outlive this object.
  // The storage is cleared (all slots free).
  explicit KvCacheState(absl::Span<uint8_t> mask_storage);

  // The mask may be external memory: neither copyable nor movable.
  KvCacheState(const KvCacheState&) = delete;
  KvCacheState& operator=(const KvCacheState&) = delete;

  uint32_t capacity() const { return static_cast<uint32_t>(mask_.size()); }
  uint32_t used() const { return used_; }
  uint32_t free_slots() const { return capacity() - used_; }
  // RoPE position of the next token (equals used()).
  int32_t next_position() const { return static_cast<int32_t>(used_); }

  // Slots and positions for `n` new tokens; changes nothing. InvalidArgument
  // for n == 0; ResourceExhausted when they do not fit in the free slots.
  absl::StatusOr<SlotPlacement> Reserve(uint32_t n) const;

  // Marks the slots of `placement` visible and counts them as used.
  // Precondition: `placement` was returned by Reserve() on the current
  // state (no Commit or Clear in between); violations abort.
  void Commit(const SlotPlacement& placement);

  // One byte per slot, 1 = visible to attention.
  absl::Span<const uint8_t> mask() const { return mask_; }

  // Frees every slot (mask all 0).
  void Clear();

 private:
  std::vector<uint8_t> owned_mask_;  // storage when the mask is not external
  absl::Span<uint8_t> mask_;
  uint32_t used_ = 0;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_KV_CACHE_STATE_H_
