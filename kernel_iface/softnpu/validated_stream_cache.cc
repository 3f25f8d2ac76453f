#include "kernel_iface/softnpu/validated_stream_cache.h"

#include <algorithm>
#include <cstring>

namespace lnpu::softnpu {

bool ValidatedStreamCache::Lookup(uint32_t engine, absl::Span<const uint8_t> stream,
                                  absl::Span<const ValidatedBuffer> buffers,
                                  StreamVerdict* verdict) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& entry : entries_) {
    if (entry.engine == engine && entry.stream.size() == stream.size() &&
        entry.buffers.size() == buffers.size() &&
        std::memcmp(entry.stream.data(), stream.data(), stream.size()) == 0 &&
        std::equal(buffers.begin(), buffers.end(), entry.buffers.begin())) {
      entry.last_used = ++clock_;
      verdict->command_count = entry.verdict.command_count;
      verdict->group_sizes.assign(entry.verdict.group_sizes.begin(),
                                  entry.verdict.group_sizes.end());
      ++hits_;
      return true;
    }
  }
  ++misses_;
  return false;
}

void ValidatedStreamCache::Insert(uint32_t engine, absl::Span<const uint8_t> stream,
                                  absl::Span<const ValidatedBuffer> buffers,
                                  uint32_t command_count,
                                  absl::Span<const uint32_t> group_sizes) {
  if (stream.size() > kMaxStreamBytes) return;
  std::lock_guard<std::mutex> lock(mu_);
  Entry* entry = nullptr;
  if (entries_.size() < kEntries) {
    entry = &entries_.emplace_back();
  } else {
    entry = &*std::min_element(entries_.begin(), entries_.end(),
                               [](const Entry& a, const Entry& b) {
                                 return a.last_used < b.last_used;
                               });
  }
  entry->engine = engine;
  entry->stream.assign(stream.begin(), stream.end());
  entry->buffers.assign(buffers.begin(), buffers.end());
  entry->verdict.command_count = command_count;
  entry->verdict.group_sizes.assign(group_sizes.begin(), group_sizes.end());
  entry->last_used = ++clock_;
}

uint64_t ValidatedStreamCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t ValidatedStreamCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace lnpu::softnpu
