#include "framework/llm.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace lnpu::framework {
namespace {

Vocabulary VocabularyOf(const runtime::ModelInfo& info) {
  Vocabulary vocabulary;
  vocabulary.type = info.tokenizer_is_byte_level_bpe
                        ? TokenizerType::kByteLevelBpe
                        : TokenizerType::kSentencePiece;
  vocabulary.pre = info.tokenizer_pre;
  vocabulary.tokens = info.tokens;
  vocabulary.scores = info.scores;
  vocabulary.token_types = info.token_types;
  vocabulary.merges = info.merges;
  vocabulary.bos_id = info.bos_id;
  vocabulary.eos_id = info.eos_id;
  vocabulary.unk_id = info.unk_id;
  vocabulary.pad_id = info.pad_id;
  vocabulary.add_bos = info.add_bos;
  vocabulary.add_eos = info.add_eos;
  vocabulary.add_space_prefix = info.add_space_prefix;
  return vocabulary;
}

}  // namespace

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

absl::StatusOr<std::unique_ptr<Llm>> Llm::Load(const std::string& artifact_path,
                                               const LlmOptions& options) {
  std::unique_ptr<Llm> llm(new Llm());
  auto device = Device::Open(options.device);
  if (!device.ok()) return device.status();
  llm->device_ = *std::move(device);
  auto model = runtime::Model::Load(*llm->device_, artifact_path,
                                    {.import_weights = options.import_weights});
  if (!model.ok()) return model.status();
  llm->model_ = *std::move(model);
  auto tokenizer = Tokenizer::Create(VocabularyOf(llm->model_->info()));
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat(artifact_path, ": tokenizer: ",
                                     tokenizer.status().message()));
  }
  llm->tokenizer_ = *std::move(tokenizer);
  auto session = llm->CreateSession();
  if (!session.ok()) return session.status();
  llm->session_ = *std::move(session);
  return llm;
}

Llm::~Llm() {
  // Device buffers must go before the device that owns them.
  session_.reset();
  model_.reset();
}

absl::StatusOr<ChatTemplate> Llm::GetChatTemplate(std::optional<ChatFamily> family) const {
  const ChatSpecialTokens specials = SpecialTokensOf(*tokenizer_);
  if (family.has_value()) return ChatTemplate::ForFamily(*family, specials);
  return ChatTemplate::Detect(info().chat_template, specials);
}

absl::StatusOr<std::unique_ptr<Session>> Llm::CreateSession() const {
  absl::StatusOr<std::unique_ptr<runtime::Session>> runtime = model_->CreateSession();
  if (!runtime.ok()) return runtime.status();
  return std::unique_ptr<Session>(new Session(*this, *std::move(runtime)));
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
