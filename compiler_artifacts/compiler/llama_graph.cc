#include "compiler_artifacts/compiler/llama_graph.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compiler_artifacts/compiler/command_stream_builder.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::compiler {
namespace {

constexpr uint64_t kRegionAlignment = 64;
constexpr uint64_t kF32 = 4;

fb::Operand At(uint32_t buffer, uint64_t offset) {
  return fb::Operand(buffer, offset);
}

// A graph's compute commands cut into jobs of bounded estimated work, so
// that no job of a long prefill runs into the device's job timeout on a
// slow device. The jobs run in order, chained by fences, so a cut may fall
// between any two commands.
class ComputeJobs {
 public:
  explicit ComputeJobs(uint64_t max_job_macs) : max_job_macs_(max_job_macs) {
    jobs_.emplace_back(DRM_LNPU_ENGINE_COMPUTE);
  }

  // The stream that takes the next command, which costs `macs`.
  CommandStreamBuilder& For(uint64_t macs) {
    if (current_macs_ > 0 && current_macs_ + macs > max_job_macs_) {
      jobs_.emplace_back(DRM_LNPU_ENGINE_COMPUTE);
      jobs_.back().set_layer(layer_);
      current_macs_ = 0;
    }
    current_macs_ += macs;
    return jobs_.back();
  }

  // The layer of the commands that follow (-1: outside the layers).
  void SetLayer(int32_t layer) {
    layer_ = layer;
    jobs_.back().set_layer(layer);
  }

  void Serialize(flatbuffers::FlatBufferBuilder& builder,
                 std::vector<flatbuffers::Offset<fb::CommandStream>>* streams) const {
    for (const CommandStreamBuilder& job : jobs_) {
      streams->push_back(job.Serialize(builder));
    }
  }

 private:
  const uint64_t max_job_macs_;
  std::vector<CommandStreamBuilder> jobs_;
  uint64_t current_macs_ = 0;
  int32_t layer_ = -1;
};

}  // namespace

ActivationLayout PlanActivations(const LlamaHParams& h, uint32_t max_tokens) {
  ActivationLayout layout;
  uint64_t end = 0;
  auto region = [&end](uint64_t bytes) {
    const uint64_t start = end;
    end = (end + bytes + kRegionAlignment - 1) / kRegionAlignment *
          kRegionAlignment;
    return start;
  };
  const uint64_t t = max_tokens;
  layout.x = region(t * h.dim * kF32);
  layout.normed = region(t * h.dim * kF32);
  layout.q = region(t * h.q_dim() * kF32);
  layout.attn = region(t * h.q_dim() * kF32);
  layout.gate = region(t * h.ffn_dim * kF32);
  layout.up = region(t * h.ffn_dim * kF32);
  layout.swiglu = region(t * h.ffn_dim * kF32);
  layout.last = region(uint64_t{h.dim} * kF32);
  layout.staging = region(2ull * h.n_layers * t * h.kv_dim() * kF32);
  layout.size = end;
  return layout;
}

uint64_t GraphBuffers::LayerOffset(const LlamaHParams& h, uint32_t layer) const {
  uint64_t offset = 0;
  for (uint32_t l = 0; l < layer; ++l) offset += 2ull * LayerSlots(h, l) * kv_row_bytes;
  return offset;
}

namespace {

// The rows of a batched decode graph belong to different sequences (lanes,
// model.fbs Model.decode_batches); absent for a graph of one sequence.
struct LaneSplit {
  uint32_t buffers_per_lane = 0;  // operand buffer i of lane b is b * this + i
};

flatbuffers::Offset<fb::Graph> BuildGraph(
    flatbuffers::FlatBufferBuilder& builder, const LlamaHParams& h,
    const WeightPlan& weights, const GraphBuffers& buffers,
    const std::string& name, fb::GraphKind kind, uint32_t tokens,
    const GraphIoLayout& io, uint64_t max_job_macs, const std::optional<LaneSplit>& lanes) {
  const uint32_t act = buffers.activations;
  const ActivationLayout& a = buffers.layout;
  const uint32_t t = tokens;
  const uint64_t kv_row_bytes = uint64_t{h.kv_dim()} * kF32;
  // Staging block b (= 2 * layer + {0: K, 1: V}) holds this graph's T rows
  // in F32; the cache holds them in kv_dtype.
  const uint64_t staging_block = t * kv_row_bytes;
  auto staging = [&](uint32_t layer, uint32_t kv) {
    return At(act, a.staging + (2ull * layer + kv) * staging_block);
  };
  auto cache = [&](uint32_t layer, uint32_t kv) {
    return At(buffers.kv_cache,
              buffers.LayerOffset(h, layer) +
                  kv * uint64_t{buffers.LayerSlots(h, layer)} * buffers.kv_row_bytes);
  };
  const fb::Operand x = At(act, a.x);
  const fb::Operand normed = At(act, a.normed);
  const fb::Operand q = At(act, a.q);
  // `op` (one sequence's buffer) in the buffers of lane `lane`.
  auto in_lane = [&](fb::Operand op, uint32_t lane) {
    return fb::Operand(lane * lanes->buffers_per_lane + op.buffer(), op.offset());
  };
  const uint64_t q_row_bytes = uint64_t{h.q_dim()} * kF32;

  ComputeJobs jobs(max_job_macs);
  // Element-wise commands cost one unit per element touched.
  const uint64_t row_work = uint64_t{t} * h.dim;
  // dst[rows][n] (+)= src[rows][k] x weight rows [first, first + n).
  auto matmul_rows = [&](fb::Operand src, uint32_t k, const PlannedWeight& w, uint64_t first,
                         uint32_t n, fb::Operand dst, uint32_t rows, bool accumulate,
                         const PlannedWeight* bias = nullptr) {
    jobs.For(uint64_t{rows} * k * n).Matmul({.src = src,
                    .weight = w.rows_operand(first),
                    .dst = dst,
                    .rows = rows,
                    .k = k,
                    .n = n,
                    .weight_dtype = w.dtype,
                    .accumulate = accumulate,
                    .bias = bias ? std::optional(bias->operand())
                                 : std::nullopt});
  };
  auto matmul = [&](fb::Operand src, uint32_t k, const PlannedWeight& w,
                    fb::Operand dst, uint32_t rows, bool accumulate,
                    const PlannedWeight* bias = nullptr) {
    matmul_rows(src, k, w, 0, static_cast<uint32_t>(w.shape[0]), dst, rows, accumulate, bias);
  };
  // phi3 LongRoPE: the short factors while the compiled cache fits the
  // trained context, the long ones beyond it.
  const PlannedWeight* freq_factors = weights.Find(kRopeFreqsName);
  if (h.fused_projections) {
    const PlannedWeight* longrope = weights.Find(
        buffers.capacity > h.rope_original_context ? kRopeFactorsLongName : kRopeFactorsShortName);
    if (longrope != nullptr) freq_factors = longrope;
  }
  // RoPE's attention factor scales the rotated (here: all) dimensions of Q
  // and K, so every score by its square. Gemma fixes its own query scale.
  const float attention_scale = h.gemma.enabled
                                    ? h.gemma.query_scale
                                    : h.rope_attn_factor * h.rope_attn_factor /
                                          std::sqrt(static_cast<float>(h.head_dim));
  // Gemma 3's sliding-window layers rotate with their own base and no
  // frequency scaling.
  auto rope = [&](fb::Operand data, uint32_t heads, uint32_t layer) {
    const bool local = h.gemma.IsLocalLayer(layer) && h.gemma.rope_theta_local > 0;
    jobs.For(uint64_t{t} * heads * h.head_dim).Rope({.data = data,
                  .positions = io.positions,
                  .rows = t,
                  .heads = heads,
                  .head_dim = h.head_dim,
                  .rope_dim = h.rope_dim,
                  .theta_base = local ? h.gemma.rope_theta_local : h.rope_theta,
                  .freq_scale = local ? 1.0f : h.rope_freq_scale,
                  .mode = h.rope_mode,
                  .freq_factors = freq_factors && !local
                                      ? std::optional(freq_factors->operand())
                                      : std::nullopt});
  };
  // x += out[t][dim], the output of a block's last projection; Gemma
  // normalizes it with `post_norm` first (out is then normed in place).
  auto add_block_output = [&](fb::Operand src, uint32_t k, const PlannedWeight& w,
                              uint32_t layer, const char* post_norm) {
    if (!h.gemma.enabled) {
      matmul(src, k, w, x, t, true);
      return;
    }
    matmul(src, k, w, normed, t, false);
    jobs.For(row_work).RmsNorm({.src = normed,
                                .weight = weights.Get(LayerTensorName(layer, post_norm)).operand(),
                                .dst = normed,
                                .rows = t,
                                .dim = h.dim,
                                .eps = h.norm_eps});
    jobs.For(row_work).Add({.a = x, .b = normed, .dst = x, .count = t * h.dim});
  };
  const PlannedWeight& embedding = weights.Get("token_embd.weight");
  jobs.For(row_work).GatherRows({.table = embedding.operand(),
                      .indices = io.tokens,
                      .dst = x,
                      .table_dtype = embedding.dtype,
                      .row_len = h.dim,
                      .table_rows = h.vocab_size,
                      .count = t});
  if (h.gemma.enabled) {
    jobs.For(row_work).Scale({.src = x,
                              .dst = x,
                              .count = t * h.dim,
                              .scale = std::sqrt(static_cast<float>(h.dim))});
  }
  for (uint32_t l = 0; l < h.n_layers; ++l) {
    jobs.SetLayer(static_cast<int32_t>(l));
    jobs.For(row_work).RmsNorm({.src = x,
                     .weight = weights.Get(LayerTensorName(l, "attn_norm")).operand(),
                     .dst = normed,
                     .rows = t,
                     .dim = h.dim,
                     .eps = h.norm_eps});
    if (h.fused_projections) {
      const PlannedWeight& qkv = weights.Get(LayerTensorName(l, "attn_qkv"));
      matmul_rows(normed, h.dim, qkv, 0, h.q_dim(), q, t, false);
      matmul_rows(normed, h.dim, qkv, h.q_dim(), h.kv_dim(), staging(l, 0), t, false);
      matmul_rows(normed, h.dim, qkv, uint64_t{h.q_dim()} + h.kv_dim(), h.kv_dim(),
                  staging(l, 1), t, false);
    } else {
      matmul(normed, h.dim, weights.Get(LayerTensorName(l, "attn_q")), q, t,
             false, weights.Find(LayerTensorName(l, "attn_q", "bias")));
      matmul(normed, h.dim, weights.Get(LayerTensorName(l, "attn_k")),
             staging(l, 0), t, false,
             weights.Find(LayerTensorName(l, "attn_k", "bias")));
      matmul(normed, h.dim, weights.Get(LayerTensorName(l, "attn_v")),
             staging(l, 1), t, false,
             weights.Find(LayerTensorName(l, "attn_v", "bias")));
    }
    if (h.qk_norm) {
      // Per-head RMS norm: each head of each row is a row of head_dim.
      jobs.For(uint64_t{t} * h.q_dim()).RmsNorm({.src = q,
                       .weight = weights.Get(LayerTensorName(l, "attn_q_norm")).operand(),
                       .dst = q,
                       .rows = t * h.n_heads,
                       .dim = h.head_dim,
                       .eps = h.norm_eps});
      jobs.For(uint64_t{t} * h.kv_dim()).RmsNorm({.src = staging(l, 0),
                       .weight = weights.Get(LayerTensorName(l, "attn_k_norm")).operand(),
                       .dst = staging(l, 0),
                       .rows = t * h.n_kv_heads,
                       .dim = h.head_dim,
                       .eps = h.norm_eps});
    }
    if (h.no_rope_layer_step == 0 || (l + 1) % h.no_rope_layer_step != 0) {
      rope(q, h.n_heads, l);
      rope(staging(l, 0), h.n_kv_heads, l);
    }
    // Scores and weighted values over at most every slot and new row; in
    // a batched graph each row over its own lane's cache. A layer in the
    // window ring attends the ring, whose slots hold the positions before
    // this run (the run's own rows are read from staging).
    const bool in_ring = buffers.InWindowRing(h, l);
    const uint32_t slots = buffers.LayerSlots(h, l);
    const AttentionArgs attention = {
        .q = q,
        .k_new = staging(l, 0),
        .v_new = staging(l, 1),
        .k_cache = cache(l, 0),
        .v_cache = cache(l, 1),
        .mask = in_ring ? buffers.window_ring->mask : buffers.mask,
        .dst = At(act, a.attn),
        .rows = t,
        .capacity = slots,
        .heads = h.n_heads,
        .kv_heads = h.n_kv_heads,
        .head_dim = h.head_dim,
        .kv_dtype = buffers.kv_dtype,
        .scale = attention_scale,
        .softcap = h.gemma.attn_softcap,
        .window = h.gemma.IsLocalLayer(l) && buffers.slot_positions
                      ? std::optional(AttentionArgs::Window{
                            .positions = io.positions,
                            .slot_positions = in_ring ? buffers.window_ring->slot_positions
                                                      : *buffers.slot_positions,
                            .window = h.gemma.sliding_window})
                      : std::nullopt};
    auto attention_macs = [&](uint32_t rows) {
      return 2ull * rows * (slots + rows) * h.n_heads * h.head_dim;
    };
    if (!lanes) {
      jobs.For(attention_macs(t)).Attention(attention);
    } else {
      for (uint32_t b = 0; b < t; ++b) {
        AttentionArgs row = attention;
        row.q = At(act, a.q + b * q_row_bytes);
        row.k_new = At(act, attention.k_new.offset() + b * kv_row_bytes);
        row.v_new = At(act, attention.v_new.offset() + b * kv_row_bytes);
        row.k_cache = in_lane(attention.k_cache, b);
        row.v_cache = in_lane(attention.v_cache, b);
        row.mask = in_lane(attention.mask, b);
        row.dst = At(act, a.attn + b * q_row_bytes);
        if (row.window) {
          row.window->positions = fb::Operand(io.positions.buffer(),
                                              io.positions.offset() + b * sizeof(int32_t));
          row.window->slot_positions = in_lane(row.window->slot_positions, b);
        }
        row.rows = 1;
        jobs.For(attention_macs(1)).Attention(row);
      }
    }
    add_block_output(At(act, a.attn), h.q_dim(), weights.Get(LayerTensorName(l, "attn_output")),
                     l, "post_attention_norm");
    jobs.For(row_work).RmsNorm({.src = x,
                     .weight = weights.Get(LayerTensorName(l, "ffn_norm")).operand(),
                     .dst = normed,
                     .rows = t,
                     .dim = h.dim,
                     .eps = h.norm_eps});
    if (h.fused_projections) {
      const PlannedWeight& gate_up = weights.Get(LayerTensorName(l, "ffn_up"));
      matmul_rows(normed, h.dim, gate_up, 0, h.ffn_dim, At(act, a.gate), t, false);
      matmul_rows(normed, h.dim, gate_up, h.ffn_dim, h.ffn_dim, At(act, a.up), t, false);
    } else {
      matmul(normed, h.dim, weights.Get(LayerTensorName(l, "ffn_gate")),
             At(act, a.gate), t, false);
      matmul(normed, h.dim, weights.Get(LayerTensorName(l, "ffn_up")),
             At(act, a.up), t, false);
    }
    const SwigluArgs gated{.gate = At(act, a.gate),
                           .up = At(act, a.up),
                           .dst = At(act, a.swiglu),
                           .count = t * h.ffn_dim};
    if (h.gemma.enabled) {
      jobs.For(uint64_t{t} * h.ffn_dim).Geglu(gated);
    } else {
      jobs.For(uint64_t{t} * h.ffn_dim).Swiglu(gated);
    }
    add_block_output(At(act, a.swiglu), h.ffn_dim, weights.Get(LayerTensorName(l, "ffn_down")), l,
                     "post_ffw_norm");
  }
  jobs.SetLayer(-1);
  // The rows whose logits are computed: every row of a Verify graph or a
  // decode batch (F32[rows][vocab_size]), otherwise the one io.last_row
  // names, gathered into `last`.
  const bool all_rows = kind == fb::GraphKind::Verify || lanes.has_value();
  const uint32_t logit_rows = all_rows ? t : 1;
  const fb::Operand last = all_rows ? normed : At(act, a.last);
  if (!all_rows) {
    jobs.For(h.dim).GatherRows({.table = x,
                                .indices = io.last_row,
                                .dst = last,
                                .table_dtype = LNPU_DTYPE_F32,
                                .row_len = h.dim,
                                .table_rows = t,
                                .count = 1});
  }
  jobs.For(uint64_t{logit_rows} * h.dim)
      .RmsNorm({.src = all_rows ? x : last,
                .weight = weights.Get("output_norm.weight").operand(),
                .dst = last,
                .rows = logit_rows,
                .dim = h.dim,
                .eps = h.norm_eps});
  matmul(last, h.dim, weights.output(), io.logits, logit_rows, false);
  if (h.gemma.final_softcap > 0) {
    const uint32_t logits = logit_rows * h.vocab_size;
    jobs.For(logits).Scale({.src = io.logits,
                            .dst = io.logits,
                            .count = logits,
                            .scale = 1.0f,
                            .softcap = h.gemma.final_softcap});
  }

  // One scatter per run of consecutive layers with the same slots (all
  // layers without a window ring): block b of a run is its layer
  // first + b / 2's K (b even) or V, in staging and in the cache alike.
  CommandStreamBuilder dma(DRM_LNPU_ENGINE_DMA);
  for (uint32_t first = 0, end = 0; first < h.n_layers; first = end) {
    const bool in_ring = buffers.InWindowRing(h, first);
    end = first + 1;
    while (end < h.n_layers && buffers.InWindowRing(h, end) == in_ring) ++end;
    const uint32_t slots = buffers.LayerSlots(h, first);
    const fb::Operand indices = in_ring ? *io.window_slots : io.slots;
    const ScatterRowsArgs scatter = {
        .src = staging(first, 0),
        .dst = cache(first, 0),
        .indices = indices,
        .src_block_stride = staging_block,
        .dst_block_stride = uint64_t{slots} * buffers.kv_row_bytes,
        .row_bytes = static_cast<uint32_t>(kv_row_bytes),
        .rows = t,
        .blocks = 2 * (end - first),
        .dst_rows = slots,
        .f32_to_f16 = buffers.kv_dtype == LNPU_DTYPE_F16,
        .f32_to_i8 = buffers.kv_dtype == LNPU_DTYPE_I8,
        .group_len = buffers.kv_dtype == LNPU_DTYPE_I8 ? h.head_dim : 0};
    if (!lanes) {
      dma.ScatterRows(scatter);
      continue;
    }
    // Row b of every staging block into lane b's cache, at its index b.
    for (uint32_t b = 0; b < t; ++b) {
      ScatterRowsArgs row = scatter;
      row.src = At(act, scatter.src.offset() + b * kv_row_bytes);
      row.dst = in_lane(scatter.dst, b);
      row.indices = fb::Operand(indices.buffer(), indices.offset() + b * sizeof(int32_t));
      row.rows = 1;
      dma.ScatterRows(row);
    }
  }

  std::vector<flatbuffers::Offset<fb::CommandStream>> streams;
  jobs.Serialize(builder, &streams);
  streams.push_back(dma.Serialize(builder));
  const auto io_fb = fb::CreateGraphIo(builder, &io.tokens, &io.positions, &io.slots,
                                       lanes ? nullptr : &io.last_row, &io.logits,
                                       io.window_slots ? &*io.window_slots : nullptr);
  return fb::CreateGraphDirect(builder, name.c_str(), kind, tokens, &streams,
                               io_fb);
}

}  // namespace

flatbuffers::Offset<fb::Graph> BuildLlamaGraph(
    flatbuffers::FlatBufferBuilder& builder, const LlamaHParams& hparams,
    const WeightPlan& weights, const GraphBuffers& buffers,
    const std::string& name, fb::GraphKind kind, uint32_t tokens,
    const GraphIoLayout& io, uint64_t max_job_macs) {
  return BuildGraph(builder, hparams, weights, buffers, name, kind, tokens, io, max_job_macs,
                    std::nullopt);
}

flatbuffers::Offset<fb::Graph> BuildLlamaDecodeBatchGraph(
    flatbuffers::FlatBufferBuilder& builder, const LlamaHParams& hparams,
    const WeightPlan& weights, const GraphBuffers& buffers, const std::string& name,
    uint32_t lanes, uint32_t buffers_per_lane, const GraphIoLayout& io,
    uint64_t max_job_macs) {
  return BuildGraph(builder, hparams, weights, buffers, name, fb::GraphKind::Decode, lanes, io,
                    max_job_macs, LaneSplit{buffers_per_lane});
}

}  // namespace lnpu::compiler
