// Read access to a compiled .lnpu artifact (layout: artifact_file.h,
// metadata: model.fbs).
#ifndef COMPILER_ARTIFACTS_FORMAT_ARTIFACT_H_
#define COMPILER_ARTIFACTS_FORMAT_ARTIFACT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compiler_artifacts/format/artifact_file.h"
#include "compiler_artifacts/format/model_generated.h"

namespace lnpu::artifact {

// An opened artifact: the file mapped read-only and fully verified, and
// kept open for reading (ReadData). Immutable; every method is
// thread-safe. The references and spans it returns live as long as the
// Artifact.
class Artifact {
 public:
  // Maps `path` and verifies it: header (magic, supported version, CRCs,
  // sizes against the real file size), the flatbuffers Verifier, then
  // VerifyModel (artifact_verifier.h). Errors: NotFound / PermissionDenied
  // / Unavailable for I/O, FailedPrecondition for an unsupported format
  // version, InvalidArgument for a corrupt or inconsistent file; each
  // message starts with the path.
  static absl::StatusOr<std::unique_ptr<Artifact>> Open(
      const std::string& path);

  Artifact(const Artifact&) = delete;
  Artifact& operator=(const Artifact&) = delete;
  ~Artifact();

  // Checks the data section against the model's data_checksums (CRC-32C
  // per chunk). DataLoss naming the byte range and the weight it belongs
  // to; OK for an artifact without checksums. Reads the whole data section
  // with ReadData on all CPUs (ParallelFor; documented cost:
  // docs/artifact-format.md), so the mapping's pages are not touched.
  absl::Status VerifyData() const;

  // Copies data-section bytes [offset, offset + out.size()) into `out`
  // with pread: for a pass over the whole section, a few times faster than
  // touching data()'s pages (no page faults, no mapping in this process's
  // resident set). OutOfRange for a range past the section; DataLoss
  // naming the path when the file has shrunk since Open; ErrnoError's for
  // a failed read.
  absl::Status ReadData(uint64_t offset, absl::Span<uint8_t> out) const;

  const fb::Model& model() const { return *model_; }
  // The data section (buffers[0]), page-aligned, mapped from the file.
  absl::Span<const uint8_t> data() const { return data_; }
  const std::string& path() const { return path_; }
  const ArtifactHeader& header() const { return header_; }

 private:
  Artifact(std::string path, int fd, const uint8_t* mapping, uint64_t mapping_size);

  std::string path_;
  int fd_;  // the file, read-only, for ReadData
  const uint8_t* mapping_;
  uint64_t mapping_size_;
  ArtifactHeader header_;
  const fb::Model* model_ = nullptr;
  absl::Span<const uint8_t> data_;
};

}  // namespace lnpu::artifact

#endif  // COMPILER_ARTIFACTS_FORMAT_ARTIFACT_H_
