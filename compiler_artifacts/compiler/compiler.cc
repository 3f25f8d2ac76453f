#include "compiler_artifacts/compiler/compiler.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_io.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/llama_graph.h"
#include "compiler_artifacts/compiler/llama_source.h"
#include "compiler_artifacts/compiler/weight_plan.h"
#include "compiler_artifacts/format/artifact_file.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "compiler_artifacts/format/artifact_writer.h"
#include "compiler_artifacts/format/model_generated.h"
#include "compiler_artifacts/format/vocabulary_table.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "flatbuffers/flatbuffers.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::compiler {
namespace {

constexpr char kProducer[] = "lnpu compiler (artifact format 1.0)";
constexpr uint64_t kIoAlignment = 64;

// The Prefill token counts: chunks clamped to max_prompt_len, sorted,
// without duplicates.
absl::StatusOr<std::vector<uint32_t>> PrefillSizes(
    const CompileOptions& options) {
  if (options.max_prompt_len == 0 || options.min_response_len == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_prompt_len (%u) and min_response_len (%u) must be at least 1",
        options.max_prompt_len, options.min_response_len));
  }
  const uint64_t capacity =
      uint64_t{options.max_prompt_len} + options.min_response_len;
  if (capacity > artifact::kMaxModelDimension) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_prompt_len + min_response_len = %u KV-cache slots exceeds the "
        "limit of %u",
        capacity, artifact::kMaxModelDimension));
  }
  if (options.prefill_chunks.empty()) {
    return absl::InvalidArgumentError(
        "prefill_chunks is empty; give at least one prefill chunk size, "
        "e.g. 16,64,256");
  }
  std::vector<uint32_t> sizes;
  for (uint32_t chunk : options.prefill_chunks) {
    if (chunk == 0) {
      return absl::InvalidArgumentError(
          "prefill chunk size 0 is invalid; chunk sizes must be >= 1");
    }
    sizes.push_back(std::min(chunk, options.max_prompt_len));
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// The lane counts of the batched decode graphs: sorted, without duplicates
// and without 1 (the ordinary decode graph).
absl::StatusOr<std::vector<uint32_t>> DecodeBatchSizes(const CompileOptions& options) {
  std::vector<uint32_t> sizes;
  for (uint32_t lanes : options.decode_batches) {
    if (lanes == 0 || lanes > artifact::kMaxDecodeBatchLanes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "decode batch of %u lanes is invalid; give lane counts in [1, %u], e.g. 1,2,4",
          lanes, artifact::kMaxDecodeBatchLanes));
    }
    if (lanes > 1) sizes.push_back(lanes);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// The data section is checksummed in pieces of this size (model.fbs
// DataChecksums): small enough to name the corrupt weight, large enough
// that the table stays small (4 bytes per MiB).
constexpr uint32_t kDataChecksumChunk = 1 << 20;

// Bump allocator for the Io buffer.
class IoAllocator {
 public:
  explicit IoAllocator(uint32_t buffer) : buffer_(buffer) {}
  fb::Operand Allocate(uint64_t bytes) {
    const fb::Operand operand(buffer_, end_);
    end_ = (end_ + bytes + kIoAlignment - 1) / kIoAlignment * kIoAlignment;
    return operand;
  }
  uint64_t size() const { return end_; }

 private:
  uint32_t buffer_;
  uint64_t end_ = 0;
};

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

absl::StatusOr<CompileOptions::WeightType> ParseWeightType(
    const std::string& name) {
  using WeightType = CompileOptions::WeightType;
  if (name == "auto") return WeightType::kAuto;
  if (name == "keep") return WeightType::kKeep;
  if (name == "f32") return WeightType::kF32;
  if (name == "f16") return WeightType::kF16;
  if (name == "q8") return WeightType::kQ8;
  if (name == "q4") return WeightType::kQ4;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown weight type '", name,
      "': expected auto, keep, q8, q4, f16 or f32"));
}

std::vector<uint32_t> VerifyGraphRows(uint32_t verify_rows) {
  std::vector<uint32_t> rows;
  for (uint32_t r = 2; r < verify_rows; r *= 2) rows.push_back(r);
  if (verify_rows > 0) rows.push_back(verify_rows);
  return rows;
}

absl::Status CompileGguf(const std::string& gguf_path,
                         const std::string& output_path,
                         const CompileOptions& options) {
  LNPU_ASSIGN_OR_RETURN(std::vector<uint32_t> prefill_sizes, PrefillSizes(options));
  LNPU_ASSIGN_OR_RETURN(std::vector<uint32_t> batch_sizes, DecodeBatchSizes(options));
  // Rows of the largest graph (prefill chunk, decode batch or verify
  // graph): the activations hold that many.
  const uint32_t max_rows = std::max({prefill_sizes.back(),
                                      batch_sizes.empty() ? 1u : batch_sizes.back(),
                                      options.verify_rows});
  if (options.max_job_macs == 0) {
    return absl::InvalidArgumentError(
        "max_job_macs is 0; give the largest compute job in multiply-adds "
        "(>= 1; the default is 4 G)");
  }

  LNPU_RETURN_IF_ERROR(CheckOutputPath(output_path, {gguf_path}, "artifact"));

  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> file, gguf::GgufFile::Open(gguf_path));
  LNPU_ASSIGN_OR_RETURN(Vocabulary tokenizer, ReadVocabulary(*file));
  LNPU_ASSIGN_OR_RETURN(std::string chat_template, ReadChatTemplate(*file));
  if (options.validate_vocabulary) {
    if (absl::Status valid = options.validate_vocabulary(tokenizer); !valid.ok()) {
      return absl::Status(valid.code(),
                          absl::StrCat(gguf_path, ": the tokenizer would not load: ",
                                       valid.message(), "; fix the model's tokenizer.ggml.* keys"));
    }
  }
  LNPU_ASSIGN_OR_RETURN(LlamaHParams hparams,
                        ReadLlamaHParams(*file, static_cast<uint32_t>(tokenizer.tokens.size())));
  const uint32_t source_layers = hparams.n_layers;
  if (options.keep_layers > source_layers) {
    return absl::InvalidArgumentError(
        absl::StrFormat("keep_layers %u exceeds the model's %u layers; keep at most %u (0 = all)",
                        options.keep_layers, source_layers, source_layers));
  }
  if (options.keep_layers > 0) hparams.n_layers = options.keep_layers;
  LNPU_ASSIGN_OR_RETURN(WeightPlan weights,
                        WeightPlan::Create(*file, hparams, options.weights, source_layers));

  // Buffers: 0 weights, 1 activations, 2 KV cache, 3 I/O.
  constexpr uint32_t kWeightsBuffer = 0, kActivationsBuffer = 1,
                     kKvCacheBuffer = 2, kIoBuffer = 3, kBufferCount = 4;
  GraphBuffers buffers;
  buffers.activations = kActivationsBuffer;
  buffers.capacity = options.max_prompt_len + options.min_response_len;
  if (options.verify_rows > buffers.capacity) {
    return absl::InvalidArgumentError(
        absl::StrFormat("verify_rows %u exceeds the KV-cache capacity of %u slots; use fewer rows "
                        "(a few more than the proposed tokens per step, e.g. 8)",
                        options.verify_rows, buffers.capacity));
  }
  buffers.layout = PlanActivations(hparams, max_rows);
  buffers.kv_cache = kKvCacheBuffer;
  switch (options.kv_dtype) {
    case CompileOptions::KvType::kF32: buffers.kv_dtype = LNPU_DTYPE_F32; break;
    case CompileOptions::KvType::kF16: buffers.kv_dtype = LNPU_DTYPE_F16; break;
    case CompileOptions::KvType::kQ8: buffers.kv_dtype = LNPU_DTYPE_I8; break;
  }
  buffers.kv_row_bytes = artifact::KvRowBytes(
      buffers.kv_dtype, hparams.n_kv_heads, hparams.head_dim);
  if (buffers.kv_row_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "an int8 KV cache (--kv-dtype q8) needs head_dim to be a multiple of "
        "4; this model's is %u: use --kv-dtype f16",
        hparams.head_dim));
  }
  IoAllocator io(kIoBuffer);
  const fb::Operand logits = io.Allocate(uint64_t{hparams.vocab_size} * 4);
  buffers.mask = io.Allocate(buffers.capacity);
  // Sliding-window layers compare slot positions with the window (also
  // when the cache is smaller than the window: a ring keeps its sink slots
  // for good).
  if (hparams.gemma.sliding_window > 0) {
    buffers.slot_positions = io.Allocate(uint64_t{buffers.capacity} * 4);
  }
  bool has_local_layers = false;
  for (uint32_t l = 0; l < hparams.n_layers; ++l) {
    has_local_layers = has_local_layers || hparams.gemma.IsLocalLayer(l);
  }
  const uint64_t ring_slots =
      uint64_t{hparams.gemma.sliding_window} + std::max(options.verify_rows, 1u) - 1;
  if (options.window_ring && has_local_layers && ring_slots < buffers.capacity) {
    const uint32_t slots = static_cast<uint32_t>(ring_slots);
    buffers.window_ring = GraphBuffers::WindowRing{
        .slots = slots, .mask = io.Allocate(slots), .slot_positions = io.Allocate(slots * 4ull)};
  }
  const uint64_t kv_bytes = buffers.LayerOffset(hparams, hparams.n_layers);

  struct GraphSpec {
    std::string name;
    fb::GraphKind kind;
    uint32_t tokens;
    GraphIoLayout io;
  };
  std::vector<GraphSpec> specs;
  for (uint32_t size : prefill_sizes) {
    specs.push_back({absl::StrCat("prefill_", size), fb::GraphKind::Prefill,
                     size, {}});
  }
  specs.push_back({"decode", fb::GraphKind::Decode, 1, {}});
  for (uint32_t rows : VerifyGraphRows(options.verify_rows)) {
    specs.push_back({absl::StrCat("verify_", rows), fb::GraphKind::Verify, rows, {}});
  }
  // The Verify graphs run one at a time: they share the logits of the
  // largest.
  const fb::Operand verify_logits =
      io.Allocate(uint64_t{options.verify_rows} * hparams.vocab_size * 4);
  for (GraphSpec& spec : specs) {
    const uint64_t rows_bytes = uint64_t{spec.tokens} * 4;
    spec.io.tokens = io.Allocate(rows_bytes);
    spec.io.positions = io.Allocate(rows_bytes);
    spec.io.slots = io.Allocate(rows_bytes);
    if (buffers.window_ring) spec.io.window_slots = io.Allocate(rows_bytes);
    spec.io.last_row = io.Allocate(4);
    spec.io.logits = spec.kind == fb::GraphKind::Verify ? verify_logits : logits;
  }
  std::vector<GraphSpec> batch_specs;
  for (uint32_t lanes : batch_sizes) {
    GraphSpec spec{absl::StrCat("decode_batch_", lanes), fb::GraphKind::Decode, lanes, {}};
    const uint64_t rows_bytes = uint64_t{lanes} * 4;
    spec.io.tokens = io.Allocate(rows_bytes);
    spec.io.positions = io.Allocate(rows_bytes);
    spec.io.slots = io.Allocate(rows_bytes);
    if (buffers.window_ring) spec.io.window_slots = io.Allocate(rows_bytes);
    spec.io.logits = io.Allocate(rows_bytes * hparams.vocab_size);
    batch_specs.push_back(std::move(spec));
  }
  // Element counts travel in 32-bit command fields.
  const uint64_t widest_row =
      std::max({hparams.dim, hparams.q_dim(), hparams.ffn_dim});
  if (uint64_t{max_rows} * widest_row > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a graph of %u rows x %u elements per row exceeds the 32-bit element counts of the "
        "command set; use smaller prefill chunks, decode batches or verify rows",
        max_rows, widest_row));
  }
  for (uint64_t size : {buffers.layout.size, kv_bytes, io.size()}) {
    if (size > artifact::kMaxBufferSize) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a session buffer would need %u bytes (limit %u); reduce "
          "max_prompt_len, min_response_len or the prefill chunk sizes",
          size, artifact::kMaxBufferSize));
    }
  }

  flatbuffers::FlatBufferBuilder builder(1 << 20);
  const auto hparams_fb = SerializeHParams(hparams, builder);
  const auto tokenizer_fb = artifact::SerializeVocabulary(tokenizer, chat_template, builder);
  const auto weights_fb = weights.Serialize(builder);
  const std::vector<flatbuffers::Offset<fb::Buffer>> buffer_list = {
      fb::CreateBufferDirect(builder, "weights", fb::BufferKind::Weights,
                             weights.data_size()),
      fb::CreateBufferDirect(builder, "activations",
                             fb::BufferKind::Activations, buffers.layout.size),
      fb::CreateBufferDirect(builder, "kv_cache", fb::BufferKind::KvCache,
                             kv_bytes),
      fb::CreateBufferDirect(builder, "io", fb::BufferKind::Io, io.size()),
  };
  static_assert(kIoBuffer + 1 == kBufferCount);
  static_assert(kWeightsBuffer == 0, "buffers[0] must be the weights");
  flatbuffers::Offset<flatbuffers::Vector<uint32_t>> layer_slots;
  if (buffers.window_ring) {
    std::vector<uint32_t> slots;
    for (uint32_t l = 0; l < hparams.n_layers; ++l) {
      slots.push_back(buffers.LayerSlots(hparams, l));
    }
    layer_slots = builder.CreateVector(slots);
  }
  const GraphBuffers::WindowRing* ring = buffers.window_ring ? &*buffers.window_ring : nullptr;
  const auto kv_cache_fb = fb::CreateKvCache(
      builder, buffers.capacity, options.max_prompt_len, options.min_response_len, buffers.kv_dtype,
      kKvCacheBuffer, &buffers.mask, buffers.slot_positions ? &*buffers.slot_positions : nullptr,
      ring ? ring->slots : 0, ring ? hparams.gemma.sliding_window : 0,
      ring ? &ring->mask : nullptr, ring ? &ring->slot_positions : nullptr, layer_slots);
  std::vector<flatbuffers::Offset<fb::Graph>> graphs;
  for (const GraphSpec& spec : specs) {
    graphs.push_back(BuildLlamaGraph(builder, hparams, weights, buffers,
                                     spec.name, spec.kind, spec.tokens,
                                     spec.io, options.max_job_macs));
  }
  std::vector<flatbuffers::Offset<fb::Graph>> decode_batches;
  for (const GraphSpec& spec : batch_specs) {
    decode_batches.push_back(BuildLlamaDecodeBatchGraph(builder, hparams, weights, buffers,
                                                        spec.name, spec.tokens, kBufferCount,
                                                        spec.io, options.max_job_macs));
  }
  // Placeholders: the writer fills in each chunk's CRC-32C as the weights
  // stream through it.
  const uint64_t checksum_chunks =
      (weights.data_size() + kDataChecksumChunk - 1) / kDataChecksumChunk;
  const auto checksums_fb = fb::CreateDataChecksums(
      builder, kDataChecksumChunk,
      builder.CreateVector(std::vector<uint32_t>(checksum_chunks, 0)));
  // The model's children are serialized one statement at a time: the order
  // in which function arguments are evaluated is unspecified (GCC takes
  // them in another order on aarch64 than on x86-64), and the artifact
  // must be the same bytes on every host. This is the order x86-64 took.
  const flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Graph>>>
      decode_batches_fb = decode_batches.empty() ? 0 : builder.CreateVector(decode_batches);
  const auto source_fb = builder.CreateString(BaseName(gguf_path));
  const auto producer_fb = builder.CreateString(kProducer);
  const auto graphs_fb = builder.CreateVector(graphs);
  const auto buffers_fb = builder.CreateVector(buffer_list);
  const auto model = fb::CreateModel(builder, hparams_fb, tokenizer_fb, weights_fb, buffers_fb,
                                     kv_cache_fb, graphs_fb, producer_fb, source_fb,
                                     checksums_fb, decode_batches_fb);
  fb::FinishModelBuffer(builder, model);
  const absl::Span<const uint8_t> metadata(builder.GetBufferPointer(),
                                           builder.GetSize());

  // The reader's checks, run before anything is written: a compiler bug
  // must not produce an artifact the runtime refuses.
  flatbuffers::Verifier verifier(metadata.data(), metadata.size());
  if (!fb::VerifyModelBuffer(verifier)) {
    return absl::InternalError("compiler produced an invalid Model flatbuffer");
  }
  if (auto s = artifact::VerifyModel(*fb::GetModel(metadata.data()),
                                     weights.data_size());
      !s.ok()) {
    return absl::InternalError(
        absl::StrCat("compiler produced an artifact that fails verification: ",
                     s.message()));
  }

  LNPU_ASSIGN_OR_RETURN(
      std::unique_ptr<artifact::ArtifactWriter> writer,
      artifact::ArtifactWriter::Create(output_path, metadata, weights.data_size()));
  LNPU_RETURN_IF_ERROR(weights.Write(*file, *writer, options.progress));
  return writer->Commit();
}

}  // namespace lnpu::compiler
