#include "runtime/session.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "runtime/prefill_plan.h"

namespace lnpu::runtime {
namespace {

// Deadline of one graph run.
constexpr absl::Duration kStepTimeout = absl::Seconds(60);

void StoreI32(uint8_t* array, size_t index, int32_t value) {
  std::memcpy(array + index * sizeof(int32_t), &value, sizeof(value));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Create(
    Device& device, std::shared_ptr<const Program> program,
    std::shared_ptr<const Buffer> weights, bool chain_with_fences) {
  const absl::Span<const BufferSpec> specs = program->buffers();

  // Buffers: [0] is the shared weights, the rest are this session's own.
  std::vector<Buffer> buffers(specs.size());
  std::vector<uint64_t> addrs(specs.size());
  std::vector<uint32_t> handles(specs.size());
  addrs[0] = weights->device_addr();
  handles[0] = weights->handle();
  for (size_t i = 1; i < specs.size(); ++i) {
    absl::StatusOr<Buffer> buffer = device.CreateBuffer(specs[i].size);
    if (!buffer.ok()) return buffer.status();
    absl::StatusOr<absl::Span<uint8_t>> mapped = buffer->Map();
    if (!mapped.ok()) return mapped.status();
    std::memset(mapped->data(), 0, mapped->size());
    addrs[i] = buffer->device_addr();
    handles[i] = buffer->handle();
    buffers[i] = *std::move(buffer);
  }

  absl::StatusOr<Buffer> commands =
      device.CreateBuffer(program->command_bytes(), DRM_LNPU_BO_CMDBUF);
  if (!commands.ok()) return commands.status();
  absl::StatusOr<absl::Span<uint8_t>> image = commands->Map();
  if (!image.ok()) return image.status();
  program->Record(addrs, *image);

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
    graph.last_row = io_address(spec.io.last_row);
    graph.logits = reinterpret_cast<const float*>(io_address(spec.io.logits));
    graphs.push_back(std::move(graph));
  }
  const BufferLocation mask = program->kv_mask();
  const absl::Span<uint8_t> mask_memory(io_address(mask), program->kv_capacity());

  return std::unique_ptr<Session>(new Session(device, std::move(program), std::move(weights),
                                              std::move(buffers), *std::move(commands),
                                              std::move(graphs), mask_memory,
                                              chain_with_fences));
}

namespace {

uint64_t TotalSize(absl::Span<const Buffer> buffers, const Buffer& commands) {
  uint64_t total = commands.size();
  for (const Buffer& b : buffers) total += b.size();
  return total;
}

}  // namespace

Session::Session(Device& device, std::shared_ptr<const Program> program,
                 std::shared_ptr<const Buffer> weights, std::vector<Buffer> buffers,
                 Buffer commands, std::vector<RecordedGraph> graphs, absl::Span<uint8_t> mask,
                 bool chain_with_fences)
    : device_(device),
      program_(std::move(program)),
      weights_(std::move(weights)),
      buffers_(std::move(buffers)),
      commands_(std::move(commands)),
      graphs_(std::move(graphs)),
      chain_with_fences_(chain_with_fences),
      device_memory_bytes_(TotalSize(buffers_, commands_)),
      cache_(mask) {
  for (const GraphSpec& spec : program_->graphs()) {
    stats_.graphs.push_back({spec.name, spec.rows, 0});
  }
}

absl::StatusOr<absl::Span<const float>> Session::Forward(absl::Span<const int32_t> tokens) {
  const absl::Time start = absl::Now();
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
  // A request beyond 2^32 - 1 tokens cannot fit either; clamping keeps the
  // error ResourceExhausted.
  const uint32_t n = static_cast<uint32_t>(
      std::min<size_t>(tokens.size(), std::numeric_limits<uint32_t>::max()));
  const absl::StatusOr<SlotPlacement> placement = cache_.Reserve(n);
  if (!placement.ok()) return placement.status();

  const absl::Duration device_time_before = stats_.submit_time + stats_.wait_time;
  size_t last_graph;
  if (n == 1) {
    last_graph = program_->decode_graph();
    absl::Status status = RunGraph(last_graph, tokens, *placement);
    if (!status.ok()) return status;
  } else {
    absl::StatusOr<std::vector<PrefillRun>> runs = PlanPrefill(n, program_->run_chunks());
    if (!runs.ok()) return runs.status();
    const absl::Span<const uint32_t> chunks = program_->run_chunks();
    uint32_t done = 0;
    last_graph = 0;
    for (const PrefillRun& run : *runs) {
      const size_t chunk_index =
          std::lower_bound(chunks.begin(), chunks.end(), run.chunk) - chunks.begin();
      last_graph = program_->run_chunk_graph(chunk_index);
      SlotPlacement part = *placement;
      part.first_slot += done;
      part.first_position += static_cast<int32_t>(done);
      part.count = run.tokens;
      absl::Status status = RunGraph(last_graph, tokens.subspan(done, run.tokens), part);
      if (!status.ok()) return status;
      done += run.tokens;
    }
  }

  ++stats_.forward_calls;
  stats_.tokens += n;
  stats_.host_time +=
      (absl::Now() - start) - (stats_.submit_time + stats_.wait_time - device_time_before);
  return absl::Span<const float>(graphs_[last_graph].logits, program_->info().vocab_size);
}

absl::Status Session::RunGraph(size_t graph_index, absl::Span<const int32_t> tokens,
                               const SlotPlacement& placement) {
  const RecordedGraph& graph = graphs_[graph_index];
  const uint32_t rows = program_->graphs()[graph_index].rows;
  const uint32_t count = static_cast<uint32_t>(tokens.size());
  // Padding rows come after the real ones, so causal attention keeps them
  // out of the real rows; slot -1 keeps them out of the cache. Token 0 and
  // continued positions are valid inputs whose results are discarded.
  for (uint32_t i = 0; i < rows; ++i) {
    const bool real = i < count;
    StoreI32(graph.tokens, i, real ? tokens[i] : 0);
    StoreI32(graph.positions, i, placement.position(i));
    StoreI32(graph.slots, i, real ? placement.slot(i) : -1);
  }
  StoreI32(graph.last_row, 0, static_cast<int32_t>(count - 1));

  const absl::Time deadline = absl::Now() + kStepTimeout;
  uint64_t fence = 0;
  for (size_t i = 0; i < graph.streams.size(); ++i) {
    const RecordedStream& stream = graph.streams[i];
    if (i > 0 && !chain_with_fences_) {
      const absl::Time wait_start = absl::Now();
      absl::Status waited = device_.Wait(fence, deadline);
      stats_.wait_time += absl::Now() - wait_start;
      if (!waited.ok()) return waited;
    }
    SubmitArgs args;
    args.engine = stream.engine;
    args.cmd = &commands_;
    args.cmd_offset = stream.offset;
    args.cmd_size = stream.size;
    args.bo_handles = stream.bo_handles;
    if (i > 0 && chain_with_fences_) args.in_fences = absl::MakeConstSpan(&fence, 1);
    const absl::Time submit_start = absl::Now();
    absl::StatusOr<uint64_t> submitted = device_.Submit(args);
    stats_.submit_time += absl::Now() - submit_start;
    if (!submitted.ok()) return submitted.status();
    fence = *submitted;
  }
  const absl::Time wait_start = absl::Now();
  absl::Status waited = device_.Wait(fence, deadline);
  stats_.wait_time += absl::Now() - wait_start;
  if (!waited.ok()) return waited;

  // The compute job has read the mask: the new slots become visible now.
  cache_.Commit(placement);
  ++stats_.steps;
  ++stats_.graphs[graph_index].runs;
  stats_.padded_rows += rows - count;
  return absl::OkStatus();
}

}  // namespace lnpu::runtime
