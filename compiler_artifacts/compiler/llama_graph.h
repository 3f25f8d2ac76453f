// Lowering of the llama-family forward pass (llama, qwen2) into one static
// graph: compute streams (one job each, run in order) and the DMA stream
// that scatters the new K/V rows into the cache.
#ifndef COMPILER_ARTIFACTS_COMPILER_LLAMA_GRAPH_H_
#define COMPILER_ARTIFACTS_COMPILER_LLAMA_GRAPH_H_

#include <cstdint>
#include <optional>
#include <string>

#include "compiler_artifacts/compiler/llama_source.h"
#include "compiler_artifacts/compiler/weight_plan.h"
#include "compiler_artifacts/format/model_generated.h"
#include "flatbuffers/flatbuffers.h"

namespace lnpu::compiler {

// Byte offsets of the scratch tensors in the Activations buffer, sized for
// graphs of up to `max_tokens` rows (all graphs share the buffer; a graph
// of T rows uses the first T rows of each region). Regions are 64-byte
// aligned.
struct ActivationLayout {
  uint64_t x = 0;        // F32[T][dim], the residual stream
  uint64_t normed = 0;   // F32[T][dim], RMS_NORM output
  uint64_t q = 0;        // F32[T][n_heads * head_dim]
  uint64_t attn = 0;     // F32[T][n_heads * head_dim], attention output
  uint64_t gate = 0;     // F32[T][ffn_dim]
  uint64_t up = 0;       // F32[T][ffn_dim]
  uint64_t swiglu = 0;   // F32[T][ffn_dim], SWIGLU (GEGLU for Gemma) output
  uint64_t last = 0;     // F32[1][dim], the row whose logits are computed
  uint64_t staging = 0;  // F32[n_layers][2 (K, V)][T][kv_dim], new K/V rows
  uint64_t size = 0;     // bytes of the whole buffer
};

ActivationLayout PlanActivations(const LlamaHParams& hparams,
                                 uint32_t max_tokens);

// The session buffers every graph refers to.
struct GraphBuffers {
  uint32_t activations = 0;  // buffer index, laid out by `layout`
  ActivationLayout layout;
  uint32_t kv_cache = 0;     // buffer index: [n_layers][2][capacity] rows
  uint32_t kv_dtype = 0;     // LNPU_DTYPE_F32, F16 or I8
  uint64_t kv_row_bytes = 0; // one slot of one layer's K (or V): KvRowBytes
  uint32_t capacity = 0;
  fb::Operand mask;          // U8[capacity]
  // I32[capacity], the position each slot holds: models with
  // sliding-window layers only.
  std::optional<fb::Operand> slot_positions;
  // The ring the sliding-window layers keep their K/V in (model.fbs
  // KvCache.window_ring_slots); absent when they use the whole cache.
  struct WindowRing {
    uint32_t slots = 0;
    fb::Operand mask;            // U8[slots]
    fb::Operand slot_positions;  // I32[slots]
  };
  std::optional<WindowRing> window_ring;

  // Whether layer `layer` keeps its K/V in the window ring.
  bool InWindowRing(const LlamaHParams& h, uint32_t layer) const {
    return window_ring.has_value() && h.gemma.IsLocalLayer(layer);
  }
  // Slots of layer `layer`'s K and V blocks: the ring's or `capacity`.
  uint32_t LayerSlots(const LlamaHParams& h, uint32_t layer) const {
    return InWindowRing(h, layer) ? window_ring->slots : capacity;
  }
  // Byte offset of layer `layer`'s K block in the cache (its V block
  // follows); LayerOffset(h, h.n_layers) is the size of the cache.
  uint64_t LayerOffset(const LlamaHParams& h, uint32_t layer) const;
};

// Where one graph's host-visible operands live (fb::GraphIo in the
// artifact).
struct GraphIoLayout {
  fb::Operand tokens;     // I32[tokens]
  fb::Operand positions;  // I32[tokens]
  fb::Operand slots;      // I32[tokens]
  fb::Operand last_row;   // I32[1]
  fb::Operand logits;     // F32[vocab_size]; a Verify graph's F32[tokens][vocab_size]
  std::optional<fb::Operand> window_slots;  // I32[tokens], with a window ring
};

// Builds the graph `name` of `tokens` rows reading its inputs and writing
// logits where `io` says: of the row io.last_row names, or of every row
// for a Verify graph. The compute commands are cut into consecutive
// streams of at most `max_job_macs` estimated multiply-adds each (a single
// command above the budget gets a stream of its own; max_job_macs >= 1).
flatbuffers::Offset<fb::Graph> BuildLlamaGraph(
    flatbuffers::FlatBufferBuilder& builder, const LlamaHParams& hparams,
    const WeightPlan& weights, const GraphBuffers& buffers,
    const std::string& name, fb::GraphKind kind, uint32_t tokens,
    const GraphIoLayout& io, uint64_t max_job_macs);

// Builds the batched decode graph `name` of `lanes` rows, row b the next
// token of lane b's sequence (model.fbs Model.decode_batches): `buffers`
// are one lane's, each lane has `buffers_per_lane` buffers, and the
// graph's scratch and `io` are lane 0's. io.tokens, io.positions and
// io.slots hold `lanes` entries, io.logits F32[lanes][vocab_size];
// io.last_row is unused. The activations must hold `lanes` rows.
flatbuffers::Offset<fb::Graph> BuildLlamaDecodeBatchGraph(
    flatbuffers::FlatBufferBuilder& builder, const LlamaHParams& hparams,
    const WeightPlan& weights, const GraphBuffers& buffers, const std::string& name,
    uint32_t lanes, uint32_t buffers_per_lane, const GraphIoLayout& io,
    uint64_t max_job_macs);

}  // namespace lnpu::compiler

#endif  // COMPILER_ARTIFACTS_COMPILER_LLAMA_GRAPH_H_
