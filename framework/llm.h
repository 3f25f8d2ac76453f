// The app-facing LLM: a compiled model on a device, its tokenizer, and text
// generation over the fixed-capacity KV cache (the cache never grows; each
// step makes one more slot visible through the attention mask).
//
// Thread-safety: one Llm serves one request at a time; use one Llm per
// thread for concurrent requests.
#ifndef FRAMEWORK_LLM_H_
#define FRAMEWORK_LLM_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "framework/generation.h"
#include "framework/tokenizer/tokenizer.h"
#include "kernel_iface/driver/device.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace lnpu::framework {

struct LlmOptions {
  // "auto" (an lnpu /dev/accel node, else the software NPU), "soft", or a
  // device node path.
  std::string device = "auto";
};

class Llm {
 public:
  // Opens the device, loads and verifies the artifact, places the weights
  // in device memory and records the graphs.
  static absl::StatusOr<std::unique_ptr<Llm>> Load(
      const std::string& artifact_path, const LlmOptions& options = {});
  ~Llm();

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const runtime::ModelInfo& info() const { return model_->info(); }
  const Device& device() const { return *device_; }

  // Tokenizes `prompt` and generates from it (see GenerateFromTokens).
  absl::StatusOr<GenerationResult> Generate(
      std::string_view prompt, const GenerationConfig& config,
      const StreamCallback& on_token = nullptr);

  // Generates a continuation of `prompt_tokens` (BOS is not added here).
  // The cache is emptied first. Errors: InvalidArgument for an empty
  // prompt, one longer than the compiled max_prompt_len, a token outside
  // the vocabulary or a bad config. When prompt plus generated tokens fill
  // the cache, generation ends with FinishReason::kLength.
  absl::StatusOr<GenerationResult> GenerateFromTokens(
      absl::Span<const int32_t> prompt_tokens, const GenerationConfig& config,
      const StreamCallback& on_token = nullptr);

 private:
  Llm() = default;

  std::unique_ptr<Device> device_;
  std::unique_ptr<runtime::Model> model_;
  std::unique_ptr<runtime::Session> session_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_LLM_H_
