#include "runtime/cache_snapshot.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/crc32.h"
#include "base/file_io.h"
#include "base/status_macros.h"

namespace lnpu::runtime {
namespace {

constexpr char kMagic[8] = {'L', 'N', 'P', 'U', 'S', 'E', 'S', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 80;
constexpr size_t kHeaderCrcOffset = 76;

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

absl::Status IoError(const std::string& what, const std::string& path, int err) {
  return ErrnoError(err, what, path);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Bytes of the payload, or false when they overflow 64 bits.
bool PayloadSize(uint64_t written, uint64_t pending, uint64_t blocks, uint64_t row_bytes,
                 uint64_t* size) {
  uint64_t rows = 0;
  return !__builtin_mul_overflow(blocks, written, &rows) &&
         !__builtin_mul_overflow(rows, row_bytes, &rows) &&
         !__builtin_add_overflow(rows, written * (1 + sizeof(int32_t)) + pending * 4, size);
}

// Slot tokens then pending tokens, 4 little-endian bytes each.
std::vector<uint8_t> EncodeTokens(const std::vector<int32_t>& slot_tokens,
                                  const std::vector<int32_t>& pending_tokens) {
  std::vector<uint8_t> bytes((slot_tokens.size() + pending_tokens.size()) * sizeof(int32_t));
  uint8_t* out = bytes.data();
  for (const std::vector<int32_t>* list : {&slot_tokens, &pending_tokens}) {
    for (int32_t token : *list) {
      PutU32(out, static_cast<uint32_t>(token));
      out += sizeof(int32_t);
    }
  }
  return bytes;
}

}  // namespace

absl::Status WriteCacheSnapshotFile(const CacheSnapshot& state, const std::string& path,
                                   absl::Span<const std::string> inputs) {
  const uint64_t written = state.written_slots();
  uint8_t header[kHeaderSize] = {};
  std::memcpy(header, kMagic, sizeof(kMagic));
  PutU32(header + 8, kVersion);
  PutU32(header + 12, kHeaderSize);
  const ModelIdentity& id = state.model;
  PutU32(header + 16, id.metadata_crc32);
  PutU32(header + 20, id.weights_crc32);
  PutU32(header + 24, id.kv_capacity);
  PutU32(header + 28, id.kv_dtype);
  PutU32(header + 32, id.kv_blocks);
  PutU32(header + 36, id.kv_row_bytes);
  PutU32(header + 40, state.policy.ring() ? 1 : 0);
  PutU32(header + 44, state.policy.sinks());
  PutU32(header + 48, static_cast<uint32_t>(state.next_position));
  PutU32(header + 52, static_cast<uint32_t>(written));
  PutU64(header + 56, state.bytes());
  PutU32(header + 68, static_cast<uint32_t>(state.pending_tokens.size()));

  // The token ids as little-endian bytes, then the CRC over the payload in
  // file order.
  std::vector<uint8_t> tokens =
      EncodeTokens(state.slot_tokens, state.pending_tokens);
  uint32_t crc = Crc32(state.mask);
  crc = Crc32(tokens, crc);
  crc = Crc32(state.kv_rows, crc);
  PutU32(header + 64, crc);
  PutU32(header + kHeaderCrcOffset,
         Crc32(absl::MakeConstSpan(header, kHeaderCrcOffset)));

  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                        AtomicFileWriter::Create(path, "session file", inputs));
  LNPU_RETURN_IF_ERROR(file->Append(absl::MakeConstSpan(header, kHeaderSize)));
  for (const std::vector<uint8_t>* part :
       std::initializer_list<const std::vector<uint8_t>*>{&state.mask, &tokens, &state.kv_rows}) {
    LNPU_RETURN_IF_ERROR(file->Append(*part));
  }
  return file->Commit();
}

absl::StatusOr<CacheSnapshot> ReadCacheSnapshotFile(const std::string& path) {
  LNPU_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, "session file"));
  File file(::fdopen(fd, "rb"));
  if (!file) {
    const int err = errno;
    ::close(fd);
    return IoError("cannot open session file", path, err);
  }
  auto corrupt = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("session file '", path, "': ", what,
                     "; save the session again (npu-llm --save-session)"));
  };

  uint8_t header[kHeaderSize];
  if (std::fread(header, 1, kHeaderSize, file.get()) != kHeaderSize) {
    return corrupt(absl::StrCat("shorter than its ", kHeaderSize, "-byte header"));
  }
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    return corrupt("not a session file (bad magic)");
  }
  if (GetU32(header + kHeaderCrcOffset) !=
      Crc32(absl::MakeConstSpan(header, kHeaderCrcOffset))) {
    return corrupt("header checksum mismatch (corrupt header)");
  }
  if (GetU32(header + 8) != kVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "session file '", path, "' has format version ", GetU32(header + 8),
        "; this build reads version ", kVersion, ": save the session again"));
  }
  if (GetU32(header + 12) != kHeaderSize) return corrupt("bad header size");

  CacheSnapshot state;
  ModelIdentity& id = state.model;
  id.metadata_crc32 = GetU32(header + 16);
  id.weights_crc32 = GetU32(header + 20);
  id.kv_capacity = GetU32(header + 24);
  id.kv_dtype = GetU32(header + 28);
  id.kv_blocks = GetU32(header + 32);
  id.kv_row_bytes = GetU32(header + 36);
  const uint32_t ring = GetU32(header + 40);
  if (ring > 1) return corrupt("ring flag is neither 0 nor 1");
  state.policy.on_full =
      ring == 1 ? CacheFullPolicy::OnFull::kRing : CacheFullPolicy::OnFull::kFinish;
  state.policy.sink_tokens = GetU32(header + 44);
  const uint32_t next_position = GetU32(header + 48);
  if (next_position > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
    return corrupt("next position out of range");
  }
  state.next_position = static_cast<int32_t>(next_position);
  const uint64_t written = GetU32(header + 52);
  if (written != std::min<uint64_t>(next_position, id.kv_capacity)) {
    return corrupt(absl::StrCat(written, " written slots do not match next position ",
                                next_position, " and capacity ", id.kv_capacity));
  }
  const uint64_t payload_size = GetU64(header + 56);
  const uint64_t pending = GetU32(header + 68);
  uint64_t described_size = 0;
  if (!PayloadSize(written, pending, id.kv_blocks, id.kv_row_bytes, &described_size) ||
      payload_size != described_size) {
    return corrupt("payload size does not match the slot count and row size");
  }
  const uint32_t expected_crc = GetU32(header + 64);

  // The real file size bounds the allocation before anything is read.
  if (std::fseek(file.get(), 0, SEEK_END) != 0) return IoError("cannot seek", path, errno);
  const long file_size = std::ftell(file.get());
  if (file_size < 0) return IoError("cannot size", path, errno);
  if (static_cast<uint64_t>(file_size) != kHeaderSize + payload_size) {
    return corrupt(absl::StrCat("is ", file_size, " bytes but its header describes ",
                                kHeaderSize + payload_size, " (truncated or extended)"));
  }
  if (std::fseek(file.get(), static_cast<long>(kHeaderSize), SEEK_SET) != 0) {
    return IoError("cannot seek", path, errno);
  }
  state.mask.resize(written);
  std::vector<uint8_t> tokens((written + pending) * sizeof(int32_t));
  state.kv_rows.resize(payload_size - written - tokens.size());
  for (std::vector<uint8_t>* part :
       std::initializer_list<std::vector<uint8_t>*>{&state.mask, &tokens, &state.kv_rows}) {
    if (std::fread(part->data(), 1, part->size(), file.get()) != part->size()) {
      return IoError("cannot read session file", path, std::ferror(file.get()) ? errno : EIO);
    }
  }
  uint32_t crc = Crc32(state.mask);
  crc = Crc32(tokens, crc);
  crc = Crc32(state.kv_rows, crc);
  if (crc != expected_crc) return corrupt("payload checksum mismatch (corrupt data)");
  state.slot_tokens.resize(written);
  for (size_t i = 0; i < written; ++i) {
    state.slot_tokens[i] = static_cast<int32_t>(GetU32(tokens.data() + 4 * i));
  }
  state.pending_tokens.resize(pending);
  for (size_t i = 0; i < pending; ++i) {
    state.pending_tokens[i] = static_cast<int32_t>(GetU32(tokens.data() + 4 * (written + i)));
  }
  return state;
}

}  // namespace lnpu::runtime
