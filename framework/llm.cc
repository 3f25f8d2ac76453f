#include "framework/llm.h"

#include <utility>
#include <vector>

#include "base/status_macros.h"

namespace lnpu::framework {
std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "unknown";
}

std::string_view SpeculativeKindName(SpeculativeConfig::Kind kind) {
  switch (kind) {
    case SpeculativeConfig::Kind::kNone:
      return "none";
    case SpeculativeConfig::Kind::kPromptLookup:
      return "prompt_lookup";
    case SpeculativeConfig::Kind::kDraftModel:
      return "draft_model";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Llm>> Llm::Load(const std::string& artifact_path,
                                               const LlmOptions& options) {
  std::unique_ptr<Llm> llm(new Llm());
  LNPU_ASSIGN_OR_RETURN(auto device, Device::Open(options.device));
  llm->device_ = std::move(device);
  LNPU_ASSIGN_OR_RETURN(
      auto model, runtime::Model::Load(llm->device_, artifact_path, {.weights = options.weights}));
  llm->model_ = std::move(model);
  auto tokenizer = Tokenizer::Create(llm->model_->info().vocabulary);
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(tokenizer.status(), artifact_path, ": tokenizer: ");
  llm->tokenizer_ = *std::move(tokenizer);
  llm->artifact_path_ = artifact_path;
  LNPU_ASSIGN_OR_RETURN(auto session, llm->CreateSession());
  llm->session_ = std::move(session);
  return llm;
}

Llm::~Llm() = default;

absl::StatusOr<ChatTemplate> Llm::GetChatTemplate(std::optional<ChatFamily> family) const {
  const ChatSpecialTokens specials = SpecialTokensOf(*tokenizer_);
  if (family.has_value()) return ChatTemplate::ForFamily(*family, specials);
  return ChatTemplate::Detect(info().chat_template, specials);
}

absl::StatusOr<std::unique_ptr<Session>> Llm::CreateSession() const {
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Sequence> runtime, model_->CreateSequence());
  return std::unique_ptr<Session>(new Session(tokenizer_, artifact_path_, std::move(runtime)));
}

absl::StatusOr<std::unique_ptr<SessionBatch>> Llm::CreateSessionBatch(size_t lanes) const {
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<runtime::Sequence*> sequences;
  for (size_t i = 0; i < lanes; ++i) {
    LNPU_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, CreateSession());
    sequences.push_back(session->runtime_.get());
    sessions.push_back(std::move(session));
  }
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::DecodeBatch> batch,
                        model_->CreateDecodeBatch(sequences));
  return std::unique_ptr<SessionBatch>(new SessionBatch(std::move(sessions), std::move(batch)));
}

absl::StatusOr<GenerationResult> Llm::Generate(std::string_view prompt,
                                               const GenerationConfig& config,
                                               const StreamCallback& on_token) {
  session_->Reset();
  return session_->Generate(prompt, config, on_token);
}

absl::StatusOr<GenerationResult> Llm::GenerateFromTokens(
    absl::Span<const int32_t> prompt_tokens, const GenerationConfig& config,
    const StreamCallback& on_token) {
  session_->Reset();
  return session_->GenerateFromTokens(prompt_tokens, config, on_token);
}

}  // namespace lnpu::framework
