#include "runtime/program.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/crc32.h"
#include "base/quant_blocks.h"
#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "compiler_artifacts/format/model_generated.h"
#include "compiler_artifacts/format/vocabulary_table.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::runtime {
namespace {

namespace fb = ::lnpu::artifact::fb;

std::string StringOf(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

BufferKind KindOf(fb::BufferKind kind) {
  switch (kind) {
    case fb::BufferKind::Weights:
      return BufferKind::kWeights;
    case fb::BufferKind::Activations:
      return BufferKind::kActivations;
    case fb::BufferKind::KvCache:
      return BufferKind::kKvCache;
    case fb::BufferKind::Io:
      return BufferKind::kIo;
  }
  return BufferKind::kIo;  // unreachable: the verifier rejects unknown kinds
}

// The verified model's metadata; prefill_chunks are filled in by the caller.
ModelInfo InfoOf(const fb::Model& model, uint64_t data_bytes) {
  const fb::HParams& hp = *model.hparams();
  const fb::KvCache& kv = *model.kv_cache();
  const fb::Tokenizer& tok = *model.tokenizer();
  ModelInfo info;
  info.architecture = StringOf(hp.architecture());
  info.name = StringOf(hp.name());
  info.vocab_size = hp.vocab_size();
  info.dim = hp.dim();
  info.n_layers = hp.n_layers();
  info.n_heads = hp.n_heads();
  info.n_kv_heads = hp.n_kv_heads();
  info.head_dim = hp.head_dim();
  info.ffn_dim = hp.ffn_dim();
  info.kv_capacity = kv.capacity();
  info.max_prompt_len = kv.max_prompt_len();
  info.min_response_len = kv.min_response_len();
  info.vocabulary = artifact::VocabularyFromTable(tok);
  info.chat_template = artifact::ChatTemplateFromTable(tok);
  info.weight_bytes = data_bytes;
  return info;
}

BufferLocation LocationOf(const fb::Operand& op) { return {op.buffer(), op.offset()}; }

// CRC-32 of up to 64 evenly spread 4 KiB samples of `data`: touches at most
// 64 pages, yet differs between models whose weights differ anywhere near a
// sample (e.g. two random or two fine-tuned models of one architecture).
uint32_t WeightsFingerprint(absl::Span<const uint8_t> data) {
  constexpr uint64_t kSamples = 64, kSampleBytes = 4096;
  if (data.size() <= kSamples * kSampleBytes) return Crc32(data);
  const uint64_t stride = (data.size() - kSampleBytes) / (kSamples - 1);
  uint32_t crc = 0;
  for (uint64_t i = 0; i < kSamples; ++i) {
    crc = Crc32(data.subspan(i * stride, kSampleBytes), crc);
  }
  return crc;
}

}  // namespace

uint64_t Program::session_bytes() const {
  uint64_t bytes = command_bytes();
  for (const BufferSpec& spec : absl::MakeConstSpan(buffers_).subspan(1)) {
    bytes = spec.size > UINT64_MAX - bytes ? UINT64_MAX : bytes + spec.size;
  }
  return bytes;
}

absl::StatusOr<Program> Program::FromArtifact(const artifact::Artifact& artifact,
                                              const DeviceLimits& limits) {
  const fb::Model& model = artifact.model();
  Program program;
  program.info_ = InfoOf(model, artifact.data().size());

  for (const fb::Buffer* b : *model.buffers()) {
    program.buffers_.push_back({StringOf(b->name()), KindOf(b->kind()), b->size()});
  }
  program.kv_cache_buffer_ = model.kv_cache()->buffer();
  program.kv_mask_ = LocationOf(*model.kv_cache()->mask());
  if (const fb::Operand* positions = model.kv_cache()->slot_positions(); positions != nullptr) {
    program.kv_slot_positions_ = LocationOf(*positions);
  }

  const fb::KvCache& kv = *model.kv_cache();
  if (kv.window_ring_slots() > 0) {
    program.window_ring_ =
        WindowRingSpec{.slots = kv.window_ring_slots(),
                       .window = kv.window(),
                       .mask = LocationOf(*kv.window_mask()),
                       .slot_positions = LocationOf(*kv.window_slot_positions())};
  }

  // The cache is 2 * n_layers blocks (each layer's K, then V) of
  // artifact::KvLayerSlots slots of equal rows. Saved sessions hold the
  // rows of every block at the slots of a capacity-slot cache.
  ModelIdentity& identity = program.info_.identity;
  identity.metadata_crc32 = artifact.header().metadata_crc32;
  identity.weights_crc32 = WeightsFingerprint(artifact.data());
  identity.kv_capacity = program.info_.kv_capacity;
  identity.kv_dtype = kv.dtype();
  identity.kv_blocks = 2 * program.info_.n_layers;
  const uint64_t kv_bytes = program.buffers_[program.kv_cache_buffer_].size;
  // Artifact::Open's verifier (VerifyKvCache) guarantees a whole number of
  // equal rows, each at most 2^32-1 bytes.
  const uint64_t kv_rows = artifact::KvCacheBytes(kv, program.info_.n_layers, 1);
  identity.kv_row_bytes = static_cast<uint32_t>(kv_bytes / kv_rows);
  uint64_t block_offset = 0;
  for (uint32_t l = 0; l < program.info_.n_layers; ++l) {
    const uint32_t slots = artifact::KvLayerSlots(kv, l);
    for (int kv_half = 0; kv_half < 2; ++kv_half) {
      program.kv_blocks_.push_back(
          {.offset = block_offset, .window_ring = slots != identity.kv_capacity});
      block_offset += uint64_t{slots} * identity.kv_row_bytes;
    }
  }

  for (const fb::Graph* g : *model.graphs()) {
    GraphSpec graph;
    LNPU_RETURN_IF_ERROR(program.commands_.Append(*g, limits, &graph));
    graph.io.last_row = LocationOf(*g->io()->last_row());
    if (graph.decode) program.decode_graph_ = program.graphs_.size();
    if (graph.verify) {
      program.verify_graphs_.emplace_back(graph.rows, program.graphs_.size());
      program.info_.verify_rows = std::max(program.info_.verify_rows, graph.rows);
    }
    program.graphs_.push_back(std::move(graph));
  }
  std::sort(program.verify_graphs_.begin(), program.verify_graphs_.end());
  if (model.decode_batches() != nullptr) {
    std::vector<const fb::Graph*> batches(model.decode_batches()->begin(),
                                          model.decode_batches()->end());
    std::sort(batches.begin(), batches.end(),
              [](const fb::Graph* a, const fb::Graph* b) { return a->tokens() < b->tokens(); });
    for (const fb::Graph* g : batches) {
      GraphSpec graph;
      LNPU_RETURN_IF_ERROR(program.decode_batch_commands_.Append(*g, limits, &graph));
      program.info_.decode_batches.push_back(graph.rows);
      program.decode_batches_.push_back(std::move(graph));
    }
  }

  // Multi-token runs use the prefill graphs, or the decode graph alone.
  std::vector<std::pair<uint32_t, size_t>> prefill;  // (rows, graph)
  for (size_t i = 0; i < program.graphs_.size(); ++i) {
    const GraphSpec& graph = program.graphs_[i];
    if (!graph.decode && !graph.verify) prefill.emplace_back(graph.rows, i);
  }
  if (prefill.empty()) prefill.emplace_back(1, program.decode_graph_);
  std::sort(prefill.begin(), prefill.end());
  for (const auto& [rows, graph] : prefill) {
    program.run_chunks_.push_back(rows);
    program.run_chunk_graphs_.push_back(graph);
    if (!program.graphs_[graph].decode) program.info_.prefill_chunks.push_back(rows);
  }
  return program;
}

absl::Status Program::CommandImage::Append(const fb::Graph& g, const DeviceLimits& limits,
                                           GraphSpec* graph) {
  graph->name = StringOf(g.name());
  graph->decode = g.kind() == fb::GraphKind::Decode;
  graph->verify = g.kind() == fb::GraphKind::Verify;
  graph->rows = g.tokens();
  const fb::GraphIo& io = *g.io();
  graph->io.tokens = LocationOf(*io.tokens());
  graph->io.positions = LocationOf(*io.positions());
  graph->io.slots = LocationOf(*io.slots());
  graph->io.logits = LocationOf(*io.logits());
  if (io.window_slots() != nullptr) graph->io.window_slots = LocationOf(*io.window_slots());
  for (const fb::CommandStream* cs : *g.streams()) {
    const uint32_t size = cs->commands()->size();
    if (size > limits.max_cmd_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph '", graph->name, "' has a ", size, "-byte command stream but the device "
          "accepts at most ", limits.max_cmd_size, " bytes per job; recompile the model "
          "with smaller prefill chunks"));
    }
    const uint64_t offset = commands.size();
    if (offset + size > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          "the command streams of all graphs exceed 4 GiB; recompile the model with fewer "
          "or smaller prefill chunks");
    }
    StreamSpec stream;
    stream.engine = cs->engine();
    stream.offset = static_cast<uint32_t>(offset);
    stream.size = size;
    commands.insert(commands.end(), cs->commands()->begin(), cs->commands()->end());
    if (cs->relocations() != nullptr) {
      for (const fb::Relocation* r : *cs->relocations()) {
        relocations.push_back({stream.offset + r->offset(), r->buffer()});
        stream.buffers.push_back(r->buffer());
      }
    }
    // Command framing was verified with the artifact.
    const auto* layers = cs->command_layers();
    for (uint32_t at = 0, index = 0; at < size; ++index) {
      lnpu_cmd_header header;
      std::memcpy(&header, cs->commands()->data() + at, sizeof header);
      const int32_t layer = layers != nullptr && index < layers->size() ? layers->Get(index) : -1;
      stream.commands.push_back({stream.offset + at, header.opcode, layer});
      at += header.size;
    }
    std::sort(stream.buffers.begin(), stream.buffers.end());
    stream.buffers.erase(std::unique(stream.buffers.begin(), stream.buffers.end()),
                         stream.buffers.end());
    if (stream.buffers.size() > limits.max_job_bos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph '", graph->name, "' has a job touching ", stream.buffers.size(),
          " buffers but the device accepts at most ", limits.max_job_bos, " per job"));
    }
    graph->streams.push_back(std::move(stream));
  }
  return absl::OkStatus();
}

void Program::CommandImage::Record(absl::Span<const uint64_t> addrs, uint32_t bytes,
                                   absl::Span<uint8_t> image) const {
  if (bytes == 0) return;
  std::memcpy(image.data(), commands.data(), bytes);
  for (const PatchSite& site : relocations) {
    if (site.offset >= bytes) continue;
    uint64_t value;
    std::memcpy(&value, image.data() + site.offset, sizeof(value));
    value += addrs[site.buffer];
    std::memcpy(image.data() + site.offset, &value, sizeof(value));
  }
}

std::vector<Program::MatrixRead> Program::MatrixReads() const {
  std::vector<MatrixRead> reads;
  const size_t buffers = buffers_.size();
  for (const bool batch : {false, true}) {
    const CommandImage& image = batch ? decode_batch_commands_ : commands_;
    absl::flat_hash_map<uint32_t, uint32_t> buffer_of;  // relocated field -> buffer
    for (const PatchSite& site : image.relocations) buffer_of[site.offset] = site.buffer;
    // The weights buffer is buffers()[0]; batch graphs qualify it by lane.
    const auto weights_offset = [&](uint32_t field) -> std::optional<uint64_t> {
      const auto it = buffer_of.find(field);
      if (it == buffer_of.end() || it->second % buffers != 0) return std::nullopt;
      uint64_t offset;
      std::memcpy(&offset, image.commands.data() + field, sizeof offset);
      return offset;
    };
    for (const GraphSpec& graph : batch ? decode_batches_ : graphs_) {
      for (const StreamSpec& stream : graph.streams) {
        for (const CommandSpec& command : stream.commands) {
          const uint8_t* at = image.commands.data() + command.offset;
          if (command.opcode == LNPU_OP_MATMUL) {
            lnpu_cmd_matmul c;
            std::memcpy(&c, at, sizeof c);
            const auto offset = weights_offset(command.offset + offsetof(lnpu_cmd_matmul, weight));
            if (offset) {
              reads.push_back({{*offset, c.n, c.k, c.weight_dtype}, batch, command.offset});
            }
          } else if (command.opcode == LNPU_OP_GATHER_ROWS) {
            lnpu_cmd_gather_rows c;
            std::memcpy(&c, at, sizeof c);
            const auto offset =
                weights_offset(command.offset + offsetof(lnpu_cmd_gather_rows, table));
            if (offset) {
              reads.push_back(
                  {{*offset, c.table_rows, c.row_len, c.table_dtype}, batch, command.offset});
            }
          }
        }
      }
    }
  }
  return reads;
}

std::vector<WeightMatrix> Program::WholeMatrices(
    const absl::FunctionRef<bool(uint32_t dtype)> takes) const {
  std::vector<MatrixRead> reads = MatrixReads();
  // The end of the bytes a read covers (the verifier bounded every
  // operand by its buffer; a panel matrix is only ever one made here).
  const auto end_of = [](const MatrixRead& r) {
    const uint64_t row_len = r.matrix.row_len;
    uint64_t row_bytes = row_len * 4;  // F32
    switch (r.matrix.dtype) {
      case LNPU_DTYPE_F16: row_bytes = row_len * 2; break;
      case LNPU_DTYPE_Q4_0:
      case LNPU_DTYPE_Q4_0_P16:
      case LNPU_DTYPE_Q4_0_P16S: row_bytes = row_len / kQuantBlock * kQ4_0BlockBytes; break;
      case LNPU_DTYPE_Q8_0:
      case LNPU_DTYPE_Q8_0_P16:
      case LNPU_DTYPE_Q8_0_P16S: row_bytes = row_len / kQuantBlock * kQ8_0BlockBytes; break;
      case LNPU_DTYPE_Q6_K: row_bytes = row_len / kQ6_KBlock * kQ6_KBlockBytes; break;
    }
    return r.matrix.offset + r.matrix.rows * row_bytes;
  };
  std::sort(reads.begin(), reads.end(), [](const MatrixRead& a, const MatrixRead& b) {
    return a.matrix.offset < b.matrix.offset;
  });
  std::vector<WeightMatrix> matrices;
  uint64_t covered_end = 0;  // end of the reads before the current group
  for (size_t i = 0; i < reads.size();) {
    // The reads at one offset; they must all be the same matrix of a dtype
    // `takes` accepts and overlap no other read.
    size_t j = i;
    uint64_t end = 0;
    bool same = true;
    for (; j < reads.size() && reads[j].matrix.offset == reads[i].matrix.offset; ++j) {
      end = std::max(end, end_of(reads[j]));
      same = same && takes(reads[j].matrix.dtype) &&
             reads[j].matrix.dtype == reads[i].matrix.dtype &&
             reads[j].matrix.rows == reads[i].matrix.rows &&
             reads[j].matrix.row_len == reads[i].matrix.row_len;
    }
    const WeightMatrix& m = reads[i].matrix;
    const bool disjoint =
        m.offset >= covered_end && (j == reads.size() || reads[j].matrix.offset >= end);
    if (same && disjoint) matrices.push_back(m);
    covered_end = std::max(covered_end, end);
    i = j;
  }
  return matrices;
}

std::vector<WeightMatrix> Program::PanelMatrices(const PanelDtypes& panels) const {
  std::vector<WeightMatrix> matrices =
      WholeMatrices([&panels](uint32_t dtype) { return panels.Of(dtype) != 0; });
  std::erase_if(matrices, [](const WeightMatrix& m) {
    return m.rows % kP16Rows != 0 || m.offset % 64 != 0;
  });
  return matrices;
}

std::vector<WeightMatrix> Program::Q6_KMatrices() const {
  return WholeMatrices([](uint32_t dtype) { return dtype == LNPU_DTYPE_Q6_K; });
}

bool Program::ReadsWeightDtype(uint32_t dtype) const {
  return absl::c_any_of(MatrixReads(),
                        [dtype](const MatrixRead& r) { return r.matrix.dtype == dtype; });
}

void Program::UsePanels(absl::Span<const WeightMatrix> matrices, const PanelDtypes& panels) {
  absl::flat_hash_map<uint64_t, uint32_t> panel_dtype;  // by offset
  for (const WeightMatrix& m : matrices) panel_dtype[m.offset] = panels.Of(m.dtype);
  for (const MatrixRead& read : MatrixReads()) {
    const auto it = panel_dtype.find(read.matrix.offset);
    if (it == panel_dtype.end()) continue;
    const uint32_t dtype = it->second;
    CommandImage& image = read.batch_image ? decode_batch_commands_ : commands_;
    uint8_t* at = image.commands.data() + read.command;
    lnpu_cmd_header header;
    std::memcpy(&header, at, sizeof header);
    const size_t field = header.opcode == LNPU_OP_MATMUL
                             ? offsetof(lnpu_cmd_matmul, weight_dtype)
                             : offsetof(lnpu_cmd_gather_rows, table_dtype);
    std::memcpy(at + field, &dtype, sizeof dtype);
  }
}

void Program::UseQ8_0For(absl::Span<const WeightMatrix> matrices,
                         absl::Span<const uint64_t> q8_0_offsets) {
  absl::flat_hash_map<uint64_t, uint64_t> new_offset;  // by old offset
  for (size_t i = 0; i < matrices.size(); ++i) new_offset[matrices[i].offset] = q8_0_offsets[i];
  for (const MatrixRead& read : MatrixReads()) {
    const auto it = new_offset.find(read.matrix.offset);
    if (it == new_offset.end() || read.matrix.dtype != LNPU_DTYPE_Q6_K) continue;
    CommandImage& image = read.batch_image ? decode_batch_commands_ : commands_;
    uint8_t* at = image.commands.data() + read.command;
    const uint32_t dtype = LNPU_DTYPE_Q8_0;
    std::memcpy(at + offsetof(lnpu_cmd_matmul, weight_dtype), &dtype, sizeof dtype);
    // The relocated field holds the offset in the weights buffer.
    std::memcpy(at + offsetof(lnpu_cmd_matmul, weight), &it->second, sizeof it->second);
  }
}

void Program::Record(absl::Span<const uint64_t> buffer_addrs, absl::Span<uint8_t> image) const {
  commands_.Record(buffer_addrs, command_bytes(), image);
}

uint32_t Program::decode_batch_command_bytes(size_t graphs) const {
  if (graphs == 0) return 0;
  const StreamSpec& last = decode_batches_[graphs - 1].streams.back();
  return last.offset + last.size;
}

void Program::RecordDecodeBatches(size_t graphs, absl::Span<const uint64_t> lane_buffer_addrs,
                                  absl::Span<uint8_t> image) const {
  decode_batch_commands_.Record(lane_buffer_addrs, decode_batch_command_bytes(graphs), image);
}

size_t Program::verify_graph(uint32_t rows) const {
  return std::lower_bound(verify_graphs_.begin(), verify_graphs_.end(),
                          std::make_pair(rows, size_t{0}))
      ->second;
}

}  // namespace lnpu::runtime
