// Slot and mask bookkeeping of a session's fixed-capacity KV cache.
//
// The cache has `capacity` slots. The token at RoPE position p lives in
// slot SlotOf(p). Until the cache is full that is slot p, so the used slots
// are [0, used()). What happens when tokens no longer fit is the cache's
// CacheFullPolicy (runtime/cache_full_policy.h):
//   - kFinish (the default): Reserve() returns ResourceExhausted;
//   - kRing: the first sinks() slots keep the first tokens for good
//     ("attention sinks"); the other slots form a ring in which each new
//     token overwrites the oldest non-sink token. Positions keep
//     increasing, so RoPE distances between the kept tokens stay right:
//     position p >= sinks goes to slot
//     sinks + (p - sinks) % (capacity - sinks).
//
// A slot is visible to attention when its mask byte is 1. A step that
// writes slots runs as: Reserve() -> Evict() (before the step runs: the
// slots about to be overwritten stop being attended) -> the device step ->
// Commit() (after it completed: the new slots become visible). This is pure
// host logic; the device only reads the mask (and, for models with
// sliding-window attention, the position each slot holds).
//
// Thread-safety: none; owned by one Sequence (or test) at a time.
#ifndef RUNTIME_KV_CACHE_STATE_H_
#define RUNTIME_KV_CACHE_STATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/cache_full_policy.h"

namespace lnpu::runtime {

// Where `count` new tokens go: token i takes slot slot(i) at RoPE position
// first_position + i. The slots are consecutive until they wrap around the
// ring.
struct SlotPlacement {
  int32_t first_position = 0;
  uint32_t count = 0;
  // The cache geometry the placement was made for.
  uint32_t capacity = 0;
  CacheFullPolicy policy;

  int32_t position(uint32_t i) const { return first_position + static_cast<int32_t>(i); }
  int32_t slot(uint32_t i) const;
};

// The slot of the token at `position` (>= 0) in a cache of `capacity`
// slots under `policy` (without ring, positions beyond the capacity have
// no slot: returns -1).
int32_t SlotOf(int32_t position, uint32_t capacity, const CacheFullPolicy& policy);

class KvCacheState {
 public:
  // A cache whose mask lives in host memory owned by this object.
  explicit KvCacheState(uint32_t capacity);
  // A cache whose mask is `mask_storage` (e.g. the mapped device mask),
  // which then is the single source of truth and must outlive this object.
  // The storage is cleared (all slots free). `slot_position_storage`, when
  // not empty, receives the position of the token each slot holds (I32 per
  // slot, native byte order; 0 for slots never written), kept in step with
  // the mask.
  explicit KvCacheState(absl::Span<uint8_t> mask_storage,
                        absl::Span<uint8_t> slot_position_storage = {});

  // The mask may be external memory: neither copyable nor movable.
  KvCacheState(const KvCacheState&) = delete;
  KvCacheState& operator=(const KvCacheState&) = delete;

  uint32_t capacity() const { return static_cast<uint32_t>(mask_.size()); }
  // Visible slots.
  uint32_t used() const { return used_; }
  // Slots no token was ever placed in (0 once a ring cache has wrapped).
  uint32_t free_slots() const;
  // RoPE position of the next token: the number of tokens committed since
  // the last Clear() (or the restored count), including evicted ones.
  int32_t next_position() const { return next_position_; }
  // True once a ring cache has evicted a token.
  bool wrapped() const { return static_cast<uint64_t>(next_position_) > capacity(); }

  const CacheFullPolicy& policy() const { return policy_; }
  // Sets what happens when the cache is full. InvalidArgument for a ring
  // whose sinks() is not below the capacity; FailedPrecondition when the
  // cache has wrapped under another policy (its slot layout depends on it):
  // Clear() first.
  absl::Status SetPolicy(const CacheFullPolicy& policy);

  // Whether `n` more tokens can be run through the cache, in steps of at
  // most the ring size: ResourceExhausted when they do not fit without a
  // ring, or the positions would exceed INT32_MAX. Changes nothing.
  absl::Status CheckRoomFor(uint64_t n) const;

  // Slots and positions for `n` new tokens; changes nothing. InvalidArgument
  // for n == 0 or, with a ring, n larger than the ring (the tokens of one
  // step would overwrite each other); ResourceExhausted when they do not
  // fit without a ring, or the positions would exceed INT32_MAX.
  absl::StatusOr<SlotPlacement> Reserve(uint32_t n) const;

  // Hides the slots of `placement` that hold older tokens; call before the
  // step that overwrites them runs. Returns how many were evicted.
  // Precondition: `placement` was returned by Reserve() on the current
  // state; violations abort.
  uint32_t Evict(const SlotPlacement& placement);

  // Marks the slots of `placement` visible, holding `tokens` (count ids),
  // and advances next_position(). Call after the step completed.
  // Precondition: `placement` was returned by Reserve() on the current
  // state (Evict() in between is allowed) and tokens.size() ==
  // placement.count; violations abort.
  void Commit(const SlotPlacement& placement, absl::Span<const int32_t> tokens);

  // One byte per slot, 1 = visible to attention.
  absl::Span<const uint8_t> mask() const { return mask_; }
  // Token id held by each slot (-1 for a slot never written).
  absl::Span<const int32_t> slot_tokens() const { return slot_tokens_; }
  // Number of slots that hold (or held) a token: min(next_position(),
  // capacity()). Slots at and beyond it were never written.
  uint32_t written_slots() const;
  // The visible tokens in position order (sinks first, then the ring from
  // the oldest kept token).
  std::vector<int32_t> TokensInContext() const;

  // Frees every slot (mask all 0) and resets the positions; the policy
  // stays.
  void Clear();

  // Drops the tokens at positions [next_position, next_position()): their
  // slots become invisible and free (slot token -1) and next_position()
  // becomes `next_position`, exactly the state before they were
  // committed. Used to roll back tokens proposed by speculative decoding
  // that the model rejected: a later step overwrites their slots. Returns
  // InvalidArgument for a negative next_position or one beyond
  // next_position(); FailedPrecondition once a ring cache has wrapped (the
  // tokens it evicted cannot be brought back). Nothing changes on error.
  absl::Status Truncate(int32_t next_position);

  // Replaces the whole state, e.g. from a saved session: `mask` and
  // `slot_tokens` hold written_slots() = min(next_position, capacity)
  // entries. InvalidArgument when the sizes do not match, a mask byte is
  // not 0/1, a visible slot has a token id < 0, or the policy is invalid;
  // the state is unchanged then.
  absl::Status Restore(const CacheFullPolicy& policy, int32_t next_position,
                       absl::Span<const uint8_t> mask, absl::Span<const int32_t> slot_tokens);

 private:
  void StoreSlotPosition(size_t slot, int32_t position);
  // Aborts unless `placement` continues the current state.
  void CheckPlacement(const SlotPlacement& placement, const char* caller) const;
  static absl::Status ValidatePolicy(const CacheFullPolicy& policy, uint32_t capacity);

  std::vector<uint8_t> owned_mask_;  // storage when the mask is not external
  absl::Span<uint8_t> mask_;
  absl::Span<uint8_t> slot_positions_;  // capacity I32, or empty
  std::vector<int32_t> slot_tokens_;
  CacheFullPolicy policy_;
  uint32_t used_ = 0;
  int32_t next_position_ = 0;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_KV_CACHE_STATE_H_
