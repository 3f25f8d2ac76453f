// The app-facing LLM: a compiled model on a device (weights in device
// memory once), its tokenizer, and text generation over the fixed-capacity
// KV cache (the cache never grows; each step makes one more slot visible
// through the attention mask).
//
// Generate/GenerateFromTokens are one-shot requests on a built-in session.
// CreateSession() makes independent conversations (framework/session.h),
// each with its own KV cache, that share the weights.
//
// Thread-safety: CreateSession() and the accessors may be called from
// several threads at once, and sessions may run on different threads
// concurrently. Generate/GenerateFromTokens use the built-in session: one
// such request at a time.
#ifndef FRAMEWORK_LLM_H_
#define FRAMEWORK_LLM_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "framework/chat_template.h"
#include "framework/generation.h"
#include "framework/session.h"
#include "framework/session_batch.h"
#include "framework/tokenizer/tokenizer.h"
#include "kernel_iface/driver/device.h"
#include "runtime/model.h"
#include "runtime/sequence.h"

namespace lnpu::framework {

struct LlmOptions {
  // "auto" (an lnpu /dev/accel node, else the software NPU), "soft", or a
  // device node path.
  std::string device = "auto";
  // Copy the weights into device memory or import the artifact's file
  // mapping (runtime::WeightPlacement; kAuto copies when memory allows).
  runtime::WeightPlacement weights = runtime::WeightPlacement::kAuto;
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
  // The artifact the model was loaded from.
  const std::string& artifact_path() const { return artifact_path_; }
  // Device memory of the shared weights.
  uint64_t weights_device_memory_bytes() const { return model_->device_memory_bytes(); }
  // True when the weights are the artifact's file mapping imported into the
  // device (DRM_LNPU_CAP_USERPTR), not a copy.
  bool weights_imported() const { return model_->weights_imported(); }
  // Q8_0 matrices copied into the device's preferred panel layout
  // (runtime::LoadOptions::panel_weights).
  size_t weight_panel_matrices() const { return model_->panel_matrices(); }
  // Q6_K matrices converted to Q8_0 at load (runtime::LoadOptions::keep_q6_k).
  size_t weight_q6_k_conversions() const { return model_->q6_k_conversions(); }

  // The model's chat template: ChatTemplate::Detect on the artifact's
  // tokenizer.chat_template with this tokenizer's SpecialTokensOf, or
  // family `family` when given (ChatTemplate::ForFamily). Detect's errors
  // (NotFound when the model has no template).
  absl::StatusOr<ChatTemplate> GetChatTemplate(
      std::optional<ChatFamily> family = std::nullopt) const;

  // A new conversation with an empty cache (allocates its device buffers;
  // Session::device_memory_bytes() says how much). The session shares
  // ownership of the device, weights and tokenizer, so it may outlive this
  // Llm.
  absl::StatusOr<std::unique_ptr<Session>> CreateSession() const;

  // `lanes` new sessions whose decode steps run together (SessionBatch).
  // InvalidArgument when `lanes` is not one of info().decode_batches,
  // FailedPrecondition when the model has none (runtime::DecodeBatch);
  // device errors.
  absl::StatusOr<std::unique_ptr<SessionBatch>> CreateSessionBatch(size_t lanes) const;

  // Tokenizes `prompt` and generates from it (see GenerateFromTokens).
  absl::StatusOr<GenerationResult> Generate(
      std::string_view prompt, const GenerationConfig& config,
      const StreamCallback& on_token = nullptr);

  // Generates a continuation of `prompt_tokens` (BOS is not added here) on
  // the built-in session, emptied first (Session::GenerateFromTokens).
  // Errors: InvalidArgument for an empty prompt, one longer than the
  // compiled max_prompt_len, a token outside the vocabulary or a bad
  // config. When prompt plus generated tokens fill the cache, generation
  // ends with FinishReason::kLength.
  absl::StatusOr<GenerationResult> GenerateFromTokens(
      absl::Span<const int32_t> prompt_tokens, const GenerationConfig& config,
      const StreamCallback& on_token = nullptr);

 private:
  Llm() = default;

  std::shared_ptr<Device> device_;
  std::unique_ptr<runtime::Model> model_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::string artifact_path_;
  std::unique_ptr<Session> session_;  // of Generate/GenerateFromTokens
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_LLM_H_
