// What a sequence does when its fixed-capacity KV cache is full: the one
// policy type of the stack, set on a runtime::Sequence and passed through
// unchanged by framework::Session, the C API and the tools.
#ifndef RUNTIME_CACHE_FULL_POLICY_H_
#define RUNTIME_CACHE_FULL_POLICY_H_

#include <cstdint>

namespace lnpu::runtime {

struct CacheFullPolicy {
  enum class OnFull {
    // Input that does not fit in the free slots is refused
    // (ResourceExhausted); generation ends with FinishReason::kLength. The
    // default.
    kFinish,
    // Endless context: the first `sink_tokens` tokens stay for good
    // ("attention sinks"), and each new token overwrites the oldest other
    // token in a ring of the remaining slots. Evicted tokens are masked out
    // before the step that overwrites them; RoPE positions keep
    // increasing, so the distances between kept tokens stay right.
    // docs/framework.md compares its quality with truncation.
    kRing,
  };
  OnFull on_full = OnFull::kFinish;
  // kRing only: tokens [0, sink_tokens) are never evicted. The ring
  // (capacity - sink_tokens) must hold the largest compiled prefill chunk.
  uint32_t sink_tokens = 4;

  static CacheFullPolicy Ring(uint32_t sink_tokens) { return {OnFull::kRing, sink_tokens}; }
  bool ring() const { return on_full == OnFull::kRing; }
  // The sink slots in effect: sink_tokens under kRing, else 0.
  uint32_t sinks() const { return ring() ? sink_tokens : 0; }

  // Policies that behave alike are equal (sink_tokens does not matter
  // under kFinish).
  friend bool operator==(const CacheFullPolicy& a, const CacheFullPolicy& b) {
    return a.on_full == b.on_full && a.sinks() == b.sinks();
  }
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_CACHE_FULL_POLICY_H_
