// A bounded cache of conversation prefixes for reuse across requests: the
// KV cache of finished requests in host memory (runtime::CacheSnapshot),
// looked up by the longest token-exact common prefix with a new prompt, so
// that a chat client resending the whole conversation prefills only the
// new turn.
//
// Bounded by entry count and bytes; the least recently used entries are
// evicted first. An entry whose tokens are a prefix of a newer entry's is
// dropped (the newer one serves the same lookups).
//
// Thread-safety: not thread-safe (the scheduler's thread owns it).
#ifndef TOOLS_NPU_SERVE_PREFIX_CACHE_H_
#define TOOLS_NPU_SERVE_PREFIX_CACHE_H_

#include <cstdint>
#include <list>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "runtime/cache_snapshot.h"

namespace lnpu::serve {

class PrefixCache {
 public:
  // Holds at most `max_entries` entries and `max_bytes` of states; 0 of
  // either disables the cache.
  PrefixCache(size_t max_entries, uint64_t max_bytes);

  // Stores `state` (a conversation that has not wrapped its cache; pending
  // tokens are dropped: only tokens run through the model are reusable).
  // A state larger than max_bytes is not stored.
  void Insert(runtime::CacheSnapshot state);

  // The state of the first `tokens` tokens of the entry sharing the longest
  // common prefix with `prompt`, at most `max_tokens` long (a prompt needs
  // one token of its own to run), most recently used first among equals;
  // nullopt when no entry shares a token.
  std::optional<runtime::CacheSnapshot> Lookup(absl::Span<const int32_t> prompt,
                                              uint32_t max_tokens);

  size_t entries() const { return entries_.size(); }
  uint64_t bytes() const { return bytes_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  void EvictToFit();

  const size_t max_entries_;
  const uint64_t max_bytes_;
  std::list<runtime::CacheSnapshot> entries_;  // most recently used first
  uint64_t bytes_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

// The first `tokens` (<= state.written_slots()) positions of a state that
// has not wrapped, without its pending tokens.
runtime::CacheSnapshot PrefixOfState(const runtime::CacheSnapshot& state, uint32_t tokens);

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_PREFIX_CACHE_H_
