#include "tests/gguf/allocation_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_tracking{false};
std::atomic<size_t> g_largest{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    size_t largest = g_largest.load(std::memory_order_relaxed);
    while (size > largest && !g_largest.compare_exchange_weak(largest, size)) {
    }
  }
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

namespace lnpu::gguf::testing {

LargestAllocationTracker::LargestAllocationTracker() {
  g_largest = 0;
  g_tracking = true;
}
LargestAllocationTracker::~LargestAllocationTracker() { g_tracking = false; }
size_t LargestAllocationTracker::largest() const { return g_largest.load(); }

}  // namespace lnpu::gguf::testing
