// A compiled model loaded onto a device.
//
// Load() reads and validates an artifact and places its weights in one
// device buffer, which every sequence of the model shares: on a device with
// DRM_LNPU_CAP_USERPTR the artifact's mapped data section is imported
// read-only without a copy (the mapping then lives as long as the buffer),
// otherwise the weights are copied into device memory. Sequences hold
// their own activations, KV cache, IO buffers and recorded command streams.
//
// Lifetime: the Model and each Sequence share ownership of the Device, the
// program and the weights, so they may be destroyed in any order.
// Thread-safety: all methods may be called from several threads at once.
#ifndef RUNTIME_MODEL_H_
#define RUNTIME_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "absl/types/span.h"
#include "runtime/decode_batch.h"
#include "runtime/model_info.h"
#include "runtime/program.h"
#include "runtime/sequence.h"

namespace lnpu::runtime {

// Where the weights go.
enum class WeightPlacement {
  // kCopy when the device's free memory holds the weights and two
  // sequences' buffers besides, else kImport (when the device can). The
  // default: on the software NPU a copy sits on huge pages and decodes
  // about twice as fast as the imported file mapping (docs/performance.md).
  kAuto,
  // Copied into device memory: read from the file (Artifact::ReadData) in
  // pieces on all CPUs (base/parallel_for.h), so the file mapping never
  // enters RSS and peak RSS holds the weights once.
  kCopy,
  // The artifact's mapped data section imported without a copy
  // (DRM_LNPU_CAP_USERPTR); a copy when the device cannot import.
  kImport,
};

struct LoadOptions {
  WeightPlacement weights = WeightPlacement::kAuto;
  // With copied weights on a device that prefers a panel layout of Q8_0 /
  // Q4_0 (DRM_LNPU_CAP_Q8_0_P16S_PREFERRED, else _Q8_0_P16_PREFERRED; the
  // same for Q4_0): store the matrices that allow it
  // (Program::PanelMatrices) in that layout while copying, and run their
  // commands on it. Off: the artifact's layout (A/B figures).
  bool panel_weights = true;
  // With panel_weights: take the _P16S layouts (scales in the quant
  // stream, UAPI 1.7) where the device prefers them; false: only the _P16
  // layouts (A/B figures, or a device whose _P16S loops lose).
  bool panel_scales_in_stream = true;
  // With copied weights: keep Q6_K matrices (npu-compile's choice for a
  // GGUF's Q6_K output projection) where the device computes them faster
  // than Q8_0 (DRM_LNPU_CAP_Q6_K_PREFERRED). A device that does not, or
  // false here (A/B figures), gets them converted to Q8_0 as they are
  // copied (then stored as panels like the other Q8_0 matrices): the
  // matrix npu-compile --weights q8 writes, 1.3x the Q6_K bytes. A device
  // without DRM_LNPU_CAP_DTYPE_Q6_K always gets them converted, so its
  // weights are copied whatever `weights` says.
  bool keep_q6_k = true;
  // Check the weights against the artifact's CRC-32C checksums before
  // placing them (Artifact::VerifyData): reads the whole data section once
  // (cost: docs/artifact-format.md). DataLoss naming the weight on a
  // mismatch.
  bool verify_weights = true;
};

class Model {
 public:
  // Opens the artifact at `artifact_path` and loads it onto `device`.
  // Errors: the artifact reader's (NotFound, InvalidArgument for a corrupt
  // file, ...); InvalidArgument when its streams exceed the device's
  // limits; device errors as returned by the driver.
  static absl::StatusOr<std::unique_ptr<Model>> Load(std::shared_ptr<Device> device,
                                                     const std::string& artifact_path,
                                                     const LoadOptions& options = {});

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const { return program_->info(); }
  const Program& program() const { return *program_; }
  Device& device() const { return *device_; }

  // A new sequence with an empty cache: allocates and zeroes its buffers
  // and records its command streams.
  absl::StatusOr<std::unique_ptr<Sequence>> CreateSequence();

  // A batch of the decode steps of `lanes`, sequences of this model
  // (decode_batch.h: which lane counts exist, the errors). The lanes must
  // outlive the batch.
  absl::StatusOr<std::unique_ptr<DecodeBatch>> CreateDecodeBatch(
      absl::Span<Sequence* const> lanes);

  // Device memory of the shared weights (imported or copied).
  uint64_t device_memory_bytes() const { return weights_->size(); }
  // True when the weights are the imported file mapping, not a copy.
  bool weights_imported() const { return (weights_->flags() & DRM_LNPU_BO_USERPTR) != 0; }
  // Q8_0 / Q4_0 matrices stored as panels (LoadOptions::panel_weights).
  size_t panel_matrices() const { return panel_matrices_; }
  // Q6_K matrices converted to Q8_0 at load (LoadOptions::keep_q6_k), and
  // the bytes their Q8_0 form has beyond their Q6_K one (what a decode step
  // then reads more).
  size_t q6_k_conversions() const { return q6_k_conversions_; }
  uint64_t q6_k_conversion_bytes() const { return q6_k_conversion_bytes_; }

 private:
  Model(std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
        std::shared_ptr<const Buffer> weights, bool chain_with_fences, size_t panel_matrices,
        size_t q6_k_conversions, uint64_t q6_k_conversion_bytes);

  const std::shared_ptr<Device> device_;
  const std::shared_ptr<const Program> program_;
  const std::shared_ptr<const Buffer> weights_;
  const bool chain_with_fences_;  // the device supports in-fences
  const size_t panel_matrices_;
  const size_t q6_k_conversions_;
  const uint64_t q6_k_conversion_bytes_;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_MODEL_H_
