#include "compiler_artifacts/format/artifact_verifier.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/quant_blocks.h"
#include "base/status_macros.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::artifact {
namespace {

template <typename... Args>
absl::Status Invalid(const absl::FormatSpec<Args...>& format,
                     const Args&... args) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid artifact: ", absl::StrFormat(format, args...)));
}

bool PositiveFinite(float value) { return std::isfinite(value) && value > 0; }

absl::Status VerifyHParams(const fb::HParams* h) {
  if (h == nullptr) return Invalid("hparams missing");
  if (h->architecture() == nullptr || h->architecture()->size() == 0) {
    return Invalid("hparams.architecture is empty");
  }
  const struct {
    const char* name;
    uint32_t value;
  } dims[] = {{"vocab_size", h->vocab_size()}, {"dim", h->dim()},
              {"n_layers", h->n_layers()},     {"n_heads", h->n_heads()},
              {"n_kv_heads", h->n_kv_heads()}, {"head_dim", h->head_dim()},
              {"ffn_dim", h->ffn_dim()},       {"rope_dim", h->rope_dim()}};
  for (const auto& d : dims) {
    if (d.value == 0 || d.value > kMaxModelDimension) {
      return Invalid("hparams.%s is %u, must be in [1, %u]", d.name, d.value,
                     kMaxModelDimension);
    }
  }
  if (h->n_heads() % h->n_kv_heads() != 0) {
    return Invalid("hparams.n_heads %u is not a multiple of n_kv_heads %u",
                   h->n_heads(), h->n_kv_heads());
  }
  // head_dim * n_heads may differ from dim (qwen3: attention.key_length).
  if (uint64_t{h->head_dim()} * h->n_heads() > kMaxModelDimension) {
    return Invalid("hparams.head_dim %u * n_heads %u exceeds %u", h->head_dim(), h->n_heads(),
                   kMaxModelDimension);
  }
  if (h->rope_dim() % 2 != 0 || h->rope_dim() > h->head_dim()) {
    return Invalid("hparams.rope_dim %u must be even and <= head_dim %u",
                   h->rope_dim(), h->head_dim());
  }
  if (h->rope_mode() > fb::RopeMode::MAX) {
    return Invalid("hparams.rope_mode %d is unknown",
                   static_cast<int>(h->rope_mode()));
  }
  if (!PositiveFinite(h->rope_theta()) || !PositiveFinite(h->rope_freq_scale())) {
    return Invalid("hparams.rope_theta %g and rope_freq_scale %g must be > 0",
                   h->rope_theta(), h->rope_freq_scale());
  }
  if (!PositiveFinite(h->norm_eps())) {
    return Invalid("hparams.norm_eps %g must be > 0", h->norm_eps());
  }
  return absl::OkStatus();
}

absl::Status VerifyTokenizer(const fb::Tokenizer* t, uint32_t vocab_size) {
  if (t == nullptr) return Invalid("tokenizer missing");
  if (t->model() > fb::TokenizerModel::MAX) {
    return Invalid("tokenizer.model %d is unknown",
                   static_cast<int>(t->model()));
  }
  if (t->tokens() == nullptr || t->tokens()->size() != vocab_size) {
    return Invalid("tokenizer has %u tokens, hparams.vocab_size is %u",
                   t->tokens() ? t->tokens()->size() : 0, vocab_size);
  }
  if (t->scores() != nullptr && t->scores()->size() != vocab_size) {
    return Invalid("tokenizer has %u scores for %u tokens", t->scores()->size(),
                   vocab_size);
  }
  if (t->token_types() != nullptr && t->token_types()->size() != vocab_size) {
    return Invalid("tokenizer has %u token_types for %u tokens",
                   t->token_types()->size(), vocab_size);
  }
  if (t->model() == fb::TokenizerModel::Gpt2 &&
      (t->merges() == nullptr || t->merges()->size() == 0)) {
    return Invalid("tokenizer model Gpt2 needs merges, there are none");
  }
  const struct {
    const char* name;
    int32_t id;
  } ids[] = {{"bos_id", t->bos_id()},
             {"eos_id", t->eos_id()},
             {"unk_id", t->unk_id()},
             {"pad_id", t->pad_id()}};
  for (const auto& id : ids) {
    if (id.id < -1 || (id.id >= 0 && static_cast<uint32_t>(id.id) >= vocab_size)) {
      return Invalid("tokenizer.%s %d is outside [0, %u) (or -1 for none)",
                     id.name, id.id, vocab_size);
    }
  }
  if (t->add_bos() && t->bos_id() < 0) {
    return Invalid("tokenizer.add_bos is set but bos_id is -1");
  }
  if (t->add_eos() && t->eos_id() < 0) {
    return Invalid("tokenizer.add_eos is set but eos_id is -1");
  }
  return absl::OkStatus();
}

absl::Status VerifyBuffers(const fb::Model& model, uint64_t data_size) {
  const auto* buffers = model.buffers();
  if (buffers == nullptr || buffers->size() == 0) {
    return Invalid("no buffers (buffers[0] must be the Weights buffer)");
  }
  for (uint32_t i = 0; i < buffers->size(); ++i) {
    const fb::Buffer* b = buffers->Get(i);
    if (b->kind() > fb::BufferKind::MAX) {
      return Invalid("buffers[%u].kind %d is unknown", i,
                     static_cast<int>(b->kind()));
    }
    if ((i == 0) != (b->kind() == fb::BufferKind::Weights)) {
      return Invalid("buffers[%u] has kind %s; exactly buffers[0] must be "
                     "Weights",
                     i, fb::EnumNameBufferKind(b->kind()));
    }
    if (i == 0) {
      if (b->size() != data_size) {
        return Invalid("buffers[0] (Weights) has size %u, the data section "
                       "has %u bytes",
                       b->size(), data_size);
      }
    } else if (b->size() == 0 || b->size() > kMaxBufferSize) {
      return Invalid("buffers[%u] size %u must be in [1, %u]", i, b->size(),
                     kMaxBufferSize);
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyWeights(const fb::Model& model, uint64_t data_size) {
  const auto* weights = model.weights();
  if (weights == nullptr) return absl::OkStatus();
  absl::flat_hash_set<std::string> names;
  for (uint32_t i = 0; i < weights->size(); ++i) {
    const fb::Weight* w = weights->Get(i);
    const std::string name = w->name() ? w->name()->str() : "";
    if (name.empty()) return Invalid("weights[%u] has no name", i);
    if (!names.insert(name).second) {
      return Invalid("weight '%s' appears twice", name);
    }
    const uint32_t dtype = w->dtype();
    if (dtype != LNPU_DTYPE_F32 && dtype != LNPU_DTYPE_F16 &&
        !IsBlockQuantized(dtype) && dtype != LNPU_DTYPE_Q6_K) {
      return Invalid("weight '%s' has dtype %u, weights must be F32 (%d), F16 "
                     "(%d), Q8_0 (%d), Q4_0 (%d) or Q6_K (%d)",
                     name, dtype, LNPU_DTYPE_F32, LNPU_DTYPE_F16,
                     LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q6_K);
    }
    if (w->shape() == nullptr || w->shape()->size() == 0) {
      return Invalid("weight '%s' has no shape", name);
    }
    // FlatBuffers 2.0's Verifier checks only the alignment of a vector's
    // length, not of its 8-byte elements; reading a misaligned one would be
    // undefined behaviour. (The metadata itself starts 8-aligned.)
    if (reinterpret_cast<uintptr_t>(w->shape()->Data()) % alignof(uint64_t) != 0) {
      return Invalid("weight '%s' has a misaligned shape vector (its 8-byte "
                     "dimensions must start at a multiple of 8 bytes)",
                     name);
    }
    uint64_t elements = 1;
    for (uint64_t d : *w->shape()) {
      if (d == 0 || d > kMaxBufferSize || elements > kMaxBufferSize / d) {
        return Invalid("weight '%s' has a zero or oversized dimension", name);
      }
      elements *= d;
    }
    const uint64_t row_len = w->shape()->Get(w->shape()->size() - 1);
    if (IsBlockQuantized(dtype) && row_len % LNPU_QUANT_BLOCK != 0) {
      return Invalid("weight '%s' has dtype %u with rows of %u elements, not "
                     "a multiple of the %d-element block",
                     name, dtype, row_len, LNPU_QUANT_BLOCK);
    }
    if (dtype == LNPU_DTYPE_Q6_K && row_len % LNPU_Q6_K_BLOCK != 0) {
      return Invalid("weight '%s' has dtype Q6_K with rows of %u elements, not "
                     "a multiple of the %d-element block",
                     name, row_len, LNPU_Q6_K_BLOCK);
    }
    const uint64_t bytes = WeightBytes(dtype, row_len, elements / row_len);
    if (w->size() != bytes) {
      return Invalid("weight '%s' size %u != %u bytes of its shape and dtype %u",
                     name, w->size(), bytes, dtype);
    }
    if (w->offset() > data_size || w->size() > data_size - w->offset()) {
      return Invalid("weight '%s' [%u, +%u) is outside the data section (%u "
                     "bytes)",
                     name, w->offset(), w->size(), data_size);
    }
    // Quantized blocks hold f16 scales (Q8_0 / Q4_0 first, Q6_K last).
    const uint64_t alignment =
        IsBlockQuantized(dtype) || dtype == LNPU_DTYPE_Q6_K ? 2 : DtypeSize(dtype);
    if (w->offset() % alignment != 0) {
      return Invalid("weight '%s' offset %u is not aligned to %u bytes", name,
                     w->offset(), alignment);
    }
  }
  return absl::OkStatus();
}

// Checks that `bytes` bytes at `op` lie in an Io buffer, aligned to `align`.
absl::Status VerifyIoOperand(const fb::Model& model, const fb::Operand* op,
                             uint64_t bytes, uint64_t align,
                             const std::string& what) {
  if (op == nullptr) return Invalid("%s missing", what);
  const auto* buffers = model.buffers();
  if (op->buffer() >= buffers->size()) {
    return Invalid("%s names buffer %u, there are %u", what, op->buffer(),
                   buffers->size());
  }
  const fb::Buffer* b = buffers->Get(op->buffer());
  if (b->kind() != fb::BufferKind::Io) {
    return Invalid("%s is in buffer %u of kind %s, must be in an Io buffer",
                   what, op->buffer(), fb::EnumNameBufferKind(b->kind()));
  }
  if (op->offset() > b->size() || bytes > b->size() - op->offset()) {
    return Invalid("%s [%u, +%u) is outside buffer %u (%u bytes)", what,
                   op->offset(), bytes, op->buffer(), b->size());
  }
  if (op->offset() % align != 0) {
    return Invalid("%s offset %u is not %u-byte aligned", what, op->offset(),
                   align);
  }
  return absl::OkStatus();
}

absl::Status VerifyKvCache(const fb::Model& model) {
  const fb::KvCache* kv = model.kv_cache();
  const fb::HParams* h = model.hparams();
  if (kv == nullptr) return Invalid("kv_cache missing");
  if (kv->max_prompt_len() == 0 || kv->min_response_len() == 0) {
    return Invalid("kv_cache.max_prompt_len %u and min_response_len %u must "
                   "be > 0",
                   kv->max_prompt_len(), kv->min_response_len());
  }
  if (uint64_t{kv->max_prompt_len()} + kv->min_response_len() !=
      kv->capacity()) {
    return Invalid("kv_cache.capacity %u != max_prompt_len %u + "
                   "min_response_len %u",
                   kv->capacity(), kv->max_prompt_len(),
                   kv->min_response_len());
  }
  if (kv->capacity() > kMaxModelDimension) {
    return Invalid("kv_cache.capacity %u exceeds %u", kv->capacity(),
                   kMaxModelDimension);
  }
  const uint64_t row_bytes =
      KvRowBytes(kv->dtype(), h->n_kv_heads(), h->head_dim());
  if (row_bytes == 0) {
    return Invalid("kv_cache.dtype %u is not F32 (%d), F16 (%d) or I8 (%d; "
                   "head_dim %u must then be a multiple of 4)",
                   kv->dtype(), LNPU_DTYPE_F32, LNPU_DTYPE_F16, LNPU_DTYPE_I8,
                   h->head_dim());
  }
  const auto* buffers = model.buffers();
  if (kv->buffer() >= buffers->size() ||
      buffers->Get(kv->buffer())->kind() != fb::BufferKind::KvCache) {
    return Invalid("kv_cache.buffer %u is not a KvCache buffer", kv->buffer());
  }
  const uint32_t ring = kv->window_ring_slots();
  if (ring == 0) {
    if (kv->window() != 0 || kv->window_mask() != nullptr ||
        kv->window_slot_positions() != nullptr || kv->layer_slots() != nullptr) {
      return Invalid("kv_cache has window ring fields but window_ring_slots 0");
    }
  } else {
    if (kv->window() == 0 || kv->window() > ring || ring >= kv->capacity()) {
      return Invalid(
          "kv_cache.window_ring_slots %u must hold the window %u (> 0) and be below "
          "the capacity %u",
          ring, kv->window(), kv->capacity());
    }
    if (kv->slot_positions() == nullptr || kv->window_mask() == nullptr ||
        kv->window_slot_positions() == nullptr || kv->layer_slots() == nullptr ||
        kv->layer_slots()->size() != h->n_layers()) {
      return Invalid(
          "kv_cache with a window ring needs slot_positions, window_mask, "
          "window_slot_positions and layer_slots of %u layers",
          h->n_layers());
    }
    for (uint32_t l = 0; l < h->n_layers(); ++l) {
      const uint32_t slots = kv->layer_slots()->Get(l);
      if (slots != ring && slots != kv->capacity()) {
        return Invalid(
            "kv_cache.layer_slots[%u] is %u, neither the capacity %u nor the "
            "window ring's %u",
            l, slots, kv->capacity(), ring);
      }
    }
    LNPU_RETURN_IF_ERROR(
        VerifyIoOperand(model, kv->window_mask(), ring, 1, "kv_cache.window_mask"));
    LNPU_RETURN_IF_ERROR(VerifyIoOperand(model, kv->window_slot_positions(), uint64_t{ring} * 4, 4,
                                         "kv_cache.window_slot_positions"));
  }
  const uint64_t needed = KvCacheBytes(*kv, h->n_layers(), row_bytes);
  const uint64_t kv_bytes = buffers->Get(kv->buffer())->size();
  if (kv_bytes < needed) {
    return Invalid(
        "kv_cache buffer %u has %u bytes, %u layers x K/V x their "
        "slots need %u",
        kv->buffer(), kv_bytes, h->n_layers(), needed);
  }
  // The runtime lays the cache out as rows of equal size (saved sessions
  // record that size in 32 bits).
  const uint64_t rows = KvCacheBytes(*kv, h->n_layers(), 1);
  if (kv_bytes % rows != 0 || kv_bytes / rows > std::numeric_limits<uint32_t>::max()) {
    return Invalid(
        "kv_cache buffer %u has %u bytes, not %u equal rows (%u layers x K/V x "
        "their slots) of at most 2^32-1 bytes",
        kv->buffer(), kv_bytes, rows, h->n_layers());
  }
  if (kv->slot_positions() != nullptr) {
    LNPU_RETURN_IF_ERROR(VerifyIoOperand(model, kv->slot_positions(), uint64_t{kv->capacity()} * 4,
                                         4, "kv_cache.slot_positions"));
  }
  return VerifyIoOperand(model, kv->mask(), kv->capacity(), 1,
                         "kv_cache.mask");
}

// io.window_slots: I32[rows] with a window ring, absent without.
absl::Status VerifyWindowSlots(const fb::Model& model, const fb::GraphIo& io, uint64_t rows_bytes,
                               const std::string& where) {
  if (model.kv_cache()->window_ring_slots() == 0) {
    if (io.window_slots() != nullptr) {
      return Invalid("%s: io.window_slots without a window ring", where);
    }
    return absl::OkStatus();
  }
  if (io.window_slots() == nullptr) {
    return Invalid("%s: io.window_slots missing (the cache has a window ring)", where);
  }
  return VerifyIoOperand(model, io.window_slots(), rows_bytes, 4, where + " io.window_slots");
}

// Checks the framing and relocations of stream `s` of a graph of `lanes`
// lanes (1 for the graphs of one sequence; model.fbs decode_batches).
absl::Status VerifyStream(const fb::Model& model, const fb::CommandStream* s,
                          const std::string& where, uint32_t lanes) {
  if (s->engine() >= DRM_LNPU_ENGINE_COUNT) {
    return Invalid("%s: engine %u is unknown (DRM_LNPU_ENGINE_*)", where,
                   s->engine());
  }
  const auto* commands = s->commands();
  if (commands == nullptr || commands->size() == 0 ||
      commands->size() % 8 != 0) {
    return Invalid("%s: commands size %u must be a positive multiple of 8",
                   where, commands ? commands->size() : 0);
  }
  // Framing: every command starts with a header whose size covers it.
  const uint8_t* bytes = commands->data();
  const uint32_t total = commands->size();
  std::vector<bool> command_start(total / 8, false);
  for (uint32_t at = 0; at < total;) {
    lnpu_cmd_header header;
    if (total - at < sizeof header) {
      return Invalid("%s: command at byte %u is cut short", where, at);
    }
    std::memcpy(&header, bytes + at, sizeof header);
    if (header.size < sizeof header || header.size % 8 != 0 ||
        header.size > total - at) {
      return Invalid("%s: command at byte %u has size %u (must be a multiple "
                     "of 8 within the %u-byte stream)",
                     where, at, header.size, total);
    }
    command_start[at / 8] = true;
    at += header.size;
  }
  if (s->command_layers() != nullptr) {
    const auto commands_in_stream = static_cast<uint32_t>(
        std::count(command_start.begin(), command_start.end(), true));
    if (s->command_layers()->size() != commands_in_stream) {
      return Invalid("%s: command_layers has %u entries for %u commands",
                     where, s->command_layers()->size(), commands_in_stream);
    }
    const uint32_t layers = model.hparams()->n_layers();
    for (int32_t layer : *s->command_layers()) {
      if (layer < -1 || layer >= static_cast<int32_t>(layers)) {
        return Invalid("%s: command_layers holds layer %d; the model has %u "
                       "layers (-1 = outside them)",
                       where, layer, layers);
      }
    }
  }
  const auto* buffers = model.buffers();
  absl::flat_hash_set<uint32_t> relocated;
  if (s->relocations() == nullptr) return absl::OkStatus();
  for (const fb::Relocation* r : *s->relocations()) {
    if (r->offset() % 8 != 0 || r->offset() >= total) {
      return Invalid("%s: relocation at byte %u is not an 8-byte aligned "
                     "field inside the %u-byte stream",
                     where, r->offset(), total);
    }
    if (command_start[r->offset() / 8]) {
      return Invalid("%s: relocation at byte %u points at a command header",
                     where, r->offset());
    }
    if (!relocated.insert(r->offset()).second) {
      return Invalid("%s: two relocations at byte %u", where, r->offset());
    }
    if (r->buffer() >= uint64_t{lanes} * buffers->size()) {
      return Invalid("%s: relocation at byte %u names buffer %u, there are %u%s", where,
                     r->offset(), r->buffer(), buffers->size(),
                     lanes == 1 ? "" : absl::StrCat(" buffers x ", lanes, " lanes"));
    }
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = value << 8 | bytes[r->offset() + i];
    const uint64_t size = buffers->Get(r->buffer() % buffers->size())->size();
    if (value >= size) {
      return Invalid("%s: relocation at byte %u points to offset %u of "
                     "buffer %u, which has %u bytes",
                     where, r->offset(), value, r->buffer(), size);
    }
  }
  return absl::OkStatus();
}

// The batched decode graphs (model.fbs Model.decode_batches); `names`
// holds the names of the other graphs.
absl::Status VerifyDecodeBatches(const fb::Model& model, absl::flat_hash_set<std::string> names) {
  const auto* graphs = model.decode_batches();
  if (graphs == nullptr) return absl::OkStatus();  // compiled without them
  const uint32_t vocab_size = model.hparams()->vocab_size();
  absl::flat_hash_set<uint32_t> lane_counts;
  for (uint32_t g = 0; g < graphs->size(); ++g) {
    const fb::Graph* graph = graphs->Get(g);
    const std::string name = graph->name() ? graph->name()->str() : "";
    const std::string where = absl::StrFormat("decode_batches[%u] '%s'", g, name);
    if (name.empty()) return Invalid("decode_batches[%u] has no name", g);
    if (!names.insert(name).second) return Invalid("%s: name repeated", where);
    const uint32_t lanes = graph->tokens();
    if (graph->kind() != fb::GraphKind::Decode) {
      return Invalid("%s: kind %d, must be Decode", where, static_cast<int>(graph->kind()));
    }
    if (lanes < 2 || lanes > kMaxDecodeBatchLanes) {
      return Invalid("%s: %u lanes, must be in [2, %u]", where, lanes, kMaxDecodeBatchLanes);
    }
    if (!lane_counts.insert(lanes).second) {
      return Invalid("%s: another batched decode graph also has %u lanes", where, lanes);
    }
    if (graph->streams() == nullptr || graph->streams()->size() == 0) {
      return Invalid("%s: no command streams", where);
    }
    for (uint32_t i = 0; i < graph->streams()->size(); ++i) {
      LNPU_RETURN_IF_ERROR(VerifyStream(model, graph->streams()->Get(i),
                                        absl::StrFormat("%s stream %u", where, i), lanes));
    }
    const fb::GraphIo* io = graph->io();
    if (io == nullptr) return Invalid("%s: io missing", where);
    if (io->last_row() != nullptr) return Invalid("%s: io.last_row must be absent", where);
    const uint64_t rows_bytes = uint64_t{lanes} * 4;
    LNPU_RETURN_IF_ERROR(
        VerifyIoOperand(model, io->tokens(), rows_bytes, 4, where + " io.tokens"));
    LNPU_RETURN_IF_ERROR(
        VerifyIoOperand(model, io->positions(), rows_bytes, 4, where + " io.positions"));
    LNPU_RETURN_IF_ERROR(VerifyIoOperand(model, io->slots(), rows_bytes, 4, where + " io.slots"));
    LNPU_RETURN_IF_ERROR(VerifyWindowSlots(model, *io, rows_bytes, where));
    LNPU_RETURN_IF_ERROR(VerifyIoOperand(model, io->logits(), rows_bytes * vocab_size, 4,
                                         where + " io.logits"));
  }
  return absl::OkStatus();
}

absl::Status VerifyGraphs(const fb::Model& model) {
  const auto* graphs = model.graphs();
  if (graphs == nullptr || graphs->size() == 0) return Invalid("no graphs");
  const fb::HParams* h = model.hparams();
  const uint32_t max_prompt_len = model.kv_cache()->max_prompt_len();
  int decode_graphs = 0;
  absl::flat_hash_set<uint32_t> verify_tokens;
  absl::flat_hash_set<uint32_t> prefill_tokens;
  absl::flat_hash_set<std::string> names;
  for (uint32_t g = 0; g < graphs->size(); ++g) {
    const fb::Graph* graph = graphs->Get(g);
    const std::string name = graph->name() ? graph->name()->str() : "";
    const std::string where =
        absl::StrFormat("graphs[%u] '%s'", g, name);
    if (name.empty()) return Invalid("graphs[%u] has no name", g);
    if (!names.insert(name).second) return Invalid("%s: name repeated", where);
    if (graph->tokens() == 0) return Invalid("%s: tokens is 0", where);
    switch (graph->kind()) {
      case fb::GraphKind::Decode:
        ++decode_graphs;
        if (graph->tokens() != 1) {
          return Invalid("%s: a Decode graph has tokens %u, must be 1", where,
                         graph->tokens());
        }
        break;
      case fb::GraphKind::Prefill:
        if (graph->tokens() > max_prompt_len) {
          return Invalid("%s: %u tokens exceed max_prompt_len %u", where,
                         graph->tokens(), max_prompt_len);
        }
        if (!prefill_tokens.insert(graph->tokens()).second) {
          return Invalid("%s: another Prefill graph also has %u tokens", where,
                         graph->tokens());
        }
        break;
      case fb::GraphKind::Verify:
        if (!verify_tokens.insert(graph->tokens()).second) {
          return Invalid("%s: another Verify graph also has %u tokens", where, graph->tokens());
        }
        if (graph->tokens() > model.kv_cache()->capacity()) {
          return Invalid("%s: %u tokens exceed the KV-cache capacity %u", where, graph->tokens(),
                         model.kv_cache()->capacity());
        }
        break;
      default:
        return Invalid("%s: kind %d is unknown", where,
                       static_cast<int>(graph->kind()));
    }
    if (graph->streams() == nullptr || graph->streams()->size() == 0) {
      return Invalid("%s: no command streams", where);
    }
    for (uint32_t i = 0; i < graph->streams()->size(); ++i) {
      LNPU_RETURN_IF_ERROR(VerifyStream(model, graph->streams()->Get(i),
                                        absl::StrFormat("%s stream %u", where, i), 1));
    }
    const fb::GraphIo* io = graph->io();
    if (io == nullptr) return Invalid("%s: io missing", where);
    const uint64_t rows_bytes = uint64_t{graph->tokens()} * 4;
    LNPU_RETURN_IF_ERROR(
        VerifyIoOperand(model, io->tokens(), rows_bytes, 4, where + " io.tokens"));
    LNPU_RETURN_IF_ERROR(VerifyIoOperand(model, io->positions(), rows_bytes, 4,
                                         where + " io.positions"));
    LNPU_RETURN_IF_ERROR(
        VerifyIoOperand(model, io->slots(), rows_bytes, 4, where + " io.slots"));
    LNPU_RETURN_IF_ERROR(
        VerifyIoOperand(model, io->last_row(), 4, 4, where + " io.last_row"));
    LNPU_RETURN_IF_ERROR(VerifyWindowSlots(model, *io, rows_bytes, where));
    const uint64_t logit_rows = graph->kind() == fb::GraphKind::Verify ? graph->tokens() : 1;
    LNPU_RETURN_IF_ERROR(VerifyIoOperand(model, io->logits(), logit_rows * h->vocab_size() * 4, 4,
                                         where + " io.logits"));
  }
  if (decode_graphs != 1) {
    return Invalid("%d Decode graphs, there must be exactly one",
                   decode_graphs);
  }
  return VerifyDecodeBatches(model, std::move(names));
}

absl::Status VerifyDataChecksums(const fb::DataChecksums* checksums, uint64_t data_size) {
  if (checksums == nullptr) return absl::OkStatus();  // written before checksums existed
  if (checksums->chunk_bytes() == 0 || checksums->crc32c() == nullptr) {
    return absl::InvalidArgumentError(
        "data_checksums: chunk_bytes must be > 0 and crc32c present");
  }
  const uint64_t chunks = (data_size + checksums->chunk_bytes() - 1) / checksums->chunk_bytes();
  if (checksums->crc32c()->size() != chunks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data_checksums: ", checksums->crc32c()->size(), " checksums for ", chunks,
        " chunks of ", checksums->chunk_bytes(), " bytes in a data section of ", data_size));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t DtypeSize(uint32_t dtype) {
  switch (dtype) {
    case LNPU_DTYPE_F32:
    case LNPU_DTYPE_I32:
      return 4;
    case LNPU_DTYPE_F16:
      return 2;
    case LNPU_DTYPE_U8:
      return 1;
    default:
      return 0;
  }
}

uint64_t KvRowBytes(uint32_t kv_dtype, uint64_t kv_heads, uint64_t head_dim) {
  switch (kv_dtype) {
    case LNPU_DTYPE_F32:
    case LNPU_DTYPE_F16:
      return kv_heads * head_dim * DtypeSize(kv_dtype);
    case LNPU_DTYPE_I8:
      return head_dim % 4 == 0 ? kv_heads * (sizeof(float) + head_dim) : 0;
    default:
      return 0;
  }
}

uint32_t KvLayerSlots(const fb::KvCache& kv, uint32_t layer) {
  const auto* slots = kv.layer_slots();
  return slots != nullptr && layer < slots->size() ? slots->Get(layer) : kv.capacity();
}

uint64_t KvCacheBytes(const fb::KvCache& kv, uint32_t n_layers, uint64_t row_bytes) {
  uint64_t bytes = 0;
  for (uint32_t l = 0; l < n_layers; ++l) bytes += 2ull * KvLayerSlots(kv, l) * row_bytes;
  return bytes;
}

bool IsBlockQuantized(uint32_t dtype) {
  return dtype == LNPU_DTYPE_Q8_0 || dtype == LNPU_DTYPE_Q4_0;
}

uint64_t WeightBytes(uint32_t dtype, uint64_t row_len, uint64_t rows) {
  if (dtype == LNPU_DTYPE_Q6_K) {
    if (row_len % LNPU_Q6_K_BLOCK != 0) return 0;
    return row_len / LNPU_Q6_K_BLOCK * kQ6_KBlockBytes * rows;
  }
  if (IsBlockQuantized(dtype)) {
    if (row_len % LNPU_QUANT_BLOCK != 0) return 0;
    const uint64_t block_bytes = dtype == LNPU_DTYPE_Q8_0 ? 34 : 18;
    return row_len / LNPU_QUANT_BLOCK * block_bytes * rows;
  }
  return DtypeSize(dtype) * row_len * rows;
}

absl::Status VerifyModel(const fb::Model& model, uint64_t data_size) {
  LNPU_RETURN_IF_ERROR(VerifyHParams(model.hparams()));
  LNPU_RETURN_IF_ERROR(
      VerifyTokenizer(model.tokenizer(), model.hparams()->vocab_size()));
  LNPU_RETURN_IF_ERROR(VerifyBuffers(model, data_size));
  LNPU_RETURN_IF_ERROR(VerifyWeights(model, data_size));
  LNPU_RETURN_IF_ERROR(VerifyKvCache(model));
  LNPU_RETURN_IF_ERROR(VerifyDataChecksums(model.data_checksums(), data_size));
  return VerifyGraphs(model);
}

}  // namespace lnpu::artifact

