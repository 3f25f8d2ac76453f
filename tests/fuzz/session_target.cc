// The session file reader's fuzz target (parser_targets.h).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/format/crc32.h"
#include "runtime/session_state.h"
#include "tests/fuzz/memory_file.h"
#include "tests/fuzz/parser_targets.h"

namespace lnpu::fuzz {
namespace {

// Offsets in the session file header (runtime/session_state.h).
constexpr size_t kHeaderSize = 80;
constexpr size_t kPayloadCrcOffset = 64;
constexpr size_t kHeaderCrcOffset = 76;

void StoreU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

bool SameState(const runtime::SessionState& a, const runtime::SessionState& b) {
  return a.model == b.model && a.policy == b.policy &&
         a.next_position == b.next_position && a.mask == b.mask &&
         a.slot_tokens == b.slot_tokens && a.kv_rows == b.kv_rows &&
         a.pending_tokens == b.pending_tokens;
}

void CheckState(const runtime::SessionState& state, ParserRun& run) {
  const uint64_t written = state.written_slots();
  if (written != std::min<uint64_t>(
                     static_cast<uint64_t>(state.next_position),
                     state.model.kv_capacity)) {
    run.Fail("written slots are not min(next position, capacity)");
  }
  if (state.slot_tokens.size() != written) {
    run.Fail("not one token per written slot");
  }
  if (state.kv_rows.size() !=
      written * state.model.kv_blocks * state.model.kv_row_bytes) {
    run.Fail("cache rows are not kv_blocks * written * kv_row_bytes bytes");
  }
}

}  // namespace

ParserRun RunSessionTarget(absl::Span<const uint8_t> input) {
  static MemoryFile* const file = new MemoryFile();
  ParserRun run;
  const bool repaired = !input.empty() && input[0] % 2 == 1;
  if (!input.empty()) input.remove_prefix(1);
  std::vector<uint8_t> bytes(input.begin(), input.end());
  if (repaired && bytes.size() >= kHeaderSize) {
    StoreU32(bytes.data() + kPayloadCrcOffset,
             artifact::Crc32(absl::MakeConstSpan(bytes).subspan(kHeaderSize)));
    StoreU32(bytes.data() + kHeaderCrcOffset,
             artifact::Crc32(absl::MakeConstSpan(bytes).first(kHeaderCrcOffset)));
  }
  if (absl::Status s = file->Assign(bytes); !s.ok()) {
    run.Fail(s.ToString());
    return run;
  }
  const absl::StatusOr<runtime::SessionState> state =
      runtime::ReadSessionStateFile(file->path());
  if (!state.ok()) {
    run.ExpectErrorNamesFile(state.status(), file->path());
    return run;
  }
  run.accepted = true;
  CheckState(*state, run);

  const std::string copy = ScratchDirectory() + "/session";
  if (absl::Status s = runtime::WriteSessionStateFile(*state, copy); !s.ok()) {
    run.Fail(absl::StrCat("a session read cannot be written: ", s.ToString()));
    return run;
  }
  std::error_code error;
  if (std::filesystem::file_size(copy, error) != bytes.size()) {
    run.Fail("the session written again differs in size from the file read");
  }
  const absl::StatusOr<runtime::SessionState> again =
      runtime::ReadSessionStateFile(copy);
  if (!again.ok()) {
    run.Fail(absl::StrCat("a session written again does not read: ",
                          again.status().ToString()));
  } else if (!SameState(*state, *again)) {
    run.Fail("a session written again reads back different");
  }
  std::filesystem::remove(copy, error);
  return run;
}

}  // namespace lnpu::fuzz
