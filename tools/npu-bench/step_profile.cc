#include "tools/npu-bench/step_profile.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/argmax.h"
#include "base/status_macros.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::bench {
namespace {

template <typename Cmd>
Cmd Read(absl::Span<const uint8_t> command) {
  Cmd c;
  std::memcpy(&c, command.data(), sizeof c);
  return c;
}

// Operations of a validated command (see CommandCost).
uint64_t OpsOf(absl::Span<const uint8_t> command, uint32_t visible_slots) {
  const auto header = Read<lnpu_cmd_header>(command);
  switch (header.opcode) {
    case LNPU_OP_MATMUL: {
      const auto c = Read<lnpu_cmd_matmul>(command);
      return 2ull * c.rows * c.k * c.n;
    }
    case LNPU_OP_ATTENTION: {
      const auto c = Read<lnpu_cmd_attention>(command);
      // Q.K and P.V over the visible slots plus the new rows.
      return 4ull * c.rows * c.heads * c.head_dim * (uint64_t{visible_slots} + c.rows);
    }
    case LNPU_OP_RMS_NORM: {
      const auto c = Read<lnpu_cmd_rms_norm>(command);
      return uint64_t{c.rows} * c.dim;
    }
    case LNPU_OP_ROPE: {
      const auto c = Read<lnpu_cmd_rope>(command);
      return uint64_t{c.rows} * c.heads * c.head_dim;
    }
    case LNPU_OP_SWIGLU:
      return Read<lnpu_cmd_swiglu>(command).count;
    case LNPU_OP_ADD:
      return Read<lnpu_cmd_add>(command).count;
    default:
      return 0;  // data movement
  }
}

std::string LayerName(int32_t layer) {
  return layer < 0 ? "other" : absl::StrCat("layer ", layer);
}

void Add(ProfileGroup& group, const ProfiledCommand& command) {
  ++group.commands;
  group.ns += command.ns;
  group.cost.bytes += command.cost.bytes;
  group.cost.ops += command.cost.ops;
}

double Rate(uint64_t amount, int64_t ns) { return ns > 0 ? amount * 1e9 / ns : 0; }

// The roofline bound of `cost`: whichever of memory and compute takes
// longer at the machine's peak.
double BoundNs(const CommandCost& cost, const Roofline& roof) {
  return std::max(roof.bytes_per_second > 0 ? cost.bytes / roof.bytes_per_second : 0,
                  roof.ops_per_second > 0 ? cost.ops / roof.ops_per_second : 0) *
         1e9;
}

double Percent(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * part / whole : 0; }

std::string GroupRow(const ProfileGroup& g, int64_t total_ns, const Roofline& roof) {
  const double bytes_per_s = Rate(g.cost.bytes, g.ns);
  const double ops_per_s = Rate(g.cost.ops, g.ns);
  const double bound_ns = BoundNs(g.cost, roof);
  return absl::StrFormat("  %-22s %5u %10.1f %6.1f%% %12.3f %9.2f %9.2f %8.1f%%\n", g.name,
                         g.commands, g.ns / 1e3, Percent(g.ns, total_ns),
                         g.cost.bytes / 1e6, bytes_per_s / 1e9, ops_per_s / 1e9,
                         g.ns > 0 ? 100.0 * bound_ns / g.ns : 0);
}

}  // namespace

absl::StatusOr<CommandCost> CostOf(uint32_t engine, absl::Span<const uint8_t> command,
                                   uint32_t visible_slots) {
  std::vector<softnpu::OperandAccess> accesses;
  LNPU_RETURN_IF_ERROR(softnpu::ValidateCommand(engine, command, &accesses).status());
  CommandCost cost;
  // Operands that name a whole table (KV cache, embedding) of which the
  // command touches only some rows: `cache` (up to two), `touched` of
  // `rows` rows.
  uint64_t cache[2] = {~uint64_t{0}, ~uint64_t{0}};
  uint64_t touched = 1, rows = 1;
  const auto header = Read<lnpu_cmd_header>(command);
  if (header.opcode == LNPU_OP_ATTENTION) {
    const auto c = Read<lnpu_cmd_attention>(command);
    cache[0] = c.k_cache;
    cache[1] = c.v_cache;
    rows = std::max(c.capacity, 1u);
    touched = std::min<uint64_t>(visible_slots, rows);
  } else if (header.opcode == LNPU_OP_GATHER_ROWS) {
    const auto c = Read<lnpu_cmd_gather_rows>(command);
    cache[0] = c.table;
    rows = std::max(c.table_rows, 1u);
    touched = std::min<uint64_t>(c.count, rows);
  } else if (header.opcode == LNPU_OP_SCATTER_ROWS) {
    const auto c = Read<lnpu_cmd_scatter_rows>(command);
    cache[0] = c.dst;
    rows = std::max(c.dst_rows, 1u);
    touched = std::min<uint64_t>(c.rows, rows);
  }
  for (const softnpu::OperandAccess& access : accesses) {
    const bool partial = access.addr == cache[0] || access.addr == cache[1];
    cost.bytes += partial ? access.bytes / rows * touched : access.bytes;
  }
  cost.ops = OpsOf(command, visible_slots);
  return cost;
}

absl::StatusOr<StepProfile> SummarizeStep(const runtime::StepTimeline& timeline,
                                          uint32_t visible_slots) {
  const runtime::GraphSpec& graph = *timeline.graph_spec;
  if (!timeline.device_profiled) {
    return absl::InvalidArgumentError(
        "the device reported no command times (it lacks DRM_LNPU_CAP_PROFILING); "
        "profile on the software NPU (--device soft)");
  }
  StepProfile profile;
  profile.graph = graph.name;
  profile.tokens = timeline.tokens;
  profile.step_ns = timeline.step.duration_ns();
  std::map<uint16_t, ProfileGroup> by_opcode;
  std::map<int32_t, ProfileGroup> by_layer;
  for (size_t j = 0; j < graph.streams.size(); ++j) {
    const runtime::StreamSpec& stream = graph.streams[j];
    const runtime::JobTimeline& job = timeline.jobs[j];
    profile.device_ns += job.device.duration_ns();
    for (size_t i = 0; i < stream.commands.size(); ++i) {
      const runtime::CommandSpec& spec = stream.commands[i];
      ++profile.command_count;
      if (i >= job.commands.size() || job.commands[i].end_ns == 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "graph '%s': command %d of job %d has no device time", graph.name, i, j));
      }
      ProfiledCommand command;
      command.job = static_cast<uint32_t>(j);
      command.index = static_cast<uint32_t>(i);
      command.layer = spec.layer;
      command.opcode = spec.opcode;
      command.ns = job.commands[i].duration_ns();
      const size_t end = i + 1 < stream.commands.size() ? stream.commands[i + 1].offset
                                                         : stream.offset + stream.size;
      LNPU_ASSIGN_OR_RETURN(
          command.cost,
          CostOf(stream.engine, timeline.command_image.subspan(spec.offset, end - spec.offset),
                 visible_slots));
      profile.commands_ns += command.ns;
      ProfileGroup& op = by_opcode[spec.opcode];
      op.name = softnpu::OpcodeName(spec.opcode);
      Add(op, command);
      ProfileGroup& layer = by_layer[spec.layer];
      layer.name = LayerName(spec.layer);
      Add(layer, command);
      profile.commands.push_back(command);
    }
  }
  for (auto& [opcode, group] : by_opcode) profile.by_opcode.push_back(group);
  std::sort(profile.by_opcode.begin(), profile.by_opcode.end(),
            [](const ProfileGroup& a, const ProfileGroup& b) { return a.ns > b.ns; });
  for (auto& [layer, group] : by_layer) {
    if (layer >= 0) profile.by_layer.push_back(group);
  }
  if (auto other = by_layer.find(-1); other != by_layer.end()) {
    profile.by_layer.push_back(other->second);
  }
  return profile;
}

StepBudget BudgetOf(const StepProfile& p, const Roofline& roof) {
  StepBudget budget;
  for (const ProfiledCommand& c : p.commands) {
    const int64_t bound = std::min<int64_t>(c.ns, std::llround(BoundNs(c.cost, roof)));
    budget.roofline_ns += bound;
    (c.opcode == LNPU_OP_MATMUL ? budget.matmul_excess_ns : budget.other_excess_ns) +=
        c.ns - bound;
  }
  budget.outside_ns = p.step_ns - p.commands_ns;
  return budget;
}

std::string FormatStepProfile(const StepProfile& p, const Roofline& roof) {
  std::string out = absl::StrFormat(
      "graph %s, %d token(s): step %.1f us on the host, jobs %.1f us on the device, "
      "%d commands %.1f us (%.1f%% of the step)\n",
      p.graph, p.tokens, p.step_ns / 1e3, p.device_ns / 1e3, p.command_count,
      p.commands_ns / 1e3, Percent(p.commands_ns, p.step_ns));
  const StepBudget b = BudgetOf(p, roof);
  absl::StrAppendFormat(
      &out,
      "the step against the roofline: %.1f us (%.1f%%) at the limits, MATMUL +%.1f us "
      "(%.1f%%), other commands +%.1f us (%.1f%%), outside the commands %.1f us (%.1f%%)\n",
      b.roofline_ns / 1e3, Percent(b.roofline_ns, p.step_ns), b.matmul_excess_ns / 1e3,
      Percent(b.matmul_excess_ns, p.step_ns), b.other_excess_ns / 1e3,
      Percent(b.other_excess_ns, p.step_ns), b.outside_ns / 1e3,
      Percent(b.outside_ns, p.step_ns));
  const std::string header =
      "                         cmds    time us   share     MB moved      GB/s     GOP/s  "
      "roofline\n";
  absl::StrAppend(&out, "by opcode\n", header);
  for (const ProfileGroup& g : p.by_opcode) absl::StrAppend(&out, GroupRow(g, p.commands_ns, roof));
  absl::StrAppend(&out, "by layer\n", header);
  for (const ProfileGroup& g : p.by_layer) absl::StrAppend(&out, GroupRow(g, p.commands_ns, roof));
  return out;
}

absl::StatusOr<std::vector<StepProfile>> ProfileModel(
    runtime::Model& model, uint32_t prompt_tokens, uint64_t seed,
    const runtime::Sequence::StepObserver& also) {
  const runtime::ModelInfo& info = model.info();
  if (prompt_tokens < 1 || prompt_tokens >= info.kv_capacity) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--profile: a prefill of %d tokens and a decode step do not fit the KV cache of %d "
        "slots; give a shorter first --prompt-lengths entry",
        prompt_tokens, info.kv_capacity));
  }
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Sequence> sequence, model.CreateSequence());
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(info.vocab_size) - 1);
  std::vector<int32_t> prompt(prompt_tokens);
  for (int32_t& t : prompt) t = token(random);
  auto run = [&]() -> absl::Status {
    sequence->Reset();
    LNPU_ASSIGN_OR_RETURN(absl::Span<const float> logits, sequence->Forward(prompt));
    return sequence->Forward({Argmax(logits)}).status();
  };
  LNPU_RETURN_IF_ERROR(run());  // warm-up

  std::vector<StepProfile> profiles;
  absl::Status summarized = absl::OkStatus();
  uint32_t visible = 0;  // cache slots before the observed run
  LNPU_RETURN_IF_ERROR(sequence->SetStepObserver([&](const runtime::StepTimeline& timeline) {
    if (also) also(timeline);
    absl::StatusOr<StepProfile> profile =
        SummarizeStep(timeline, visible);
    visible += timeline.tokens;
    if (!profile.ok()) {
      summarized.Update(profile.status());
    } else {
      profiles.push_back(*std::move(profile));
    }
  }));
  const absl::Status ran = run();
  LNPU_RETURN_IF_ERROR(sequence->SetStepObserver(nullptr));
  LNPU_RETURN_IF_ERROR(ran);
  LNPU_RETURN_IF_ERROR(summarized);
  return profiles;
}

BatchedDecodeOptions ProfiledBatchedDecodeOptions(BatchedDecodeOptions options) {
  options.steps = 1;
  options.reps = 1;
  options.warmups = 1;
  return options;
}

absl::StatusOr<std::vector<StepProfile>> ProfileBatchedDecode(
    runtime::Model& model, const BatchedDecodeOptions& options,
    const runtime::Sequence::StepObserver& also) {
  BatchedDecodeOptions one_step = ProfiledBatchedDecodeOptions(options);
  // Before the observed step each lane holds its prompt and the warm-up steps' tokens.
  const uint32_t visible = one_step.prompt_tokens + one_step.warmups * one_step.steps;
  std::vector<StepProfile> profiles;
  absl::Status summarized = absl::OkStatus();
  one_step.observer = [&](const runtime::StepTimeline& timeline) {
    if (also) also(timeline);
    absl::StatusOr<StepProfile> profile = SummarizeStep(timeline, visible);
    if (!profile.ok()) {
      summarized.Update(profile.status());
    } else {
      profiles.push_back(*std::move(profile));
    }
  };
  LNPU_RETURN_IF_ERROR(RunBatchedDecode(model, one_step).status());
  LNPU_RETURN_IF_ERROR(summarized);
  return profiles;
}

double BestMatmulRate(absl::Span<const StepProfile> profiles) {
  double best = 0;
  for (const StepProfile& profile : profiles) {
    for (const ProfiledCommand& command : profile.commands) {
      if (command.opcode == LNPU_OP_MATMUL) best = std::max(best, Rate(command.cost.ops, command.ns));
    }
  }
  return best;
}

}  // namespace lnpu::bench
