#include "runtime/kv_cache_state.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace lnpu::runtime {

int32_t SlotOf(int32_t position, uint32_t capacity, const CacheFullPolicy& policy) {
  const uint32_t p = static_cast<uint32_t>(position);
  if (p < capacity) return position;
  if (!policy.ring()) return -1;
  const uint32_t ring = capacity - policy.sinks();
  return static_cast<int32_t>(policy.sinks() + (p - policy.sinks()) % ring);
}

int32_t SlotPlacement::slot(uint32_t i) const {
  return SlotOf(position(i), capacity, policy);
}

KvCacheState::KvCacheState(uint32_t capacity)
    : owned_mask_(capacity, 0),
      mask_(absl::MakeSpan(owned_mask_)),
      slot_tokens_(capacity, -1) {}

KvCacheState::KvCacheState(absl::Span<uint8_t> mask_storage,
                           absl::Span<uint8_t> slot_position_storage)
    : mask_(mask_storage),
      slot_positions_(slot_position_storage),
      slot_tokens_(mask_storage.size(), -1) {
  if (!slot_positions_.empty() && slot_positions_.size() != mask_.size() * sizeof(int32_t)) {
    std::fprintf(stderr, "lnpu runtime: KvCacheState with %zu mask bytes and %zu slot position "
                 "bytes (expected 4 per slot)\n", mask_.size(), slot_positions_.size());
    std::abort();
  }
  Clear();
}

void KvCacheState::StoreSlotPosition(size_t slot, int32_t position) {
  if (slot_positions_.empty()) return;
  std::memcpy(slot_positions_.data() + slot * sizeof(int32_t), &position, sizeof(position));
}

uint32_t KvCacheState::free_slots() const { return capacity() - written_slots(); }

uint32_t KvCacheState::written_slots() const {
  return static_cast<uint32_t>(std::min<uint64_t>(static_cast<uint64_t>(next_position_),
                                                  capacity()));
}

absl::Status KvCacheState::ValidatePolicy(const CacheFullPolicy& policy, uint32_t capacity) {
  if (policy.ring() && policy.sinks() >= capacity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ring policy with ", policy.sinks(), " sink slots leaves no ring in a cache of ",
        capacity, " slots: use fewer sink slots than the capacity"));
  }
  return absl::OkStatus();
}

absl::Status KvCacheState::SetPolicy(const CacheFullPolicy& policy) {
  LNPU_RETURN_IF_ERROR(ValidatePolicy(policy, capacity()));
  if (wrapped() && !(policy == policy_)) {
    return absl::FailedPreconditionError(
        "the cache has wrapped around its ring, whose slot layout depends on the policy: "
        "clear (reset) the session before changing the policy");
  }
  policy_ = policy;
  return absl::OkStatus();
}

absl::Status KvCacheState::CheckRoomFor(uint64_t n) const {
  if (!policy_.ring() && n > free_slots()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "KV cache full: ", written_slots(), " of ", capacity(), " slots used, ", n,
        " more requested; start over with Reset() or a new session, enable the ring "
        "policy, or recompile the model with a larger max_prompt_len/min_response_len"));
  }
  if (static_cast<uint64_t>(next_position_) + n >
      static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "RoPE positions exhausted: ", next_position_, " tokens so far, ", n,
        " more requested; start over with Reset() or a new session"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SlotPlacement> KvCacheState::Reserve(uint32_t n) const {
  if (n == 0) {
    return absl::InvalidArgumentError(
        "KV cache reservation of 0 slots: request at least one token");
  }
  if (policy_.ring() && n > capacity() - policy_.sinks()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a step of ", n, " tokens does not fit in the ring of ",
        capacity() - policy_.sinks(), " slots (capacity ", capacity(), " minus ",
        policy_.sinks(), " sink slots): run fewer tokens per step or use fewer sink slots"));
  }
  LNPU_RETURN_IF_ERROR(CheckRoomFor(n));
  SlotPlacement placement;
  placement.first_position = next_position_;
  placement.count = n;
  placement.capacity = capacity();
  placement.policy = policy_;
  return placement;
}

void KvCacheState::CheckPlacement(const SlotPlacement& placement, const char* caller) const {
  const bool fits = policy_.ring() ? placement.count <= capacity() - policy_.sinks()
                                 : placement.count <= free_slots();
  if (placement.first_position != next_position_ || placement.capacity != capacity() ||
      !(placement.policy == policy_) || placement.count == 0 || !fits) {
    std::fprintf(stderr,
                 "lnpu runtime: KvCacheState::%s of positions [%d, +%u) that were not "
                 "reserved on the current state (next position %d, %u of %u slots used)\n",
                 caller, placement.first_position, placement.count, next_position_, used_,
                 capacity());
    std::abort();
  }
}

uint32_t KvCacheState::Evict(const SlotPlacement& placement) {
  CheckPlacement(placement, "Evict");
  uint32_t evicted = 0;
  for (uint32_t i = 0; i < placement.count; ++i) {
    uint8_t& visible = mask_[static_cast<size_t>(placement.slot(i))];
    if (visible != 0) {
      visible = 0;
      ++evicted;
    }
  }
  used_ -= evicted;
  return evicted;
}

void KvCacheState::Commit(const SlotPlacement& placement, absl::Span<const int32_t> tokens) {
  CheckPlacement(placement, "Commit");
  if (tokens.size() != placement.count) {
    std::fprintf(stderr, "lnpu runtime: KvCacheState::Commit of %u slots with %zu tokens\n",
                 placement.count, tokens.size());
    std::abort();
  }
  for (uint32_t i = 0; i < placement.count; ++i) {
    const size_t slot = static_cast<size_t>(placement.slot(i));
    if (mask_[slot] == 0) ++used_;
    mask_[slot] = 1;
    slot_tokens_[slot] = tokens[i];
    StoreSlotPosition(slot, placement.position(i));
  }
  next_position_ += static_cast<int32_t>(placement.count);
}

std::vector<int32_t> KvCacheState::TokensInContext() const {
  std::vector<int32_t> tokens;
  tokens.reserve(used_);
  const int32_t first_kept =
      wrapped() ? next_position_ - static_cast<int32_t>(capacity() - policy_.sinks())
                : static_cast<int32_t>(policy_.sinks());
  for (int32_t p = 0; p < next_position_; ++p) {
    if (p >= static_cast<int32_t>(policy_.sinks()) && p < first_kept) p = first_kept;
    const size_t slot = static_cast<size_t>(SlotOf(p, capacity(), policy_));
    if (mask_[slot] != 0) tokens.push_back(slot_tokens_[slot]);
  }
  return tokens;
}

void KvCacheState::Clear() {
  if (!mask_.empty()) std::memset(mask_.data(), 0, mask_.size());
  if (!slot_positions_.empty()) std::memset(slot_positions_.data(), 0, slot_positions_.size());
  std::fill(slot_tokens_.begin(), slot_tokens_.end(), -1);
  used_ = 0;
  next_position_ = 0;
}

absl::Status KvCacheState::Truncate(int32_t next_position) {
  if (next_position < 0 || next_position > next_position_) {
    return absl::InvalidArgumentError(absl::StrCat("cannot truncate the cache to ", next_position,
                                                   " tokens: it holds ", next_position_,
                                                   "; give a count in [0, ", next_position_, "]"));
  }
  if (wrapped()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot truncate the cache after its ring has wrapped (", next_position_, " tokens in ",
        capacity(), " slots): the tokens it evicted cannot be brought back"));
  }
  // Not wrapped: position p is in slot p.
  for (int32_t p = next_position; p < next_position_; ++p) {
    uint8_t& visible = mask_[static_cast<size_t>(p)];
    used_ -= visible;
    visible = 0;
    slot_tokens_[static_cast<size_t>(p)] = -1;
  }
  next_position_ = next_position;
  return absl::OkStatus();
}

absl::Status KvCacheState::Restore(const CacheFullPolicy& policy, int32_t next_position,
                                   absl::Span<const uint8_t> mask,
                                   absl::Span<const int32_t> slot_tokens) {
  LNPU_RETURN_IF_ERROR(ValidatePolicy(policy, capacity()));
  if (next_position < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("restored next position ", next_position, " is negative"));
  }
  const uint64_t written = std::min<uint64_t>(static_cast<uint64_t>(next_position), capacity());
  if (static_cast<uint64_t>(next_position) > capacity() && !policy.ring()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "restored state has ", next_position, " positions but no ring in a cache of ",
        capacity(), " slots"));
  }
  if (mask.size() != written || slot_tokens.size() != written) {
    return absl::InvalidArgumentError(absl::StrCat(
        "restored state has ", mask.size(), " mask bytes and ", slot_tokens.size(),
        " slot tokens; expected ", written, " of each"));
  }
  uint32_t used = 0;
  for (size_t i = 0; i < written; ++i) {
    if (mask[i] > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("restored mask byte ", i, " is ", mask[i], ", not 0 or 1"));
    }
    if (mask[i] == 1 && slot_tokens[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("restored visible slot ", i, " has token id ", slot_tokens[i]));
    }
    used += mask[i];
  }
  Clear();
  policy_ = policy;
  std::copy(mask.begin(), mask.end(), mask_.begin());
  std::copy(slot_tokens.begin(), slot_tokens.end(), slot_tokens_.begin());
  used_ = used;
  next_position_ = next_position;
  // The slots hold the sinks' positions and the last ring-size positions
  // (without a ring: every position).
  const int32_t sinks = static_cast<int32_t>(std::min<uint32_t>(policy_.sinks(), capacity()));
  const int32_t ring = static_cast<int32_t>(capacity()) - sinks;
  for (int32_t p = 0; p < std::min(next_position, sinks); ++p) {
    StoreSlotPosition(static_cast<size_t>(SlotOf(p, capacity(), policy_)), p);
  }
  for (int32_t p = std::max(sinks, next_position - ring); p < next_position; ++p) {
    StoreSlotPosition(static_cast<size_t>(SlotOf(p, capacity(), policy_)), p);
  }
  return absl::OkStatus();
}

}  // namespace lnpu::runtime
