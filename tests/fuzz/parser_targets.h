// Fuzz targets for the parsers of untrusted input: the GGUF reader, the
// artifact loader and verifier, session files, the two tokenizers and chat
// templates. Each target runs one input through its parser and checks
// properties that must hold for every input, beyond not crashing (listed
// at each target below); parser_fuzzer.cc runs one under libFuzzer,
// parser_corpus_test.cc replays the committed corpora in every build.
//
// Input encodings: a GGUF input is the file. The first byte of the
// artifact and session inputs picks a mode (odd: "repaired", the harness
// recomputes checksums and layout fields so that mutations reach the
// checks behind them; even: the rest is the file exactly). The tokenizer
// and chat template encodings are described at their targets.
//
// Thread-safety: a target may run on one thread at a time (they share a
// memory file and, for the artifact target, a software NPU).
#ifndef TESTS_FUZZ_PARSER_TARGETS_H_
#define TESTS_FUZZ_PARSER_TARGETS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace lnpu::fuzz {

// What one input did.
struct ParserRun {
  // The parser accepted the input (its main call returned OK).
  bool accepted = false;
  // Empty, or the first property the input broke.
  std::string violation;

  // Records `what` unless a violation is recorded already.
  void Fail(std::string what) {
    if (violation.empty()) violation = std::move(what);
  }
  // Records a violation unless `error` names the file at `path`: every
  // parser's error says which file it rejects.
  void ExpectErrorNamesFile(const absl::Status& error, std::string_view path) {
    if (error.message().find(absl::string_view(path.data(), path.size())) ==
        absl::string_view::npos) {
      Fail(absl::StrCat("the error does not name the file: ", error.ToString()));
    }
  }
};

using ParserTargetFunction = ParserRun (*)(absl::Span<const uint8_t> input);

struct ParserTarget {
  std::string_view name;  // also the folder of its corpus: corpus/<name>/
  ParserTargetFunction run;
};

// GGUF reader (GgufFile::Open). Accepted files: keys are unique and each
// typed getter agrees with KeyType; tensors are unique by name, FindTensor
// finds each, TensorData lies in the file with the tensor's byte size at
// an aligned offset; tensors up to 64 Ki elements convert with TensorToF32
// (supported types) to one value per element, F32/F16/BF16 exactly.
ParserRun RunGgufTarget(absl::Span<const uint8_t> input);

// Artifact loader (Artifact::Open) and verifier (VerifyModel). Repaired
// mode: byte 1.. are a 64-byte header whose layout fields and CRCs the
// harness sets, then the metadata; data_size (at most 16 MiB) is kept and
// the data section is zeros. Properties: Open accepts exactly when the
// flatbuffers Verifier and VerifyModel accept the metadata and the header
// is well-formed; the decoded header re-encodes to the same bytes; an
// accepted artifact loads onto a software NPU (runtime::Model::Load) and
// gets a session (CreateSession), unless device memory runs out.
ParserRun RunArtifactTarget(absl::Span<const uint8_t> input);

// Session files (ReadSessionStateFile). Repaired mode: the harness sets
// both CRCs. Accepted files: the state is consistent (written slots =
// min(next position, capacity), one mask byte and token per written slot,
// kv_blocks * written * kv_row_bytes cache bytes); written again and read
// back it is equal, and the file written has the input's size.
ParserRun RunSessionTarget(absl::Span<const uint8_t> input);

// Tokenizers on tests/data/vocab/ggml-vocab-llama-spm.gguf (SentencePiece)
// and ggml-vocab-qwen2.gguf (byte-level BPE). Byte 0: flags (bit 0
// add_bos); the rest is the text, and also, read as little-endian u24,
// token ids (mod vocab size + 16, minus 8: out-of-range ids included).
// Properties: Encode accepts exactly well-formed UTF-8; ids are in range,
// BOS first iff asked; Decode(Encode(text)) == text (SentencePiece: for
// text without U+2581, which it cannot tell from an escaped space);
// EncodeSegments of the text as one plain segment equals Encode;
// Decode(ids) is the concatenated TokenBytes (SentencePiece: less the
// leading space); the streaming detokenizer's output is well-formed UTF-8
// and equals Decode(ids) when that is well-formed.
ParserRun RunSentencePieceTokenizerTarget(absl::Span<const uint8_t> input);
ParserRun RunByteLevelBpeTokenizerTarget(absl::Span<const uint8_t> input);

// Chat templates. Byte 0: bits 0-2 the family (0-5: ForFamily in
// ChatFamily order, 6-7: Detect on the template text), bit 3 add_bos,
// bit 4 add_generation_prompt. The rest, split at NUL bytes: template
// text, bos, eos, then role and content of each message. Properties:
// Detect fails exactly for templates of no family (NotFound exactly when
// empty); Render accepts exactly when RenderSegments does and their texts
// agree; segments are non-empty and alternate parse_special; Render
// rejects ill-formed UTF-8 content and unknown roles; every message's
// content appears, unchanged, in a plain segment of its own.
ParserRun RunChatTemplateTarget(absl::Span<const uint8_t> input);

// Every target above, by name.
absl::Span<const ParserTarget> ParserTargets();
// nullptr for an unknown name.
const ParserTarget* FindParserTarget(std::string_view name);

}  // namespace lnpu::fuzz

#endif  // TESTS_FUZZ_PARSER_TARGETS_H_
