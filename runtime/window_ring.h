// Slot bookkeeping of the ring that a model's sliding-window layers keep
// their K/V in (model.fbs KvCache.window_ring_slots).
//
// A sliding-window layer's token at position p attends only the positions
// (p - window, p], so the layer needs the K/V of the last window - 1
// positions before a run, not the whole cache. Its K/V live in a ring of
// slots() >= window slots: position p in slot p % slots(). A run's own
// rows are attended from the graph's staging, and written into the ring
// (by the DMA after the compute) only after every row has read it, so a
// run of any length is correct: of the rows of a run that fall on one
// slot only the last is stored (RunSlot). The ring holds the positions
// [first_held(), next_position()); the device reads the mask (1 = the slot
// holds a held position) and each slot's position, which the window
// compares (ATTENTION with LNPU_ATTENTION_WINDOW).
//
// The slots beyond the window let a cache be cut back (Truncate): the
// cache may continue at position q, i.e. the ring still holds
// [q - window + 1, q), as long as q is at most slots() - window + 1
// positions behind the newest one.
//
// The positions advance with the session's KvCacheState: the owner calls
// Commit() or Fail() after each run, Truncate / Reset with it.
//
// Thread-safety: none; owned by one Sequence at a time.
#ifndef RUNTIME_WINDOW_RING_H_
#define RUNTIME_WINDOW_RING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace lnpu::runtime {

class WindowRing {
 public:
  // A ring of mask.size() slots for a window of `window` positions
  // (0 < window <= mask.size()). `mask` (U8 per slot) and `slot_positions`
  // (I32 per slot, native byte order) are the mapped device memory the
  // attention reads; they must outlive this object. Starts empty.
  WindowRing(uint32_t window, absl::Span<uint8_t> mask, absl::Span<uint8_t> slot_positions);

  WindowRing(const WindowRing&) = delete;
  WindowRing& operator=(const WindowRing&) = delete;

  uint32_t slots() const { return static_cast<uint32_t>(mask_.size()); }
  uint32_t window() const { return window_; }
  int32_t next_position() const { return next_position_; }
  // The oldest position whose K/V the ring holds.
  int32_t first_held() const { return first_held_; }
  // The first position the token at `position` attends besides itself:
  // max(0, position - window + 1).
  int32_t FirstNeeded(int32_t position) const;
  int32_t SlotOf(int32_t position) const {
    return static_cast<int32_t>(static_cast<uint32_t>(position) % slots());
  }

  // The ring slot that row i of a run of `count` tokens starting at
  // next_position() is stored in, or -1 when a later row of the run takes
  // the same slot (or i >= count: padding).
  int32_t RunSlot(uint32_t count, uint32_t i) const;

  // OK when the ring holds every position that the token at `position`
  // (<= next_position()) attends besides itself, i.e. the session may
  // continue there; FailedPrecondition otherwise, naming the missing
  // positions.
  absl::Status CheckContinuesAt(int32_t position) const;

  // A run of `count` tokens at next_position() completed: its last
  // positions are held, the ones it overwrote are not.
  void Commit(uint32_t count);
  // A run of `count` tokens at next_position() failed: its DMA may have
  // overwritten the slots of the positions a completed run would have
  // evicted, so they are no longer held (CheckContinuesAt may then fail).
  void Fail(uint32_t count);
  // Holds [first_held, next_position) after their rows were written (a
  // restored state, a copied prefix, a truncation), or nothing with
  // Reset(0, 0). Precondition: 0 <= first_held <= next_position and
  // next_position - first_held <= slots(); violations abort.
  void Reset(int32_t first_held, int32_t next_position);

 private:
  // Writes the mask and the slot positions of the held positions.
  void Publish();

  const uint32_t window_;
  absl::Span<uint8_t> mask_;
  absl::Span<uint8_t> slot_positions_;
  int32_t first_held_ = 0;
  int32_t next_position_ = 0;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_WINDOW_RING_H_
