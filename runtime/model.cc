#include "runtime/model.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/parallel_for.h"
#include "base/quant_blocks.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "runtime/q6_k_conversion.h"

namespace lnpu::runtime {
namespace {

// A weights buffer that maps the artifact's data section: the artifact
// (and with it the file mapping) lives as long as the buffer. Members are
// destroyed in reverse order, the buffer first.
struct ImportedWeights {
  std::unique_ptr<artifact::Artifact> artifact;
  Buffer buffer;
};

// The data section imported without a copy (DRM_LNPU_BO_USERPTR, read
// only), or nullptr when the device cannot import it: no USERPTR
// capability, or a section whose start or rounded size does not suit the
// device's buffer alignment. Device errors of the import itself are
// returned.
absl::StatusOr<std::shared_ptr<const Buffer>> ImportWeights(
    Device& device, uint64_t capabilities, std::unique_ptr<artifact::Artifact>& artifact) {
  if ((capabilities & DRM_LNPU_CAP_USERPTR) == 0) return nullptr;
  LNPU_ASSIGN_OR_RETURN(const uint64_t alignment, device.GetParam(DRM_LNPU_PARAM_BO_ALIGNMENT));
  const absl::Span<const uint8_t> data = artifact->data();
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t address = reinterpret_cast<uintptr_t>(data.data());
  // The section ends the file; rounding its size up stays inside its last
  // mapped page only when the alignment is at most a page.
  if (alignment == 0 || alignment > page || address % alignment != 0 || data.empty()) {
    return nullptr;
  }
  const uint64_t size = (data.size() + alignment - 1) / alignment * alignment;
  LNPU_ASSIGN_OR_RETURN(Buffer buffer, device.ImportUserMemory(const_cast<uint8_t*>(data.data()),
                                                               size, DRM_LNPU_BO_READ_ONLY));
  auto holder = std::make_shared<ImportedWeights>();
  holder->artifact = std::move(artifact);
  holder->buffer = std::move(buffer);
  return std::shared_ptr<const Buffer>(holder, &holder->buffer);
}

// The panel dtypes a device with `capabilities` prefers for Q8_0 and Q4_0
// matrices: the _P16S form over the _P16 one (the UAPI header's advice;
// only the _P16 one without scales_in_stream), none where the device
// prefers neither.
PanelDtypes PreferredPanelDtypes(uint64_t capabilities, bool scales_in_stream) {
  const auto prefers = [&](uint64_t dtype_cap, uint64_t preferred_cap) {
    return (capabilities & dtype_cap) != 0 && (capabilities & preferred_cap) != 0;
  };
  if (!scales_in_stream) {
    capabilities &= ~(DRM_LNPU_CAP_DTYPE_Q8_0_P16S | DRM_LNPU_CAP_DTYPE_Q4_0_P16S);
  }
  PanelDtypes dtypes;
  if (prefers(DRM_LNPU_CAP_DTYPE_Q8_0_P16S, DRM_LNPU_CAP_Q8_0_P16S_PREFERRED)) {
    dtypes.q8_0 = LNPU_DTYPE_Q8_0_P16S;
  } else if (prefers(DRM_LNPU_CAP_DTYPE_Q8_0_P16, DRM_LNPU_CAP_Q8_0_P16_PREFERRED)) {
    dtypes.q8_0 = LNPU_DTYPE_Q8_0_P16;
  }
  if (prefers(DRM_LNPU_CAP_DTYPE_Q4_0_P16S, DRM_LNPU_CAP_Q4_0_P16S_PREFERRED)) {
    dtypes.q4_0 = LNPU_DTYPE_Q4_0_P16S;
  } else if (prefers(DRM_LNPU_CAP_DTYPE_Q4_0_P16, DRM_LNPU_CAP_Q4_0_P16_PREFERRED)) {
    dtypes.q4_0 = LNPU_DTYPE_Q4_0_P16;
  }
  return dtypes;
}

// Copies the first `layout.copied_bytes` of the artifact's data section to
// `dst` and writes the Q8_0 form of each of `layout.conversions` at its
// offset, in pieces of about 1 MiB read with Artifact::ReadData on all CPUs
// (ParallelFor: the read, the copy, conversion or repack and the kernel's
// zeroing of each new device page take a core each piece). Each piece is
// read into its worker's buffer, then copied to `dst`, or for the matrices
// in `panels` (sorted, disjoint, whole panels of Q8_0 or Q4_0 rows, the
// converted ones among them) written in the panel dtype `dtypes` gives
// theirs: a device buffer's mapping need not accept read() (the lnpu kernel
// driver's is VM_PFNMAP, where read() into it fails with EFAULT), and the
// 1 MiB stays in cache between the two. A conversion dequantizes each Q6_K
// row exactly and quantizes it to Q8_0 (compiler_artifacts/gguf), as
// npu-compile converts a Q6_K tensor, so the result is the artifact
// npu-compile --weights q8 would have written. The file's mapping is not
// touched, so its pages never count in this process's RSS. Every byte of
// `dst` is written by exactly one piece, so the result does not depend on
// the order the pieces run in. The first failed piece's error, in file
// order.
absl::Status CopyWeights(const artifact::Artifact& artifact, const Q8_0Layout& layout,
                         absl::Span<const WeightMatrix> panels, const PanelDtypes& dtypes,
                         uint8_t* dst) {
  // Small enough to stay in cache, and to share a few hundred MB evenly
  // between the threads.
  constexpr size_t kPiece = size_t{1} << 20;
  struct Piece {
    size_t offset = 0;  // in dst, and in the data section unless converted
    size_t bytes = 0;   // read from the data section
    // A repack of `rows` rows of `blocks` blocks, or a plain copy (rows 0).
    size_t rows = 0;
    size_t blocks = 0;
    size_t block_bytes = 0;
    P16Scales scales = P16Scales::kAfterPanel;
    bool repack = false;
    // A conversion: the rows' Q6_K bytes start at `source` of the data
    // section; the piece writes their Q8_0 rows, repacked when `repack`.
    std::optional<size_t> source = std::nullopt;
  };
  const auto scales_of = [&dtypes](uint32_t block_dtype) {
    const uint32_t panel_dtype = dtypes.Of(block_dtype);
    return panel_dtype == LNPU_DTYPE_Q8_0_P16S || panel_dtype == LNPU_DTYPE_Q4_0_P16S
               ? P16Scales::kAfterPair
               : P16Scales::kAfterPanel;
  };
  // Rows per piece: whole panels of about kPiece bytes.
  const auto piece_rows = [](size_t row_bytes) {
    return std::max(kP16Rows, kPiece / row_bytes / kP16Rows * kP16Rows);
  };
  std::vector<Piece> pieces;
  size_t done = 0;
  const auto copy_to = [&](size_t end) {
    for (; done < end; done += std::min(kPiece, end - done)) {
      pieces.push_back({.offset = done, .bytes = std::min(kPiece, end - done)});
    }
  };
  absl::flat_hash_set<uint64_t> panel_offsets;
  for (const WeightMatrix& m : panels) {
    panel_offsets.insert(m.offset);
    if (m.offset >= layout.copied_bytes) continue;  // a conversion's
    copy_to(m.offset);
    const size_t blocks = m.row_len / kQuantBlock;
    const size_t block_bytes = m.dtype == LNPU_DTYPE_Q4_0 ? kQ4_0BlockBytes : kQ8_0BlockBytes;
    const size_t row_bytes = blocks * block_bytes;
    const size_t rows_per_piece = piece_rows(row_bytes);
    for (size_t row = 0; row < m.rows; row += rows_per_piece) {
      const size_t rows = std::min<size_t>(rows_per_piece, m.rows - row);
      pieces.push_back({.offset = m.offset + row * row_bytes,
                        .bytes = rows * row_bytes,
                        .rows = rows,
                        .blocks = blocks,
                        .block_bytes = block_bytes,
                        .scales = scales_of(m.dtype),
                        .repack = true});
    }
    done = m.offset + size_t{m.rows} * row_bytes;
  }
  copy_to(layout.copied_bytes);
  for (const Q8_0Conversion& c : layout.conversions) {
    const size_t blocks = c.q6_k.row_len / kQuantBlock;
    const size_t row_bytes = blocks * kQ8_0BlockBytes;
    const size_t q6_k_row_bytes = artifact::WeightBytes(LNPU_DTYPE_Q6_K, c.q6_k.row_len, 1);
    const size_t rows_per_piece = piece_rows(row_bytes);
    for (size_t row = 0; row < c.q6_k.rows; row += rows_per_piece) {
      const size_t rows = std::min<size_t>(rows_per_piece, c.q6_k.rows - row);
      pieces.push_back({.offset = c.q8_0_offset + row * row_bytes,
                        .bytes = rows * q6_k_row_bytes,
                        .rows = rows,
                        .blocks = blocks,
                        .block_bytes = kQ8_0BlockBytes,
                        .scales = scales_of(LNPU_DTYPE_Q8_0),
                        .repack = panel_offsets.contains(c.q8_0_offset),
                        .source = c.q6_k.offset + row * q6_k_row_bytes});
    }
  }

  size_t largest = 0;  // a piece of 16 rows of a long row may exceed kPiece
  size_t largest_q8_0 = 0, longest_row = 0;
  for (const Piece& p : pieces) {
    largest = std::max(largest, p.bytes);
    if (p.source) {
      largest_q8_0 = std::max(largest_q8_0, p.rows * p.blocks * kQ8_0BlockBytes);
      longest_row = std::max(longest_row, p.blocks * kQuantBlock);
    }
  }
  const size_t threads = BulkPassThreads();
  struct Scratch {
    std::vector<uint8_t> read;
    std::vector<uint8_t> q8_0;  // a conversion's rows
    std::vector<float> row;     // one dequantized row
  };
  std::vector<Scratch> scratch(ParallelForWorkers(pieces.size(), threads));
  std::vector<absl::Status> status(pieces.size());
  ParallelFor(pieces.size(), threads, [&](size_t i, size_t worker) {
    const Piece& p = pieces[i];
    Scratch& s = scratch[worker];
    s.read.resize(largest);
    const absl::Span<uint8_t> source = absl::MakeSpan(s.read.data(), p.bytes);
    status[i] = artifact.ReadData(p.source.value_or(p.offset), source);
    if (!status[i].ok()) return;
    const uint8_t* rows = source.data();
    if (p.source) {
      s.q8_0.resize(largest_q8_0);
      s.row.resize(longest_row);
      status[i] = ConvertQ6_KRowsToQ8_0(source, p.rows, p.blocks * kQuantBlock,
                                        absl::MakeSpan(s.row),
                                        absl::MakeSpan(s.q8_0.data(), p.rows * p.blocks *
                                                                          kQ8_0BlockBytes));
      if (!status[i].ok()) {
        status[i] = absl::InvalidArgumentError(absl::StrCat(
            artifact.path(), ": the Q6_K matrix at data offset ", p.source.value(),
            " does not convert to Q8_0 (", status[i].message(),
            "): the artifact is damaged; compile the model again"));
        return;
      }
      rows = s.q8_0.data();
    }
    if (p.repack) {
      RepackToP16(p.block_bytes, p.scales, rows, p.rows, p.blocks, dst + p.offset);
    } else {
      std::memcpy(dst + p.offset, rows, p.rows != 0 ? p.rows * p.blocks * p.block_bytes : p.bytes);
    }
  });
  for (const absl::Status& s : status) LNPU_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

}  // namespace

Model::Model(std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
             std::shared_ptr<const Buffer> weights, bool chain_with_fences,
             size_t panel_matrices, size_t q6_k_conversions,
             uint64_t q6_k_conversion_bytes)
    : device_(std::move(device)),
      program_(std::move(program)),
      weights_(std::move(weights)),
      chain_with_fences_(chain_with_fences),
      panel_matrices_(panel_matrices),
      q6_k_conversions_(q6_k_conversions),
      q6_k_conversion_bytes_(q6_k_conversion_bytes) {}

absl::StatusOr<std::unique_ptr<Model>> Model::Load(std::shared_ptr<Device> shared_device,
                                                   const std::string& artifact_path,
                                                   const LoadOptions& options) {
  if (shared_device == nullptr) return absl::InvalidArgumentError("Model::Load: no device");
  Device& device = *shared_device;
  // Open()'s message names the path.
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<artifact::Artifact> artifact,
                        artifact::Artifact::Open(artifact_path));
  if (options.verify_weights) {
    LNPU_RETURN_IF_ERROR(artifact->VerifyData());
  }

  DeviceLimits limits;
  uint64_t capabilities = 0, max_in_fences = 0;
  for (auto [param, value] : {std::pair{DRM_LNPU_PARAM_MAX_CMD_SIZE, &limits.max_cmd_size},
                              std::pair{DRM_LNPU_PARAM_MAX_JOB_BOS, &limits.max_job_bos},
                              std::pair{DRM_LNPU_PARAM_CAPABILITIES, &capabilities},
                              std::pair{DRM_LNPU_PARAM_MAX_IN_FENCES, &max_in_fences}}) {
    absl::StatusOr<uint64_t> v = device.GetParam(param);
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(v.status(), "loading model '", artifact_path, "': ");
    *value = *v;
  }

  absl::StatusOr<Program> program = Program::FromArtifact(*artifact, limits);
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(program.status(), "loading model '", artifact_path, "': ");
  // Q6_K matrices: kept where the device computes them faster than as
  // Q8_0, else converted when copied (an import keeps the file's bytes).
  const bool computes_q6_k = (capabilities & DRM_LNPU_CAP_DTYPE_Q6_K) != 0;
  std::vector<WeightExtent> extents;
  for (const artifact::fb::Weight* w : *artifact->model().weights()) {  // verified present
    extents.push_back({w->offset(), w->size()});
  }
  const bool convert_q6_k = !computes_q6_k ||
                            (capabilities & DRM_LNPU_CAP_Q6_K_PREFERRED) == 0 ||
                            !options.keep_q6_k;
  const Q8_0Layout q8_0_layout =
      PlanQ8_0Conversions(artifact->data().size(), extents,
                          convert_q6_k ? program->Q6_KMatrices() : std::vector<WeightMatrix>{});

  // Weights: the mapped file itself when the device can import it, else a
  // device copy.
  bool import = options.weights == WeightPlacement::kImport;
  if (options.weights == WeightPlacement::kAuto) {
    absl::StatusOr<uint64_t> free = device.GetParam(DRM_LNPU_PARAM_MEMORY_FREE);
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(free.status(), "loading model '", artifact_path, "': ");
    // Copied weights must leave room for two sessions.
    const uint64_t sessions = program->session_bytes() > UINT64_MAX / 2
                                  ? UINT64_MAX
                                  : 2 * program->session_bytes();
    import = sessions > *free || *free - sessions < q8_0_layout.buffer_bytes;
  }
  // A device that does not compute Q6_K gets them converted in a copy.
  import = import && (computes_q6_k || q8_0_layout.conversions.empty());
  absl::StatusOr<std::shared_ptr<const Buffer>> weights =
      ImportWeights(device, import ? capabilities : 0, artifact);
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(weights.status(), "loading model '", artifact_path, "': ");
  size_t panel_matrices = 0, q6_k_conversions = 0;
  uint64_t q6_k_conversion_bytes = 0;
  if (*weights == nullptr) {
    std::vector<WeightMatrix> q6_k;
    std::vector<uint64_t> q8_0_offsets;
    for (const Q8_0Conversion& c : q8_0_layout.conversions) {
      q6_k.push_back(c.q6_k);
      q8_0_offsets.push_back(c.q8_0_offset);
      q6_k_conversion_bytes +=
          artifact::WeightBytes(LNPU_DTYPE_Q8_0, c.q6_k.row_len, c.q6_k.rows) -
          artifact::WeightBytes(LNPU_DTYPE_Q6_K, c.q6_k.row_len, c.q6_k.rows);
    }
    program->UseQ8_0For(q6_k, q8_0_offsets);
    q6_k_conversions = q6_k.size();
  }
  if (!computes_q6_k && program->ReadsWeightDtype(LNPU_DTYPE_Q6_K)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loading model '", artifact_path,
        "': the artifact has Q6_K weights that the device does not compute (no "
        "DRM_LNPU_CAP_DTYPE_Q6_K: UAPI 1.6) and that cannot be converted to Q8_0 at load (a "
        "command reads part of one); compile the model again with npu-compile --weights q8"));
  }
  if (*weights == nullptr) {
    absl::StatusOr<Buffer> copy = device.CreateBuffer(q8_0_layout.buffer_bytes);
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(copy.status(), "loading model '", artifact_path, "': ");
    absl::StatusOr<absl::Span<uint8_t>> mapped = copy->Map();
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(mapped.status(), "loading model '", artifact_path, "': ");
    // A copy may take the device's preferred layout of Q8_0 / Q4_0
    // matrices.
    PanelDtypes panel_dtypes;
    if (options.panel_weights) {
      panel_dtypes = PreferredPanelDtypes(capabilities, options.panel_scales_in_stream);
    }
    std::vector<WeightMatrix> panels;
    if (panel_dtypes.q8_0 != 0 || panel_dtypes.q4_0 != 0) {
      panels = program->PanelMatrices(panel_dtypes);
    }
    // (Its errors name the artifact's path.)
    LNPU_RETURN_IF_ERROR(CopyWeights(*artifact, q8_0_layout, panels, panel_dtypes, mapped->data()));
    program->UsePanels(panels, panel_dtypes);
    panel_matrices = panels.size();
    *weights = std::make_shared<const Buffer>(*std::move(copy));
  }

  const bool chain_with_fences =
      (capabilities & DRM_LNPU_CAP_IN_FENCES) != 0 && max_in_fences >= 1;
  return std::unique_ptr<Model>(
      new Model(std::move(shared_device), std::make_shared<const Program>(*std::move(program)),
                *std::move(weights), chain_with_fences, panel_matrices, q6_k_conversions,
                q6_k_conversion_bytes));
}

absl::StatusOr<std::unique_ptr<Sequence>> Model::CreateSequence() {
  return Sequence::Create(device_, program_, weights_, chain_with_fences_);
}

absl::StatusOr<std::unique_ptr<DecodeBatch>> Model::CreateDecodeBatch(
    absl::Span<Sequence* const> lanes) {
  return DecodeBatch::Create(device_, program_, weights_, chain_with_fences_, lanes);
}

}  // namespace lnpu::runtime
