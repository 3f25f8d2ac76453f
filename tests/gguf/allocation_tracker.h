#ifndef LNPU_TESTS_GGUF_ALLOCATION_TRACKER_H_
#define LNPU_TESTS_GGUF_ALLOCATION_TRACKER_H_

#include <cstddef>

namespace lnpu::gguf::testing {

// Records the largest single operator-new allocation made (by any thread)
// while an instance is alive. Linking allocation_tracker.cc replaces the
// global operator new/delete of the test executable. At most one instance
// may be alive at a time.
class LargestAllocationTracker {
 public:
  LargestAllocationTracker();
  ~LargestAllocationTracker();
  LargestAllocationTracker(const LargestAllocationTracker&) = delete;
  LargestAllocationTracker& operator=(const LargestAllocationTracker&) = delete;

  // Bytes of the largest allocation since construction.
  size_t largest() const;
};

}  // namespace lnpu::gguf::testing

#endif  // LNPU_TESTS_GGUF_ALLOCATION_TRACKER_H_
