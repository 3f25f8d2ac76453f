// npu-bench --profile: where the time of one graph run goes, per command,
// per opcode and per layer, with the bytes each command moves and the
// operations it performs, against the machine's roofline (read bandwidth
// and a compute peak).
//
// Thread-safety: plain functions and values.
#ifndef TOOLS_NPU_BENCH_STEP_PROFILE_H_
#define TOOLS_NPU_BENCH_STEP_PROFILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/model.h"
#include "runtime/sequence.h"
#include "runtime/step_timeline.h"
#include "tools/npu-bench/batched_decode.h"

namespace lnpu::bench {

// What one command costs: the bytes of the operands it names (read and
// written; of a table only the rows touched: ATTENTION reads the
// `visible_slots` cache rows, SCATTER_ROWS writes its `rows`, GATHER_ROWS
// reads its `count`) and its operations (2 per multiply-add of MATMUL and
// ATTENTION, 1 per output element otherwise). The command's addresses
// must be real ones (operands of different buffers must not overlap).
struct CommandCost {
  uint64_t bytes = 0;
  uint64_t ops = 0;
};

// InvalidArgument when `command` (one command of the engine's stream) is
// malformed.
absl::StatusOr<CommandCost> CostOf(uint32_t engine, absl::Span<const uint8_t> command,
                                   uint32_t visible_slots);

struct ProfiledCommand {
  uint32_t job = 0;    // stream of the graph
  uint32_t index = 0;  // in the stream
  int32_t layer = -1;
  uint16_t opcode = 0;
  int64_t ns = 0;
  CommandCost cost;
};

// Commands summed by a key (an opcode or a layer).
struct ProfileGroup {
  std::string name;
  uint32_t commands = 0;
  int64_t ns = 0;
  CommandCost cost;
};

struct StepProfile {
  std::string graph;
  uint32_t tokens = 0;
  int64_t step_ns = 0;      // host: the whole run (submit to completion)
  int64_t device_ns = 0;    // the jobs on their engines
  int64_t commands_ns = 0;  // sum over commands
  uint32_t command_count = 0;  // in the graph's streams
  std::vector<ProfiledCommand> commands;  // every command, in order
  std::vector<ProfileGroup> by_opcode;    // by time, largest first
  std::vector<ProfileGroup> by_layer;     // layer order; "other" last
};

// The profile of an observed run with device times (`timeline.
// device_profiled`) that attended to `visible_slots` cached slots.
// InvalidArgument when the timeline has no device times or misses a
// command.
absl::StatusOr<StepProfile> SummarizeStep(const runtime::StepTimeline& timeline,
                                          uint32_t visible_slots);

// The machine's limits the achieved rates are compared with.
struct Roofline {
  double bytes_per_second = 0;  // read bandwidth (npu-bench measures it)
  double ops_per_second = 0;    // compute peak
};

// A step's time against the roofline, in four parts that sum to step_ns:
// what its commands would take at the machine's limits (per command the
// larger of its bytes at the read bandwidth and its operations at the
// compute peak; a command faster than that, its operands in cache, counts
// at its own time), how much longer the MATMULs and the other commands
// took, and the step's time outside the commands (runtime, submits, fence
// wake-ups; negative only if commands of different engines overlapped).
struct StepBudget {
  int64_t roofline_ns = 0;
  int64_t matmul_excess_ns = 0;
  int64_t other_excess_ns = 0;
  int64_t outside_ns = 0;
};
StepBudget BudgetOf(const StepProfile& profile, const Roofline& roofline);

// The profile as text: the step's budget (BudgetOf), then the groups by
// opcode and by layer.
std::string FormatStepProfile(const StepProfile& profile, const Roofline& roofline);

// Runs one prefill of `prompt_tokens` random tokens (seeded) and one
// decode step on a new sequence of `model`, after one untimed run of both,
// with every graph run observed; returns their profiles in order (the
// prefill's runs, then the decode step). `also`, if set, sees every
// observed timeline too (a trace). InvalidArgument when the prompt does
// not leave room for the decode step, or as SummarizeStep.
absl::StatusOr<std::vector<StepProfile>> ProfileModel(runtime::Model& model,
                                                      uint32_t prompt_tokens, uint64_t seed,
                                                      const runtime::Sequence::StepObserver& also);


// `options` as ProfileBatchedDecode runs them: one warm-up step, then one
// timed (profiled) step. Check them with CheckBatchedDecode.
BatchedDecodeOptions ProfiledBatchedDecodeOptions(BatchedDecodeOptions options);

// One profiled batched decode step of each lane count of `options` (run
// as ProfiledBatchedDecodeOptions(options)), each lane's cache holding its
// prompt and the warm-up token: what ProfileModel gives for a decode step,
// for L lanes at once. `also` observes the same runs. Errors as
// RunBatchedDecode and ProfileModel.
absl::StatusOr<std::vector<StepProfile>> ProfileBatchedDecode(
    runtime::Model& model, const BatchedDecodeOptions& options,
    const runtime::Sequence::StepObserver& also = nullptr);

// The best MATMUL rate among `profiles` (ops/s): the compute roof that
// npu-bench --profile compares with (a lower bound of the true peak).
double BestMatmulRate(absl::Span<const StepProfile> profiles);

}  // namespace lnpu::bench

#endif  // TOOLS_NPU_BENCH_STEP_PROFILE_H_
