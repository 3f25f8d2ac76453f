#include "runtime/sequence.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "runtime/prefill_plan.h"

namespace lnpu::runtime {
absl::StatusOr<std::unique_ptr<Sequence>> Sequence::Create(
    std::shared_ptr<Device> shared_device, std::shared_ptr<const Program> program,
    std::shared_ptr<const Buffer> weights, bool chain_with_fences) {
  Device& device = *shared_device;
  const absl::Span<const BufferSpec> specs = program->buffers();

  // A session that can never fit is ResourceExhausted, like one that does
  // not fit now, with the compile options that shrink it. (The device
  // refuses a single buffer larger than its memory with EINVAL.)
  LNPU_ASSIGN_OR_RETURN(const uint64_t memory_size,
                        device.GetParam(DRM_LNPU_PARAM_MEMORY_SIZE));
  if (program->session_bytes() > memory_size) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "a session of this model needs %u bytes of device memory (KV cache, "
        "activations and commands), more than the device's %u bytes: "
        "compile it with a smaller --max-prompt-len or --min-response-len",
        program->session_bytes(), memory_size));
  }

  // Buffers: [0] is the shared weights, the rest are this session's own.
  std::vector<Buffer> buffers(specs.size());
  std::vector<uint64_t> addrs(specs.size());
  std::vector<uint32_t> handles(specs.size());
  addrs[0] = weights->device_addr();
  handles[0] = weights->handle();
  for (size_t i = 1; i < specs.size(); ++i) {
    LNPU_ASSIGN_OR_RETURN(Buffer buffer, device.CreateBuffer(specs[i].size));
    LNPU_ASSIGN_OR_RETURN(const absl::Span<uint8_t> mapped, buffer.Map());
    std::memset(mapped.data(), 0, mapped.size());
    addrs[i] = buffer.device_addr();
    handles[i] = buffer.handle();
    buffers[i] = std::move(buffer);
  }

  LNPU_ASSIGN_OR_RETURN(Buffer commands,
                        device.CreateBuffer(program->command_bytes(), DRM_LNPU_BO_CMDBUF));
  LNPU_ASSIGN_OR_RETURN(const absl::Span<uint8_t> image, commands.Map());
  program->Record(addrs, image);

  auto io_address = [&](BufferLocation loc) {
    return buffers[loc.buffer].mapped().data() + loc.offset;
  };
  std::vector<RecordedGraph> graphs;
  graphs.reserve(program->graphs().size());
  for (const GraphSpec& spec : program->graphs()) {
    RecordedGraph graph;
    for (const StreamSpec& stream : spec.streams) {
      RecordedStream recorded{stream.engine, stream.offset, stream.size, {}};
      for (uint32_t b : stream.buffers) recorded.bo_handles.push_back(handles[b]);
      graph.streams.push_back(std::move(recorded));
    }
    graph.tokens = io_address(spec.io.tokens);
    graph.positions = io_address(spec.io.positions);
    graph.slots = io_address(spec.io.slots);
    if (spec.io.window_slots) graph.window_slots = io_address(*spec.io.window_slots);
    graph.last_row = io_address(spec.io.last_row);
    graph.logits = reinterpret_cast<const float*>(io_address(spec.io.logits));
    graphs.push_back(std::move(graph));
  }
  const BufferLocation mask = program->kv_mask();
  const absl::Span<uint8_t> mask_memory(io_address(mask), program->kv_capacity());
  absl::Span<uint8_t> positions_memory;
  if (const std::optional<BufferLocation> positions = program->kv_slot_positions()) {
    positions_memory = absl::Span<uint8_t>(io_address(*positions),
                                           uint64_t{program->kv_capacity()} * sizeof(int32_t));
  }

  absl::Span<uint8_t> ring_mask, ring_positions;
  const std::optional<WindowRingSpec>& ring = program->window_ring();
  if (ring) {
    ring_mask = absl::Span<uint8_t>(io_address(ring->mask), ring->slots);
    ring_positions =
        absl::Span<uint8_t>(io_address(ring->slot_positions), uint64_t{ring->slots} * 4);
  }
  std::unique_ptr<Sequence> sequence(new Sequence(
      std::move(shared_device), program, std::move(weights), std::move(buffers),
      std::move(commands), std::move(graphs), mask_memory, positions_memory, chain_with_fences));
  if (ring) sequence->window_ring_.emplace(ring->window, ring_mask, ring_positions);
  return sequence;
}

namespace {

uint64_t TotalSize(absl::Span<const Buffer> buffers, const Buffer& commands) {
  uint64_t total = commands.size();
  for (const Buffer& b : buffers) total += b.size();
  return total;
}

}  // namespace

Sequence::Sequence(std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
                   std::shared_ptr<const Buffer> weights, std::vector<Buffer> buffers,
                   Buffer commands, std::vector<RecordedGraph> graphs, absl::Span<uint8_t> mask,
                   absl::Span<uint8_t> slot_positions, bool chain_with_fences)
    : device_(std::move(device)),
      program_(std::move(program)),
      weights_(std::move(weights)),
      buffers_(std::move(buffers)),
      commands_(std::move(commands)),
      graphs_(std::move(graphs)),
      chain_with_fences_(chain_with_fences),
      device_memory_bytes_(TotalSize(buffers_, commands_)),
      cache_(mask, slot_positions) {
  size_t max_streams = 0;
  for (const GraphSpec& spec : program_->graphs()) {
    stats_.graphs.push_back({spec.name, spec.rows, 0});
  }
  for (const RecordedGraph& graph : graphs_) max_streams = std::max(max_streams, graph.streams.size());
  step_fences_.reserve(max_streams);
}

absl::Status Sequence::CheckTokens(absl::Span<const int32_t> tokens) const {
  const ModelInfo& info = program_->info();
  if (tokens.empty()) {
    return absl::InvalidArgumentError("Forward() of no tokens: give at least one token");
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= info.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", tokens[i], " at index ", i,
                       " is outside the vocabulary [0, ", info.vocab_size, ")"));
    }
  }
  // Also bounds the count by INT32_MAX (positions are 32-bit).
  return CheckRoomFor(tokens.size());
}

absl::Status Sequence::CheckRoomFor(uint64_t n) const {
  LNPU_RETURN_IF_ERROR(cache_.CheckRoomFor(n));
  if (window_ring_) return window_ring_->CheckContinuesAt(cache_.next_position());
  return absl::OkStatus();
}

void Sequence::StoreSlots(const SlotPlacement& placement, uint32_t count, uint32_t rows,
                          uint8_t* slots, uint8_t* window_slots) const {
  for (uint32_t i = 0; i < rows; ++i) {
    StoreI32(slots, i, i < count ? placement.slot(i) : -1);
    if (window_ring_) StoreI32(window_slots, i, window_ring_->RunSlot(count, i));
  }
}

void Sequence::FinishRun(const SlotPlacement& placement, absl::Span<const int32_t> tokens,
                         bool ran) {
  if (!ran) {
    if (window_ring_) window_ring_->Fail(placement.count);
    return;
  }
  // The compute job has read the mask: the new slots become visible now.
  cache_.Commit(placement, tokens);
  if (window_ring_) window_ring_->Commit(placement.count);
}

void Sequence::Reset() {
  cache_.Clear();
  if (window_ring_) window_ring_->Reset(0, 0);
}

void Sequence::CountForwardCall(uint32_t tokens, absl::Time start,
                                absl::Duration device_time_before) {
  ++stats_.forward_calls;
  stats_.tokens += tokens;
  stats_.host_time +=
      (absl::Now() - start) - (stats_.submit_time + stats_.wait_time - device_time_before);
}

absl::StatusOr<absl::Span<const float>> Sequence::ForwardAllRows(absl::Span<const int32_t> tokens) {
  const absl::Time start = absl::Now();
  const ModelInfo& info = program_->info();
  if (info.verify_rows == 0) {
    return absl::FailedPreconditionError(
        "the model has no verify graph, which computes the logits of every row: recompile it "
        "with npu-compile --verify-rows K (e.g. 8)");
  }
  if (tokens.size() > info.verify_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("ForwardAllRows() of ", tokens.size(), " tokens; the largest verify graph "
                     "has ", info.verify_rows, " rows: give at most that many"));
  }
  LNPU_RETURN_IF_ERROR(CheckTokens(tokens));
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  const absl::Duration device_time_before = stats_.submit_time + stats_.wait_time;
  const size_t graph = program_->verify_graph(n);
  LNPU_RETURN_IF_ERROR(RunGraph(graph, tokens));
  CountForwardCall(n, start, device_time_before);
  return absl::Span<const float>(graphs_[graph].logits, uint64_t{n} * info.vocab_size);
}

absl::Status Sequence::Truncate(uint32_t tokens) {
  if (tokens > static_cast<uint32_t>(cache_.next_position())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot truncate the cache to ", tokens, " tokens: it holds ", cache_.next_position(),
        "; give a count in [0, ", cache_.next_position(), "]"));
  }
  const int32_t next = static_cast<int32_t>(tokens);
  if (window_ring_) LNPU_RETURN_IF_ERROR(window_ring_->CheckContinuesAt(next));
  LNPU_RETURN_IF_ERROR(cache_.Truncate(next));
  if (window_ring_) window_ring_->Reset(std::min(window_ring_->first_held(), next), next);
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const float>> Sequence::Forward(absl::Span<const int32_t> tokens) {
  const absl::Time start = absl::Now();
  LNPU_RETURN_IF_ERROR(CheckTokens(tokens));
  const uint32_t n = static_cast<uint32_t>(tokens.size());

  const absl::Duration device_time_before = stats_.submit_time + stats_.wait_time;
  size_t last_graph;
  if (n == 1) {
    last_graph = program_->decode_graph();
    LNPU_RETURN_IF_ERROR(RunGraph(last_graph, tokens));
  } else {
    LNPU_ASSIGN_OR_RETURN(const std::vector<PrefillRun> runs,
                          PlanPrefill(n, program_->run_chunks()));
    const absl::Span<const uint32_t> chunks = program_->run_chunks();
    uint32_t done = 0;
    last_graph = 0;
    for (const PrefillRun& run : runs) {
      const size_t chunk_index =
          std::lower_bound(chunks.begin(), chunks.end(), run.chunk) - chunks.begin();
      last_graph = program_->run_chunk_graph(chunk_index);
      LNPU_RETURN_IF_ERROR(RunGraph(last_graph, tokens.subspan(done, run.tokens)));
      done += run.tokens;
    }
  }

  CountForwardCall(n, start, device_time_before);
  return absl::Span<const float>(graphs_[last_graph].logits, program_->info().vocab_size);
}

absl::Status Sequence::SetStepObserver(StepObserver observer) {
  return recorder_.SetObserver(*device_, *program_, std::move(observer));
}

absl::Status Sequence::RunGraph(size_t graph_index, absl::Span<const int32_t> tokens) {
  const RecordedGraph& graph = graphs_[graph_index];
  const bool observed = recorder_.observing();
  if (observed) {
    recorder_.Begin(program_->graphs()[graph_index], commands_.mapped(),
                    static_cast<uint32_t>(tokens.size()));
  }
  const uint32_t rows = program_->graphs()[graph_index].rows;
  const uint32_t count = static_cast<uint32_t>(tokens.size());
  // Cannot fail: Forward() checked the room and the ring holds every chunk.
  LNPU_ASSIGN_OR_RETURN(const SlotPlacement placement, cache_.Reserve(count));
  // The compute job reads the mask: the slots this run overwrites must be
  // hidden before it is submitted.
  stats_.evicted_tokens += cache_.Evict(placement);

  // Padding rows come after the real ones, so causal attention keeps them
  // out of the real rows; slot -1 keeps them out of the cache. Token 0 and
  // continued positions are valid inputs whose results are discarded.
  for (uint32_t i = 0; i < rows; ++i) {
    StoreI32(graph.tokens, i, i < count ? tokens[i] : 0);
    StoreI32(graph.positions, i, placement.position(i));
  }
  StoreSlots(placement, count, rows, graph.slots, graph.window_slots);
  StoreI32(graph.last_row, 0, static_cast<int32_t>(count - 1));

  DeviceTime time;
  const absl::Status ran =
      RunRecordedGraph(*device_, commands_, graph.streams, chain_with_fences_,
                       program_->graphs()[graph_index].name, absl::Now() + kStepTimeout,
                       step_fences_, time, observed ? &recorder_ : nullptr);
  stats_.submit_time += time.submit;
  stats_.wait_time += time.wait;
  FinishRun(placement, tokens, ran.ok());
  LNPU_RETURN_IF_ERROR(ran);
  ++stats_.steps;
  ++stats_.graphs[graph_index].runs;
  stats_.padded_rows += rows - count;
  if (observed) recorder_.Finish();
  return absl::OkStatus();
}

absl::Status Sequence::SetCacheFullPolicy(const CacheFullPolicy& policy) {
  LNPU_RETURN_IF_ERROR(CheckCompatible(program_->info().identity, policy));
  return cache_.SetPolicy(policy);
}

absl::Span<uint8_t> Sequence::kv_memory() const {
  return buffers_[program_->kv_cache_buffer()].mapped();
}

absl::Status Sequence::CheckCompatible(const ModelIdentity& model,
                                      const CacheFullPolicy& policy) const {
  const ModelIdentity& own = program_->info().identity;
  if (model.kv_capacity != own.kv_capacity) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the saved cache has ", model.kv_capacity, " slots but this model was compiled for ",
        own.kv_capacity, ": use the model compiled with the same --max-prompt-len and "
        "--min-response-len"));
  }
  if (model.kv_dtype != own.kv_dtype || model.kv_blocks != own.kv_blocks ||
      model.kv_row_bytes != own.kv_row_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the saved cache has another layout (KV dtype ", model.kv_dtype, ", ", model.kv_blocks,
        " blocks of ", model.kv_row_bytes, "-byte rows) than this model's (KV dtype ",
        own.kv_dtype, ", ", own.kv_blocks, " blocks of ", own.kv_row_bytes,
        "-byte rows): it was saved from another model"));
  }
  if (model.metadata_crc32 != own.metadata_crc32 || model.weights_crc32 != own.weights_crc32) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the saved cache belongs to another model (metadata CRC %08x, weights fingerprint "
        "%08x; this model: %08x, %08x): restore it with the model it was saved from",
        model.metadata_crc32, model.weights_crc32, own.metadata_crc32, own.weights_crc32));
  }
  const uint32_t largest_chunk = program_->run_chunks().back();
  if (policy.ring() && policy.sinks() < own.kv_capacity &&
      own.kv_capacity - policy.sinks() < largest_chunk) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ring of ", own.kv_capacity - policy.sinks(), " slots (capacity ",
        own.kv_capacity, " minus ", policy.sinks(),
        " sink slots) cannot hold the largest compiled prefill chunk of ", largest_chunk,
        " tokens: use at most ", own.kv_capacity - largest_chunk, " sink slots"));
  }
  if (window_ring_ && policy.ring() && policy.sinks() < own.kv_capacity &&
      own.kv_capacity - policy.sinks() < window_ring_->window()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ring of ", own.kv_capacity - policy.sinks(), " slots (capacity ", own.kv_capacity,
        " minus ", policy.sinks(), " sink slots) is shorter than the sliding window of ",
        window_ring_->window(), " positions: use at most ",
        own.kv_capacity - window_ring_->window(), " sink slots"));
  }
  return absl::OkStatus();
}

uint8_t* Sequence::kv_block(size_t block) const {
  return kv_memory().data() + program_->kv_blocks()[block].offset;
}

void Sequence::WriteKvRows(absl::FunctionRef<const uint8_t*(size_t block)> src, uint32_t slots) {
  const uint64_t row = program_->info().identity.kv_row_bytes;
  const absl::Span<const KvBlock> blocks = program_->kv_blocks();
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].window_ring || slots == 0) continue;
    std::memcpy(kv_block(b), src(b), slots * row);
  }
}

void Sequence::ForEachWindowRow(
    uint32_t rows_slots, const CacheFullPolicy& policy, int32_t first, int32_t end,
    absl::FunctionRef<void(uint64_t rows_offset, uint8_t* ring_row)> copy) const {
  const uint64_t row = program_->info().identity.kv_row_bytes;
  const uint32_t capacity = program_->info().identity.kv_capacity;
  const absl::Span<const KvBlock> blocks = program_->kv_blocks();
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!blocks[b].window_ring) continue;
    for (int32_t p = first; p < end; ++p) {
      copy((b * rows_slots + static_cast<uint64_t>(SlotOf(p, capacity, policy))) * row,
           kv_block(b) + static_cast<uint64_t>(window_ring_->SlotOf(p)) * row);
    }
  }
}

absl::StatusOr<CacheSnapshot> Sequence::SaveState(uint32_t max_tokens) const {
  const uint32_t next = static_cast<uint32_t>(cache_.next_position());
  const uint32_t tokens = std::min(max_tokens, next);
  if (tokens < next && cache_.wrapped()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot save the first ", tokens, " of ", next,
        " positions: the ring has overwritten them; save the whole session instead"));
  }
  if (window_ring_) {
    LNPU_RETURN_IF_ERROR(window_ring_->CheckContinuesAt(static_cast<int32_t>(tokens)));
  }
  const ModelIdentity& id = program_->info().identity;
  const uint32_t written = std::min(tokens, id.kv_capacity);
  CacheSnapshot state;
  state.model = id;
  state.policy = cache_.policy();
  state.next_position = static_cast<int32_t>(tokens);
  state.mask.assign(cache_.mask().begin(), cache_.mask().begin() + written);
  state.slot_tokens.assign(cache_.slot_tokens().begin(),
                           cache_.slot_tokens().begin() + written);
  const uint64_t row = id.kv_row_bytes;
  state.kv_rows.resize(uint64_t{id.kv_blocks} * written * row);
  const absl::Span<const KvBlock> blocks = program_->kv_blocks();
  for (size_t b = 0; b < blocks.size() && written > 0; ++b) {
    if (blocks[b].window_ring) continue;
    std::memcpy(state.kv_rows.data() + b * written * row, kv_block(b), written * row);
  }
  if (window_ring_) {
    ForEachWindowRow(written, state.policy, window_ring_->FirstNeeded(state.next_position),
                     state.next_position, [&](uint64_t offset, uint8_t* ring_row) {
                       std::memcpy(state.kv_rows.data() + offset, ring_row, row);
                     });
  }
  return state;
}

absl::Status Sequence::RestoreState(const CacheSnapshot& state) {
  LNPU_RETURN_IF_ERROR(CheckCompatible(state.model, state.policy));
  const ModelIdentity& id = program_->info().identity;
  const uint64_t written = state.written_slots();
  if (state.kv_rows.size() != uint64_t{id.kv_blocks} * written * id.kv_row_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the saved state has ", state.kv_rows.size(), " bytes of K/V rows; ", written,
        " slots need ", uint64_t{id.kv_blocks} * written * id.kv_row_bytes));
  }
  // Every token the model would see again must exist in its vocabulary.
  const uint32_t vocab_size = program_->info().vocab_size;
  auto bad_token = [&](const char* where, size_t i, int32_t id) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the saved state's ", where, " ", i, " holds token ", id,
        ", outside this model's vocabulary of ", vocab_size, " tokens"));
  };
  for (size_t i = 0; i < state.slot_tokens.size() && i < state.mask.size(); ++i) {
    const int32_t id = state.slot_tokens[i];
    if (state.mask[i] != 0 && (id < 0 || static_cast<uint32_t>(id) >= vocab_size)) {
      return bad_token("slot", i, id);
    }
  }
  for (size_t i = 0; i < state.pending_tokens.size(); ++i) {
    const int32_t id = state.pending_tokens[i];
    if (id < 0 || static_cast<uint32_t>(id) >= vocab_size) return bad_token("pending token", i, id);
  }
  // Validates everything else before changing anything.
  LNPU_RETURN_IF_ERROR(
      cache_.Restore(state.policy, state.next_position, state.mask, state.slot_tokens));
  const uint64_t row = id.kv_row_bytes;
  WriteKvRows([&](size_t block) { return state.kv_rows.data() + block * written * row; },
              static_cast<uint32_t>(written));
  if (window_ring_) {
    const int32_t first = window_ring_->FirstNeeded(state.next_position);
    ForEachWindowRow(static_cast<uint32_t>(written), state.policy, first, state.next_position,
                     [&](uint64_t offset, uint8_t* ring_row) {
                       std::memcpy(ring_row, state.kv_rows.data() + offset, row);
                     });
    window_ring_->Reset(first, state.next_position);
  }
  return absl::OkStatus();
}

absl::Status Sequence::CopyPrefixFrom(const Sequence& source, uint32_t tokens) {
  if (&source == this) {
    return absl::InvalidArgumentError("CopyPrefixFrom() needs another session as the source");
  }
  LNPU_RETURN_IF_ERROR(CheckCompatible(source.program_->info().identity, cache_.policy()));
  const KvCacheState& from = source.cache_;
  if (tokens > static_cast<uint32_t>(from.next_position())) {
    return absl::InvalidArgumentError(absl::StrCat("cannot copy a prefix of ", tokens,
                                                   " tokens from a session that holds ",
                                                   from.next_position()));
  }
  if (from.wrapped()) {
    return absl::FailedPreconditionError(
        "cannot copy a prefix out of a session whose ring has wrapped: its first positions "
        "were overwritten; save and restore the whole session instead");
  }
  if (window_ring_) {
    LNPU_RETURN_IF_ERROR(source.window_ring_->CheckContinuesAt(static_cast<int32_t>(tokens)));
  }
  LNPU_RETURN_IF_ERROR(cache_.Restore(cache_.policy(), static_cast<int32_t>(tokens),
                                      from.mask().subspan(0, tokens),
                                      from.slot_tokens().subspan(0, tokens)));
  WriteKvRows([&](size_t block) { return source.kv_block(block); }, tokens);
  if (window_ring_) {
    // Both rings hold position p in slot p % slots.
    const int32_t end = static_cast<int32_t>(tokens);
    const int32_t first = window_ring_->FirstNeeded(end);
    const uint64_t row = program_->info().identity.kv_row_bytes;
    const absl::Span<const KvBlock> blocks = program_->kv_blocks();
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (!blocks[b].window_ring) continue;
      for (int32_t p = first; p < end; ++p) {
        const uint64_t at = uint64_t(window_ring_->SlotOf(p)) * row;
        std::memcpy(kv_block(b) + at, source.kv_block(b) + at, row);
      }
    }
    window_ring_->Reset(first, end);
  }
  return absl::OkStatus();
}

}  // namespace lnpu::runtime
