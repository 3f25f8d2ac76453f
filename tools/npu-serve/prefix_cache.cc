#include "tools/npu-serve/prefix_cache.h"

#include <algorithm>
#include <utility>

namespace lnpu::serve {
namespace {

uint32_t CommonPrefix(absl::Span<const int32_t> a, absl::Span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<uint32_t>(i);
}

}  // namespace

runtime::CacheSnapshot PrefixOfState(const runtime::CacheSnapshot& state, uint32_t tokens) {
  runtime::CacheSnapshot prefix;
  prefix.model = state.model;
  prefix.policy = state.policy;
  prefix.next_position = static_cast<int32_t>(tokens);
  prefix.mask.assign(state.mask.begin(), state.mask.begin() + tokens);
  prefix.slot_tokens.assign(state.slot_tokens.begin(), state.slot_tokens.begin() + tokens);
  // kv_rows is [kv_blocks][written slots][kv_row_bytes].
  const size_t row = state.model.kv_row_bytes;
  const size_t written = state.written_slots();
  prefix.kv_rows.reserve(size_t{state.model.kv_blocks} * tokens * row);
  for (uint32_t block = 0; block < state.model.kv_blocks; ++block) {
    const auto begin = state.kv_rows.begin() + static_cast<ptrdiff_t>(block * written * row);
    prefix.kv_rows.insert(prefix.kv_rows.end(), begin,
                          begin + static_cast<ptrdiff_t>(size_t{tokens} * row));
  }
  return prefix;
}

PrefixCache::PrefixCache(size_t max_entries, uint64_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

void PrefixCache::Insert(runtime::CacheSnapshot state) {
  state.pending_tokens.clear();
  if (max_entries_ == 0 || state.written_slots() == 0 || state.bytes() > max_bytes_ ||
      state.next_position != static_cast<int32_t>(state.written_slots())) {
    return;  // disabled, empty, too large, or wrapped
  }
  // Entries the new one extends serve no lookup it does not serve better.
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->slot_tokens.size() <= state.slot_tokens.size() &&
        CommonPrefix(it->slot_tokens, state.slot_tokens) == it->slot_tokens.size()) {
      bytes_ -= it->bytes();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  bytes_ += state.bytes();
  entries_.push_front(std::move(state));
  EvictToFit();
}

void PrefixCache::EvictToFit() {
  while (!entries_.empty() && (entries_.size() > max_entries_ || bytes_ > max_bytes_)) {
    bytes_ -= entries_.back().bytes();
    entries_.pop_back();
  }
}

std::optional<runtime::CacheSnapshot> PrefixCache::Lookup(absl::Span<const int32_t> prompt,
                                                         uint32_t max_tokens) {
  auto best = entries_.end();
  uint32_t best_length = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const uint32_t length = std::min(CommonPrefix(it->slot_tokens, prompt), max_tokens);
    if (length > best_length) {
      best = it;
      best_length = length;
    }
  }
  if (best == entries_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  entries_.splice(entries_.begin(), entries_, best);
  return PrefixOfState(*best, best_length);
}

}  // namespace lnpu::serve
