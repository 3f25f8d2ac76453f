// The validated, device-independent content of a compiled artifact that the
// runtime executes: buffer layout, graphs with their command streams and IO
// operands, KV-cache geometry, and the model metadata.
//
// Built from an opened Artifact, which Artifact::Open has verified in full
// (indices, ranges, alignment, graph kinds: artifact_verifier.h);
// FromArtifact() adds the checks against the device's limits, so recording
// and running a graph need no further checks. A Program owns copies of what
// it needs; the artifact may be closed afterwards.
//
// Thread-safety: immutable after construction; safe to share.
#ifndef RUNTIME_PROGRAM_H_
#define RUNTIME_PROGRAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "runtime/model_info.h"

namespace lnpu::artifact {
class Artifact;
namespace fb {
struct Graph;
}  // namespace fb
}  // namespace lnpu::artifact

namespace lnpu::runtime {

enum class BufferKind {
  kWeights,      // the data section; one device copy shared by all sessions
  kActivations,  // per-session scratch
  kKvCache,      // per-session KV cache
  kIo,           // per-session host-visible inputs and outputs
};

struct BufferSpec {
  std::string name;
  BufferKind kind = BufferKind::kActivations;
  uint64_t size = 0;  // bytes, > 0
};

// A byte offset inside buffers()[buffer].
struct BufferLocation {
  uint32_t buffer = 0;
  uint64_t offset = 0;
};

// One command of a stream, for profiles and traces (the runtime itself
// replays streams without looking at their commands).
struct CommandSpec {
  uint32_t offset = 0;  // in the command image
  uint16_t opcode = 0;  // LNPU_OP_*
  int32_t layer = -1;   // transformer layer, -1 outside the layers or unknown
};

// One job: `size` bytes at `offset` of the recorded command image.
struct StreamSpec {
  uint32_t engine = 0;           // DRM_LNPU_ENGINE_*
  uint32_t offset = 0;           // multiple of 8
  uint32_t size = 0;             // multiple of 8, > 0
  std::vector<uint32_t> buffers; // buffers the job touches, sorted, unique
  std::vector<CommandSpec> commands;  // in stream order
};

// Host-visible operands of a graph, each in a kIo buffer, 4-byte aligned.
struct GraphIoSpec {
  BufferLocation tokens;     // I32[rows]
  BufferLocation positions;  // I32[rows]
  BufferLocation slots;      // I32[rows], -1 = padding row
  BufferLocation last_row;   // I32[1]
  BufferLocation logits;     // F32[vocab_size]; a verify graph's F32[rows][vocab_size]
  // I32[rows] with a window ring: each row's ring slot, -1 = not stored.
  std::optional<BufferLocation> window_slots;
};

// The ring of the sliding-window layers (model.fbs
// KvCache.window_ring_slots; runtime/window_ring.h).
struct WindowRingSpec {
  uint32_t slots = 0;
  uint32_t window = 0;
  BufferLocation mask;            // U8[slots], kIo
  BufferLocation slot_positions;  // I32[slots], kIo
};

// One layer's K (or V) rows in the KV cache buffer.
struct KvBlock {
  uint64_t offset = 0;       // bytes
  bool window_ring = false;  // ring slots (WindowRingSpec) rather than kv_capacity
};

struct GraphSpec {
  std::string name;
  bool decode = false;  // the single-token decode graph
  bool verify = false;  // the graph with logits of every row; neither: a prefill graph
  uint32_t rows = 0;    // tokens per run, > 0
  std::vector<StreamSpec> streams;  // run in order, each after the previous
  GraphIoSpec io;
};

// A matrix in the weights buffer that MATMUL (weight) or GATHER_ROWS
// (table) commands read.
struct WeightMatrix {
  uint64_t offset = 0;   // in buffers()[0]
  uint32_t rows = 0;     // n, or table_rows
  uint32_t row_len = 0;  // k, or row_len
  uint32_t dtype = 0;    // LNPU_DTYPE_* the commands read it as
};

// The panel dtype Q8_0 and Q4_0 matrices are stored in (LNPU_DTYPE_*_P16
// or LNPU_DTYPE_*_P16S), 0 for none: the matrices of that block dtype stay
// as they are.
struct PanelDtypes {
  uint32_t q8_0 = 0;
  uint32_t q4_0 = 0;

  // The panel dtype of block dtype `dtype` (0: none, or not a block dtype).
  uint32_t Of(uint32_t dtype) const {
    return dtype == LNPU_DTYPE_Q8_0 ? q8_0 : dtype == LNPU_DTYPE_Q4_0 ? q4_0 : 0;
  }
};

// Limits of the device the program will run on (DRM_LNPU_PARAM_*).
struct DeviceLimits {
  uint64_t max_cmd_size = 0;  // MAX_CMD_SIZE
  uint64_t max_job_bos = 0;   // MAX_JOB_BOS
};

class Program {
 public:
  // The program of `artifact`. InvalidArgument when a command stream
  // exceeds the device's `limits`.
  static absl::StatusOr<Program> FromArtifact(const artifact::Artifact& artifact,
                                              const DeviceLimits& limits);

  const ModelInfo& info() const { return info_; }
  // buffers()[0] is the kWeights buffer; no other buffer is kWeights.
  absl::Span<const BufferSpec> buffers() const { return buffers_; }
  absl::Span<const GraphSpec> graphs() const { return graphs_; }
  // Device memory one session of this program allocates: every buffer but
  // the weights, and the command image (saturating at UINT64_MAX).
  uint64_t session_bytes() const;

  // The single-token graph used for Forward() of one token.
  size_t decode_graph() const { return decode_graph_; }
  // Chunk sizes that multi-token runs are planned over (strictly
  // ascending): the prefill graphs' rows, or {1} (the decode graph) when
  // the artifact has no prefill graph.
  absl::Span<const uint32_t> run_chunks() const { return run_chunks_; }
  // The graph that runs a chunk of run_chunks()[i] rows.
  size_t run_chunk_graph(size_t i) const { return run_chunk_graphs_[i]; }
  // The verify graph (logits of every row) with the fewest rows >= `rows`;
  // requires 1 <= rows <= info().verify_rows (the most rows of any).
  size_t verify_graph(uint32_t rows) const;

  uint32_t kv_capacity() const { return info_.kv_capacity; }
  uint32_t kv_cache_buffer() const { return kv_cache_buffer_; }
  BufferLocation kv_mask() const { return kv_mask_; }  // U8[kv_capacity], kIo
  // I32[kv_capacity] in kIo, the position each slot holds: models with
  // sliding-window layers only.
  std::optional<BufferLocation> kv_slot_positions() const { return kv_slot_positions_; }
  // The sliding-window layers' ring, absent when every layer has
  // kv_capacity slots.
  const std::optional<WindowRingSpec>& window_ring() const { return window_ring_; }
  // The 2 * n_layers blocks of the KV cache buffer (each layer's K, then V)
  // with info().identity.kv_row_bytes per slot.
  absl::Span<const KvBlock> kv_blocks() const { return kv_blocks_; }

  // The batched decode graphs, by ascending lanes (= rows; row b belongs
  // to lane b): their StreamSpec::buffers are lane-qualified indices,
  // lane * buffers().size() + i for buffers()[i] of that lane. Their
  // scratch and io are lane 0's; io.logits is F32[rows][vocab_size] and
  // io.last_row is unused.
  absl::Span<const GraphSpec> decode_batches() const { return decode_batches_; }
  // Size of the command image of the first `graphs` batched decode graphs.
  uint32_t decode_batch_command_bytes(size_t graphs) const;
  // Writes the command image of the first `graphs` decode_batches() into
  // `image` (at least decode_batch_command_bytes(graphs) long) with every
  // relocation resolved: lane_buffer_addrs[lane * buffers().size() + i] is
  // the device address of buffers()[i] of `lane`, for each lane of those
  // graphs.
  void RecordDecodeBatches(size_t graphs, absl::Span<const uint64_t> lane_buffer_addrs,
                           absl::Span<uint8_t> image) const;

  // The LNPU_DTYPE_Q8_0 / _Q4_0 matrices of the weights buffer that can be
  // stored in a panel dtype instead (LNPU_DTYPE_*_P16 or *_P16S: the same
  // bytes rearranged in panels of 16 rows, base/quant_blocks.h): every
  // MATMUL / GATHER_ROWS command that reads bytes of one reads all of it as
  // the same matrix of one dtype, its rows are whole panels (a multiple of
  // 16) and it starts 64-byte aligned. Only the block dtypes that `panels`
  // gives a panel dtype are taken. Sorted by offset, disjoint.
  std::vector<WeightMatrix> PanelMatrices(const PanelDtypes& panels) const;
  // The LNPU_DTYPE_Q6_K matrices of the weights buffer that every MATMUL
  // reading bytes of one reads whole as the same matrix, overlapping no
  // other read: those UseQ8_0For can move. Sorted by offset, disjoint.
  std::vector<WeightMatrix> Q6_KMatrices() const;
  // Makes every command that reads matrices[i] (a subset of Q6_KMatrices())
  // read it as LNPU_DTYPE_Q8_0 at q8_0_offsets[i] of the weights buffer
  // instead, where the buffer must then hold it converted (a Q8_0 block per
  // 32 weights, as npu-compile converts Q6_K). Not thread-safe: call it
  // before the program is shared, and before PanelMatrices, which then
  // sees the Q8_0 matrices.
  void UseQ8_0For(absl::Span<const WeightMatrix> matrices,
                  absl::Span<const uint64_t> q8_0_offsets);
  // Whether any MATMUL / GATHER_ROWS command reads a weights matrix as
  // `dtype` (a device must support it to run the program).
  bool ReadsWeightDtype(uint32_t dtype) const;
  // Makes every command that reads one of `matrices` (a subset of
  // PanelMatrices(panels)) read it as the panel dtype `panels` gives its
  // dtype; the weights buffer must then hold those matrices repacked
  // (RepackToP16). Not thread-safe: call it before the program is shared.
  void UsePanels(absl::Span<const WeightMatrix> matrices, const PanelDtypes& panels);

  // Size of the command image that holds every graph's streams.
  uint32_t command_bytes() const { return static_cast<uint32_t>(commands_.commands.size()); }
  // Writes the command image into `image` (at least command_bytes() long) with every
  // relocation resolved: buffer_addrs[i] is the device address of
  // buffers()[i] (buffer_addrs.size() == buffers().size()).
  void Record(absl::Span<const uint64_t> buffer_addrs, absl::Span<uint8_t> image) const;

 private:
  struct PatchSite {
    uint32_t offset;  // of an 8-byte address field in the image
    uint32_t buffer;
  };

  // A MATMUL / GATHER_ROWS command's read of a weights-buffer matrix: the
  // image holding the command and the command's offset in it.
  struct MatrixRead {
    WeightMatrix matrix;  // with the dtype the command reads it as
    bool batch_image = false;  // decode_batch_commands_, else commands_
    uint32_t command = 0;
  };
  std::vector<MatrixRead> MatrixReads() const;
  // The matrices whose reads all read them whole as the same matrix of a
  // dtype `takes` accepts, overlapping no other read; sorted by offset.
  std::vector<WeightMatrix> WholeMatrices(absl::FunctionRef<bool(uint32_t dtype)> takes) const;

  // Command streams with their relocated address fields.
  struct CommandImage {
    std::vector<uint8_t> commands;  // relocated fields hold buffer offsets
    std::vector<PatchSite> relocations;

    // Appends the streams of `graph` to the image and `spec->streams`;
    // InvalidArgument for streams beyond the device's `limits`.
    absl::Status Append(const artifact::fb::Graph& graph, const DeviceLimits& limits,
                        GraphSpec* spec);
    // Copies the first `bytes` of the streams into `image` (at least that
    // long), resolving the relocations inside them with `addrs`.
    void Record(absl::Span<const uint64_t> addrs, uint32_t bytes,
                absl::Span<uint8_t> image) const;
  };

  Program() = default;

  ModelInfo info_;
  std::vector<BufferSpec> buffers_;
  std::vector<GraphSpec> graphs_;
  size_t decode_graph_ = 0;
  // (rows, graph) of the verify graphs, by ascending rows.
  std::vector<std::pair<uint32_t, size_t>> verify_graphs_;
  std::vector<uint32_t> run_chunks_;
  std::vector<size_t> run_chunk_graphs_;
  uint32_t kv_cache_buffer_ = 0;
  BufferLocation kv_mask_;
  std::optional<BufferLocation> kv_slot_positions_;
  std::optional<WindowRingSpec> window_ring_;
  std::vector<KvBlock> kv_blocks_;
  CommandImage commands_;
  std::vector<GraphSpec> decode_batches_;
  CommandImage decode_batch_commands_;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_PROGRAM_H_
