#include "runtime/decode_batch.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::runtime {

absl::StatusOr<std::unique_ptr<DecodeBatch>> DecodeBatch::Create(
    std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
    std::shared_ptr<const Buffer> weights, bool chain_with_fences,
    absl::Span<Sequence* const> lanes) {
  const std::vector<uint32_t>& sizes = program->info().decode_batches;
  if (sizes.empty()) {
    return absl::FailedPreconditionError(
        "the model has no batched decode graphs: recompile it with npu-compile "
        "--decode-batch, e.g. --decode-batch 1,2,4");
  }
  const auto compiled = std::find(sizes.begin(), sizes.end(), lanes.size());
  if (compiled == sizes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a decode batch of ", lanes.size(), " lanes was not compiled; this model has "
                     "batched decode graphs of ", absl::StrJoin(sizes, ", "), " lanes"));
  }
  absl::flat_hash_set<const Sequence*> seen;
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (lanes[i] == nullptr || lanes[i]->program_ != program) {
      return absl::InvalidArgumentError(
          absl::StrCat("lane ", i, " of the decode batch is not a sequence of this model"));
    }
    if (!seen.insert(lanes[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("lane ", i, " of the decode batch repeats an earlier lane's sequence"));
    }
  }

  // Lane-qualified buffer addresses and handles (Program::decode_batches).
  const size_t buffer_count = program->buffers().size();
  std::vector<uint64_t> addrs(lanes.size() * buffer_count);
  std::vector<uint32_t> handles(addrs.size());
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    for (size_t i = 0; i < buffer_count; ++i) {
      const Buffer& buffer = i == 0 ? *weights : lanes[lane]->buffers_[i];
      addrs[lane * buffer_count + i] = buffer.device_addr();
      handles[lane * buffer_count + i] = buffer.handle();
    }
  }
  const size_t graph_count = compiled - sizes.begin() + 1;
  LNPU_ASSIGN_OR_RETURN(
      Buffer commands,
      device->CreateBuffer(program->decode_batch_command_bytes(graph_count), DRM_LNPU_BO_CMDBUF));
  LNPU_ASSIGN_OR_RETURN(const absl::Span<uint8_t> image, commands.Map());
  program->RecordDecodeBatches(graph_count, addrs, image);

  // The graphs' scratch and io are lane 0's.
  Sequence& first = *lanes[0];
  auto io_address = [&](BufferLocation loc) {
    return first.buffers_[loc.buffer].mapped().data() + loc.offset;
  };
  std::vector<RecordedBatchGraph> graphs;
  for (size_t g = 0; g < graph_count; ++g) {
    const GraphSpec& spec = program->decode_batches()[g];
    RecordedBatchGraph graph;
    graph.spec = &spec;
    for (const StreamSpec& stream : spec.streams) {
      RecordedStream recorded{stream.engine, stream.offset, stream.size, {}};
      for (uint32_t b : stream.buffers) recorded.bo_handles.push_back(handles[b]);
      std::sort(recorded.bo_handles.begin(), recorded.bo_handles.end());
      recorded.bo_handles.erase(
          std::unique(recorded.bo_handles.begin(), recorded.bo_handles.end()),
          recorded.bo_handles.end());
      graph.streams.push_back(std::move(recorded));
    }
    graph.tokens = io_address(spec.io.tokens);
    graph.positions = io_address(spec.io.positions);
    graph.slots = io_address(spec.io.slots);
    if (spec.io.window_slots) graph.window_slots = io_address(*spec.io.window_slots);
    graph.logits = reinterpret_cast<const float*>(io_address(spec.io.logits));
    graphs.push_back(std::move(graph));
  }
  return std::unique_ptr<DecodeBatch>(new DecodeBatch(
      std::move(device), std::move(program), std::move(weights), chain_with_fences,
      std::vector<Sequence*>(lanes.begin(), lanes.end()), std::move(commands), std::move(graphs)));
}

DecodeBatch::DecodeBatch(std::shared_ptr<Device> device, std::shared_ptr<const Program> program,
                         std::shared_ptr<const Buffer> weights, bool chain_with_fences,
                         std::vector<Sequence*> lanes, Buffer commands,
                         std::vector<RecordedBatchGraph> graphs)
    : device_(std::move(device)),
      program_(std::move(program)),
      weights_(std::move(weights)),
      chain_with_fences_(chain_with_fences),
      lanes_(std::move(lanes)),
      commands_(std::move(commands)),
      graphs_(std::move(graphs)),
      logits_(lanes_.size()),
      placements_(lanes_.size()) {
  size_t max_streams = 0;
  for (const RecordedBatchGraph& graph : graphs_) {
    max_streams = std::max(max_streams, graph.streams.size());
  }
  step_fences_.reserve(max_streams);
}

absl::Status DecodeBatch::Step(absl::Span<const int32_t> tokens) {
  if (tokens.size() != lanes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a decode batch step of ", tokens.size(),
                                                   " tokens for ", lanes_.size(),
                                                   " lanes: give one token (or kIdle) per lane"));
  }
  const uint32_t vocab_size = program_->info().vocab_size;
  size_t active = 0, highest_active = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == kIdle) continue;
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", tokens[i], " of lane ", i,
                                                     " is outside the vocabulary [0, ",
                                                     vocab_size, ")"));
    }
    LNPU_RETURN_IF_ERROR_WITH_PREFIX(lanes_[i]->CheckRoomFor(1), "lane ", i, ": ");
    ++active;
    highest_active = i;
  }
  if (active == 0) {
    return absl::InvalidArgumentError("a decode batch step without tokens: give at least one lane "
                                      "a token");
  }
  if (active == 1) {
    Sequence& lane = *lanes_[highest_active];
    LNPU_ASSIGN_OR_RETURN(logits_[highest_active], lane.Forward(tokens.subspan(highest_active, 1)));
  } else {
    LNPU_RETURN_IF_ERROR(RunBatched(tokens, active, highest_active));
  }
  ++stats_.steps;
  stats_.tokens += active;
  return absl::OkStatus();
}

absl::Status DecodeBatch::RunBatched(absl::Span<const int32_t> tokens, size_t active,
                                      size_t highest_active) {
  const absl::Time start = absl::Now();
  // Covers the highest active lane: the largest graph has lanes() rows.
  const RecordedBatchGraph& graph = *std::find_if(
      graphs_.begin(), graphs_.end(),
      [&](const RecordedBatchGraph& g) { return g.spec->rows > highest_active; });
  const uint32_t rows = graph.spec->rows;
  for (uint32_t i = 0; i < rows; ++i) {
    Sequence& lane = *lanes_[i];
    if (tokens[i] == kIdle) {
      // A padding row: slot -1 keeps it out of the cache; its attention
      // reads the lane's cache and mask without changing them.
      StoreI32(graph.tokens, i, 0);
      StoreI32(graph.positions, i, 0);
      StoreI32(graph.slots, i, -1);
      if (graph.window_slots != nullptr) StoreI32(graph.window_slots, i, -1);
      continue;
    }
    // Cannot fail: Step() checked the room.
    LNPU_ASSIGN_OR_RETURN(const SlotPlacement placement, lane.cache_.Reserve(1));
    placements_[i] = placement;
    // The compute job reads the mask: the slots this run overwrites must
    // be hidden before it is submitted.
    lane.stats_.evicted_tokens += lane.cache_.Evict(placement);
    StoreI32(graph.tokens, i, tokens[i]);
    StoreI32(graph.positions, i, placement.position(0));
    // Row i of the lane-indexed slot inputs.
    lane.StoreSlots(
        placement, 1, 1, graph.slots + i * sizeof(int32_t),
        graph.window_slots == nullptr ? nullptr : graph.window_slots + i * sizeof(int32_t));
  }
  const bool observed = recorder_.observing();
  if (observed) recorder_.Begin(*graph.spec, commands_.mapped(), static_cast<uint32_t>(active));
  DeviceTime time;
  const absl::Status ran =
      RunRecordedGraph(*device_, commands_, graph.streams, chain_with_fences_, graph.spec->name,
                       absl::Now() + kStepTimeout, step_fences_, time,
                       observed ? &recorder_ : nullptr);
  stats_.submit_time += time.submit;
  stats_.wait_time += time.wait;
  if (!ran.ok()) {
    for (uint32_t i = 0; i < rows; ++i) {
      if (tokens[i] != kIdle) lanes_[i]->FinishRun(placements_[i], tokens.subspan(i, 1), false);
    }
    return ran;
  }

  const uint32_t vocab_size = program_->info().vocab_size;
  const absl::Duration host_time = absl::Now() - start - time.submit - time.wait;
  for (uint32_t i = 0; i < rows; ++i) {
    if (tokens[i] == kIdle) {
      ++stats_.padded_rows;
      continue;
    }
    Sequence& lane = *lanes_[i];
    lane.FinishRun(placements_[i], tokens.subspan(i, 1), true);
    ++lane.stats_.forward_calls;
    ++lane.stats_.tokens;
    ++lane.stats_.batched_steps;
    lane.stats_.host_time += host_time;
    lane.stats_.submit_time += time.submit;
    lane.stats_.wait_time += time.wait;
    logits_[i] = absl::Span<const float>(graph.logits + uint64_t{i} * vocab_size, vocab_size);
    ++stats_.batched_tokens;
  }
  ++stats_.batched_steps;
  if (observed) recorder_.Finish();
  return absl::OkStatus();
}

absl::Status DecodeBatch::SetStepObserver(StepObserver observer) {
  return recorder_.SetObserver(*device_, *program_, std::move(observer));
}

}  // namespace lnpu::runtime
