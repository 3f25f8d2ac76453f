#include "runtime/model.h"

#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_artifacts/format/artifact.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::runtime {
namespace {

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(),
                      absl::StrCat("loading model '", path, "': ", status.message()));
}

}  // namespace

Model::Model(Device& device, std::shared_ptr<const Program> program,
             std::shared_ptr<const Buffer> weights, bool chain_with_fences)
    : device_(device),
      program_(std::move(program)),
      weights_(std::move(weights)),
      chain_with_fences_(chain_with_fences) {}

absl::StatusOr<std::unique_ptr<Model>> Model::Load(Device& device,
                                                   const std::string& artifact_path) {
  absl::StatusOr<std::unique_ptr<artifact::Artifact>> artifact =
      artifact::Artifact::Open(artifact_path);
  if (!artifact.ok()) return artifact.status();  // its message names the path

  DeviceLimits limits;
  uint64_t capabilities = 0, max_in_fences = 0;
  for (auto [param, value] : {std::pair{DRM_LNPU_PARAM_MAX_CMD_SIZE, &limits.max_cmd_size},
                              std::pair{DRM_LNPU_PARAM_MAX_JOB_BOS, &limits.max_job_bos},
                              std::pair{DRM_LNPU_PARAM_CAPABILITIES, &capabilities},
                              std::pair{DRM_LNPU_PARAM_MAX_IN_FENCES, &max_in_fences}}) {
    absl::StatusOr<uint64_t> v = device.GetParam(param);
    if (!v.ok()) return WithPath(v.status(), artifact_path);
    *value = *v;
  }

  absl::StatusOr<Program> program = Program::FromArtifact(**artifact, limits);
  if (!program.ok()) return WithPath(program.status(), artifact_path);

  const absl::Span<const uint8_t> data = (*artifact)->data();
  absl::StatusOr<Buffer> weights = device.CreateBuffer(data.size());
  if (!weights.ok()) return WithPath(weights.status(), artifact_path);
  absl::StatusOr<absl::Span<uint8_t>> mapped = weights->Map();
  if (!mapped.ok()) return WithPath(mapped.status(), artifact_path);
  std::memcpy(mapped->data(), data.data(), data.size());

  const bool chain_with_fences =
      (capabilities & DRM_LNPU_CAP_IN_FENCES) != 0 && max_in_fences >= 1;
  return std::unique_ptr<Model>(
      new Model(device, std::make_shared<const Program>(*std::move(program)),
                std::make_shared<const Buffer>(*std::move(weights)), chain_with_fences));
}

absl::StatusOr<std::unique_ptr<Session>> Model::CreateSession() {
  return Session::Create(device_, program_, weights_, chain_with_fences_);
}

}  // namespace lnpu::runtime
