// ValidatedStreamCache: the verdicts of command streams a file submitted
// before, so that a runtime replaying a recorded graph (the same stream
// over the same buffers, every decode step) is not validated command by
// command on every SUBMIT.
//
// What Job::LoadCommands concludes about a stream (accepted, how many
// commands, which of them form groups) depends only on the engine, the
// stream's bytes and, for each buffer the job lists, its device address,
// size and whether it is read-only. An entry holds all of these; a lookup
// hits only if every one of them is equal, compared in full (the bytes
// with memcmp), so a hit gives exactly the verdict validation would. The
// device never reuses an address (AddressSpace), so the buffers' addresses
// name them; no buffer is held alive by the cache. Rejected streams are not
// cached.
//
// Bounded: kEntries entries, least recently used replaced, streams over
// kMaxStreamBytes never cached. Replacing an entry reuses its memory, so a
// steady run of submits does not allocate.
//
// Thread-safety: all methods may be called concurrently (one mutex).
#ifndef KERNEL_IFACE_SOFTNPU_VALIDATED_STREAM_CACHE_H_
#define KERNEL_IFACE_SOFTNPU_VALIDATED_STREAM_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/types/span.h"

namespace lnpu::softnpu {

// The facts about one buffer of a job that validation reads.
struct ValidatedBuffer {
  uint64_t device_addr = 0;
  uint64_t size = 0;
  bool read_only = false;
  bool operator==(const ValidatedBuffer&) const = default;
};

// LoadCommands' conclusion about an accepted stream.
struct StreamVerdict {
  uint32_t command_count = 0;
  std::vector<uint32_t> group_sizes;  // per command, Job::group_size()
};

class ValidatedStreamCache {
 public:
  static constexpr size_t kEntries = 16;
  static constexpr size_t kMaxStreamBytes = size_t{256} << 10;

  // If a stream with these engine, bytes and buffers (in the job's order:
  // sorted by device address, no duplicates) was accepted before, copies
  // its verdict into *verdict (reusing its memory) and returns true.
  bool Lookup(uint32_t engine, absl::Span<const uint8_t> stream,
              absl::Span<const ValidatedBuffer> buffers, StreamVerdict* verdict);

  // Records the verdict of a stream that validation accepted.
  void Insert(uint32_t engine, absl::Span<const uint8_t> stream,
              absl::Span<const ValidatedBuffer> buffers, uint32_t command_count,
              absl::Span<const uint32_t> group_sizes);

  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    uint32_t engine = 0;
    std::vector<uint8_t> stream;
    std::vector<ValidatedBuffer> buffers;
    StreamVerdict verdict;
    uint64_t last_used = 0;
  };

  mutable std::mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lnpu::softnpu

#endif  // KERNEL_IFACE_SOFTNPU_VALIDATED_STREAM_CACHE_H_
