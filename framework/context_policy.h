// What a session does when its fixed-capacity KV cache is full.
#ifndef FRAMEWORK_CONTEXT_POLICY_H_
#define FRAMEWORK_CONTEXT_POLICY_H_

#include <cstdint>

namespace lnpu::framework {

struct ContextPolicy {
  enum class OnFull {
    // Generation ends with FinishReason::kLength; input that does not fit
    // is refused (ResourceExhausted). The default.
    kFinish,
    // Endless context: the first `sink_tokens` tokens stay ("attention
    // sinks"), and each new token overwrites the oldest other token in a
    // ring of the remaining slots. Evicted tokens are masked out before the
    // step that overwrites them; RoPE positions keep increasing, so the
    // distances between kept tokens stay right. docs/framework.md compares
    // its quality with truncation.
    kRing,
  };
  OnFull on_full = OnFull::kFinish;
  // kRing only; the ring (capacity - sink_tokens) must hold the largest
  // compiled prefill chunk.
  uint32_t sink_tokens = 4;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_CONTEXT_POLICY_H_
