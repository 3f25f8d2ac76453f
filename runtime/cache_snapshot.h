// A session's KV cache in host memory (the written slots' K/V rows, mask,
// token ids, positions and policy) and its file format, so that a
// conversation or a shared prefix (e.g. a system prompt) can continue in
// another session or process without being recomputed.
//
// File layout (all integers little-endian):
//   offset size field
//        0    8 magic "LNPUSES1"
//        8    4 version (1)
//       12    4 header_size (80)
//       16   24 model identity: metadata_crc32, weights_crc32, kv_capacity,
//               kv_dtype, kv_blocks, kv_row_bytes (u32 each)
//       40    4 ring (0/1)
//       44    4 sink_slots
//       48    4 next_position (i32)
//       52    4 written_slots
//       56    8 payload_size
//       64    4 payload_crc32 (CRC-32 of the payload, base/crc32.h)
//       68    4 pending_count
//       72    4 reserved (0)
//       76    4 header_crc32 (CRC-32 of header bytes [0, 76))
//   payload: mask U8[written_slots], slot_tokens I32[written_slots],
//            pending_tokens I32[pending_count],
//            kv_rows [kv_blocks][written_slots][kv_row_bytes]
//   nothing follows.
#ifndef RUNTIME_CACHE_SNAPSHOT_H_
#define RUNTIME_CACHE_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/kv_cache_state.h"
#include "runtime/model_info.h"

namespace lnpu::runtime {

struct CacheSnapshot {
  ModelIdentity model;  // the model (and cache geometry) it was saved from
  CacheFullPolicy policy;
  int32_t next_position = 0;
  // One entry per written slot: min(next_position, kv_capacity).
  std::vector<uint8_t> mask;
  std::vector<int32_t> slot_tokens;
  // [model.kv_blocks][written slots][model.kv_row_bytes]
  std::vector<uint8_t> kv_rows;
  // Tokens of the conversation that were not yet run through the model
  // (e.g. the last generated one). The runtime neither fills nor reads
  // them; the framework carries them through files.
  std::vector<int32_t> pending_tokens;

  uint32_t written_slots() const { return static_cast<uint32_t>(mask.size()); }
  // Host memory the state occupies.
  uint64_t bytes() const {
    return mask.size() + (slot_tokens.size() + pending_tokens.size()) * sizeof(int32_t) +
           kv_rows.size();
  }
};

// Writes `state` to `path` atomically (base/atomic_file.h). InvalidArgument
// when `path` exists and is not a regular file or is one of `inputs` (e.g.
// the model's artifact, which must never be replaced by a session); the
// errno's status, naming the path, on I/O errors.
absl::Status WriteCacheSnapshotFile(const CacheSnapshot& state, const std::string& path,
                                   absl::Span<const std::string> inputs = {});

// Reads a file written by WriteCacheSnapshotFile. The errno's status (NotFound,
// PermissionDenied, ...) for I/O; InvalidArgument for a directory or other
// non-regular file, and for a file that is not a session file, truncated, or
// corrupt (CRC mismatch), naming the path and field;
// FailedPrecondition for an unsupported version. Whether the state fits a
// model is checked when it is restored (Sequence::RestoreState).
absl::StatusOr<CacheSnapshot> ReadCacheSnapshotFile(const std::string& path);

}  // namespace lnpu::runtime

#endif  // RUNTIME_CACHE_SNAPSHOT_H_
