#include "runtime/window_ring.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace lnpu::runtime {

WindowRing::WindowRing(uint32_t window, absl::Span<uint8_t> mask,
                       absl::Span<uint8_t> slot_positions)
    : window_(window), mask_(mask), slot_positions_(slot_positions) {
  if (window == 0 || window > mask.size() ||
      slot_positions.size() != mask.size() * sizeof(int32_t)) {
    std::fprintf(stderr,
                 "lnpu runtime: WindowRing of %zu slots (%zu position bytes) for a window of %u\n",
                 mask.size(), slot_positions.size(), window);
    std::abort();
  }
  Reset(0, 0);
}

int32_t WindowRing::FirstNeeded(int32_t position) const {
  return std::max<int32_t>(0, position - static_cast<int32_t>(window_) + 1);
}

int32_t WindowRing::RunSlot(uint32_t count, uint32_t i) const {
  if (i >= count || count - i > slots()) return -1;
  return SlotOf(next_position_ + static_cast<int32_t>(i));
}

absl::Status WindowRing::CheckContinuesAt(int32_t position) const {
  const int32_t needed = FirstNeeded(position);
  if (position <= next_position_ && first_held_ <= needed) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the sliding-window layers' ring of ", slots(), " slots holds positions [", first_held_, ", ",
      next_position_, "), but continuing at position ", position, " needs [", needed, ", ",
      position, "): a cache can be cut back by at most ", slots() - window_ + 1,
      " positions (recompile with a larger --verify-rows for more), and a failed step loses "
      "the window: reset the session or restore a saved state"));
}

void WindowRing::Commit(uint32_t count) {
  next_position_ += static_cast<int32_t>(count);
  first_held_ = std::max(first_held_, next_position_ - static_cast<int32_t>(slots()));
  Publish();
}

void WindowRing::Fail(uint32_t count) {
  const int32_t overwritten_until = next_position_ +
                                    static_cast<int32_t>(std::min(count, slots())) -
                                    static_cast<int32_t>(slots());
  first_held_ = std::min(next_position_, std::max(first_held_, overwritten_until));
  Publish();
}

void WindowRing::Reset(int32_t first_held, int32_t next_position) {
  if (first_held < 0 || first_held > next_position ||
      static_cast<int64_t>(next_position) - first_held > static_cast<int64_t>(slots())) {
    std::fprintf(stderr, "lnpu runtime: WindowRing::Reset to positions [%d, %d) in %u slots\n",
                 first_held, next_position, slots());
    std::abort();
  }
  first_held_ = first_held;
  next_position_ = next_position;
  Publish();
}

void WindowRing::Publish() {
  std::memset(mask_.data(), 0, mask_.size());
  for (int32_t p = first_held_; p < next_position_; ++p) {
    const size_t slot = static_cast<size_t>(SlotOf(p));
    mask_[slot] = 1;
    std::memcpy(slot_positions_.data() + slot * sizeof(int32_t), &p, sizeof(p));
  }
}

}  // namespace lnpu::runtime
