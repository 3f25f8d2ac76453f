// Accuracy of a model's quantized (and f16) weights against its f32
// weights: the GGUF is compiled once per weight type, every compiled model
// is fed the same tokens one at a time (teacher forcing: the next input is
// the given token, never the model's own prediction), and the logits at
// every position are compared with the baseline's (logit_accuracy.h).
//
// The baseline has f32 weights and an F32 KV cache, the exact path; each
// variant has the KV cache of EvalOptions::kv_dtype (default: the
// compiler's default F16), so its figures include the cache's rounding as a
// user of that variant sees it. Tokens run
// through the decode graph only (one row per step).
//
// Thread-safety: EvaluateWeights may run on several threads at once (each
// call has its own temporary directory and sessions).
#ifndef TOOLS_NPU_EVAL_QUANTIZATION_EVAL_H_
#define TOOLS_NPU_EVAL_QUANTIZATION_EVAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/model.h"
#include "tools/npu-eval/logit_accuracy.h"

namespace lnpu::eval {

// The weight types a variant may have, as npu-compile --weights spells them
// (compiler::ParseWeightType): "auto" and "keep" choose per tensor from the
// GGUF type, so on a quantized file they measure what its default and
// closest-to-stored artifacts lose.
inline constexpr const char* kVariantWeights[] = {"f32", "f16", "q8", "q4", "auto", "keep"};
// The KV-cache types of the variants (npu-compile --kv-dtype).
inline constexpr const char* kVariantKvDtypes[] = {"f16", "q8", "f32"};

struct EvalOptions {
  // Weight types compared with the baseline, in this order, each once;
  // members of kVariantWeights ("f32" isolates the F16 cache's share).
  std::vector<std::string> weights = {"q8", "q4", "f16"};
  // KV-cache type of every variant, a member of kVariantKvDtypes; with
  // weights {"f32"} the figures are the cache's alone.
  std::string kv_dtype = "f16";
  // "auto", "soft" or a device node path (tools::OpenToolDevice: the
  // software NPU with a 30 s job timeout, for the first steps of large
  // models under load).
  std::string device = "auto";
  // Parent of the temporary directory holding one artifact at a time;
  // empty: $TMPDIR, else /tmp.
  std::string temp_parent;
  // When set, called before each compilation with the weight type
  // ("f32 baseline" for the baseline), e.g. to print progress.
  std::function<void(std::string_view)> on_compile;
};

struct VariantAccuracy {
  std::string weights;  // a member of kVariantWeights
  uint64_t artifact_bytes = 0;
  LogitAccuracySummary accuracy;
};

struct EvalResult {
  uint32_t vocab_size = 0;
  uint64_t positions = 0;  // tokens fed, one compared logit vector each
  std::vector<VariantAccuracy> variants;  // in EvalOptions::weights order
};

// Compiles `gguf_path` as the baseline and as each variant (cache capacity
// tokens.size() + 1, so the artifacts stay small) and compares their
// teacher-forced logits at every position of `tokens`. InvalidArgument
// for no tokens, an unknown or repeated weight type (naming the accepted
// ones), an unknown KV dtype or a token outside the vocabulary; Unavailable when the temporary
// directory cannot be made; the compiler's, runtime's and device's errors
// otherwise. Temporary files are removed on return.
absl::StatusOr<EvalResult> EvaluateWeights(const std::string& gguf_path,
                                           absl::Span<const int32_t> tokens,
                                           const EvalOptions& options);

// Feeds `tokens` one at a time into a new session of `model` and calls
// `visit(i, logits)` with the logits after token i (valid during the
// call); stops at the first error, of the session or of `visit`.
absl::Status RunTeacherForced(
    runtime::Model& model, absl::Span<const int32_t> tokens,
    const std::function<absl::Status(size_t, absl::Span<const float>)>& visit);

}  // namespace lnpu::eval

#endif  // TOOLS_NPU_EVAL_QUANTIZATION_EVAL_H_
