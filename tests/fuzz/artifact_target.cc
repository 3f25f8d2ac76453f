// The artifact loader's and verifier's fuzz target (parser_targets.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_file.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "base/crc32.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/softnpu/soft_npu.h"
#include "runtime/model.h"
#include "tests/fuzz/memory_file.h"
#include "tests/fuzz/parser_targets.h"

namespace lnpu::fuzz {
namespace {

using artifact::ArtifactHeader;
using artifact::kArtifactHeaderSize;

// The data section of a repaired input: data_size modulo this.
constexpr uint64_t kMaxRepairedDataSize = (uint64_t{1} << 24) + 1;

uint64_t LoadU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Whether the flatbuffers Verifier and VerifyModel accept `metadata` as
// the metadata of an artifact with `data_size` bytes of data.
bool MetadataVerifies(absl::Span<const uint8_t> metadata, uint64_t data_size) {
  // An 8-aligned copy, as the metadata is in a mapped file.
  const std::vector<uint8_t> copy(metadata.begin(), metadata.end());
  flatbuffers::Verifier verifier(copy.data(), copy.size());
  if (!artifact::fb::VerifyModelBuffer(verifier)) return false;
  return artifact::VerifyModel(*artifact::fb::GetModel(copy.data()),
                               data_size)
      .ok();
}

// The device the accepted artifacts load on: a software NPU of 256 MiB, so
// that an artifact whose buffers would take the default 4 GiB gets
// ResourceExhausted instead of pushing the run past libFuzzer's RSS limit
// (-rss_limit_mb 2048 in test.sh) when its activations are zeroed.
constexpr uint64_t kFuzzDeviceMemoryBytes = uint64_t{256} << 20;

// An accepted artifact loads and gets a session, unless the device runs
// out of memory.
void CheckLoads(const std::string& path, ParserRun& run) {
  static const std::shared_ptr<Device>* const device = [] {
    softnpu::SoftNpuOptions options;
    options.memory_bytes = kFuzzDeviceMemoryBytes;
    return new std::shared_ptr<Device>(
        std::make_shared<Device>(softnpu::SoftNpu::Create(options)->Open()));
  }();
  // The data checksums are checked on their own: mutated weights may fail
  // them (DataLoss), nothing else.
  absl::StatusOr<std::unique_ptr<artifact::Artifact>> opened = artifact::Artifact::Open(path);
  if (opened.ok()) {
    const absl::Status intact = (*opened)->VerifyData();
    if (!intact.ok() && intact.code() != absl::StatusCode::kDataLoss) {
      run.Fail(absl::StrCat("VerifyData fails other than with DataLoss: ", intact.ToString()));
    }
  }
  absl::StatusOr<std::unique_ptr<runtime::Model>> model =
      runtime::Model::Load(*device, path, {.verify_weights = false});
  if (model.ok()) {
    absl::StatusOr<std::unique_ptr<runtime::Sequence>> session =
        (*model)->CreateSequence();
    if (!session.ok() &&
        session.status().code() != absl::StatusCode::kResourceExhausted) {
      run.Fail(absl::StrCat("a verified artifact gets no session: ",
                            session.status().ToString()));
    }
  } else if (model.status().code() != absl::StatusCode::kResourceExhausted) {
    run.Fail(absl::StrCat("a verified artifact does not load: ",
                          model.status().ToString()));
  }
}

}  // namespace

ParserRun RunArtifactTarget(absl::Span<const uint8_t> input) {
  static MemoryFile* const file = new MemoryFile();
  ParserRun run;
  const bool repaired = !input.empty() && input[0] % 2 == 1 &&
                        input.size() > 1 + kArtifactHeaderSize;
  if (!input.empty()) input.remove_prefix(1);

  std::vector<uint8_t> bytes;
  uint64_t file_size = input.size();
  // Repaired: whether the file should open.
  bool expect_accepted = false;
  if (repaired) {
    const absl::Span<const uint8_t> metadata =
        input.subspan(kArtifactHeaderSize);
    ArtifactHeader header;
    header.version_major = static_cast<uint16_t>(input[8] | input[9] << 8);
    header.version_minor = static_cast<uint16_t>(input[10] | input[11] << 8);
    header.metadata_size = metadata.size();
    header.data_offset = artifact::DataOffsetFor(metadata.size());
    header.data_size = LoadU64(input.data() + 40) % kMaxRepairedDataSize;
    header.file_size = header.data_offset + header.data_size;
    header.metadata_crc32 = Crc32(metadata);
    const auto encoded = artifact::EncodeArtifactHeader(header);
    bytes.assign(encoded.begin(), encoded.end());
    bytes.insert(bytes.end(), metadata.begin(), metadata.end());
    file_size = header.file_size;
    expect_accepted =
        artifact::DecodeArtifactHeader(encoded).ok() &&
        MetadataVerifies(metadata, header.data_size);
  } else {
    bytes.assign(input.begin(), input.end());
    const auto header = artifact::DecodeArtifactHeader(bytes);
    if (header.ok()) {
      const auto encoded = artifact::EncodeArtifactHeader(*header);
      if (!std::equal(encoded.begin(), encoded.end(), bytes.begin())) {
        run.Fail("a decoded header does not encode to its bytes");
      }
    }
  }
  if (absl::Status s = file->Assign(bytes, file_size); !s.ok()) {
    run.Fail(s.ToString());
    return run;
  }

  const absl::StatusOr<std::unique_ptr<artifact::Artifact>> opened =
      artifact::Artifact::Open(file->path());
  run.accepted = opened.ok();
  if (repaired && run.accepted != expect_accepted) {
    run.Fail(absl::StrCat(
        "Artifact::Open ", run.accepted ? "accepts" : "rejects",
        " a file whose header and metadata the verifiers ",
        expect_accepted ? "accept" : "reject", ": ",
        opened.status().ToString()));
  }
  if (!opened.ok()) {
    run.ExpectErrorNamesFile(opened.status(), file->path());
    return run;
  }
  const artifact::Artifact& a = **opened;
  if (a.data().size() != a.header().data_size ||
      a.header().file_size != file_size) {
    run.Fail("the opened artifact's sections disagree with its header");
  }
  if (!artifact::VerifyModel(a.model(), a.data().size()).ok()) {
    run.Fail("an opened artifact's model does not verify");
  }
  CheckLoads(file->path(), run);
  return run;
}

}  // namespace lnpu::fuzz
