#include "framework/llm.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "framework/sampler.h"
#include "framework/tokenizer/streaming_detokenizer.h"

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

double Milliseconds(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

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
  auto model = runtime::Model::Load(*llm->device_, artifact_path);
  if (!model.ok()) return model.status();
  llm->model_ = *std::move(model);
  auto session = llm->model_->CreateSession();
  if (!session.ok()) return session.status();
  llm->session_ = *std::move(session);
  auto tokenizer = Tokenizer::Create(VocabularyOf(llm->model_->info()));
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat(artifact_path, ": tokenizer: ",
                                     tokenizer.status().message()));
  }
  llm->tokenizer_ = *std::move(tokenizer);
  return llm;
}

Llm::~Llm() {
  // Device buffers must go before the device that owns them.
  session_.reset();
  model_.reset();
}

absl::StatusOr<GenerationResult> Llm::Generate(std::string_view prompt,
                                               const GenerationConfig& config,
                                               const StreamCallback& on_token) {
  auto tokens = tokenizer_->Encode(
      prompt, config.add_bos && tokenizer_->vocabulary().add_bos);
  if (!tokens.ok()) return tokens.status();
  return GenerateFromTokens(*tokens, config, on_token);
}

absl::StatusOr<GenerationResult> Llm::GenerateFromTokens(
    absl::Span<const int32_t> prompt_tokens, const GenerationConfig& config,
    const StreamCallback& on_token) {
  const absl::Time start = absl::Now();
  const runtime::ModelInfo& info = model_->info();
  if (prompt_tokens.empty()) {
    return absl::InvalidArgumentError("the prompt is empty: give at least one token");
  }
  if (prompt_tokens.size() > info.max_prompt_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prompt has ", prompt_tokens.size(),
        " tokens but the model was compiled for at most ", info.max_prompt_len,
        ": shorten the prompt, or recompile with npu-compile --max-prompt-len ",
        prompt_tokens.size(), " or more"));
  }
  if (config.max_new_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_new_tokens is ", config.max_new_tokens, ": ask for at least 1"));
  }
  if (absl::Status valid = Sampler::Validate(config); !valid.ok()) return valid;

  session_->Reset();
  auto logits = session_->Forward(prompt_tokens);
  if (!logits.ok()) return logits.status();

  GenerationResult result;
  result.stats.prompt_tokens = static_cast<int>(prompt_tokens.size());
  result.stats.prefill_ms = Milliseconds(absl::Now() - start);
  Sampler sampler(config);
  // After a prompt with text, a generated token's leading space separates
  // it from that text; after a lone BOS it starts the text.
  const bool prompt_has_text =
      prompt_tokens.size() > 1 || prompt_tokens[0] != tokenizer_->bos_id();
  StreamingDetokenizer detokenizer(
      *tokenizer_, prompt_has_text ? StreamingDetokenizer::Start::kContinuation
                                   : StreamingDetokenizer::Start::kStartOfText);
  absl::Time first_token_time;
  const uint32_t capacity = session_->cache().capacity();
  const size_t prompt_size = prompt_tokens.size();

  while (true) {
    const int32_t token = sampler.Sample(*logits);
    if (result.tokens.empty()) {
      first_token_time = absl::Now();
      result.stats.time_to_first_token_ms = Milliseconds(first_token_time - start);
    }
    if (config.stop_at_eos && tokenizer_->IsEndOfGeneration(token)) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    result.tokens.push_back(token);
    std::string piece = detokenizer.Push(token);
    result.text += piece;
    if (on_token && !on_token(token, piece)) {
      result.finish_reason = FinishReason::kCancelled;
      break;
    }
    if (result.tokens.size() >= static_cast<size_t>(config.max_new_tokens) ||
        prompt_size + result.tokens.size() >= capacity) {
      // Prompt plus generated tokens fill the cache: the last token's K/V
      // would have no slot, so it is not run through the model.
      result.finish_reason = FinishReason::kLength;
      break;
    }
    logits = session_->Forward(absl::MakeConstSpan(&token, 1));
    if (!logits.ok()) return logits.status();
  }

  std::string tail = detokenizer.Flush();
  if (!tail.empty()) {
    result.text += tail;
    if (on_token) on_token(-1, tail);
  }
  const absl::Time end = absl::Now();
  result.stats.generated_tokens = static_cast<int>(result.tokens.size());
  if (!result.tokens.empty() || result.finish_reason == FinishReason::kStop) {
    result.stats.decode_ms = Milliseconds(end - first_token_time);
  }
  if (result.tokens.size() > 1 && result.stats.decode_ms > 0) {
    result.stats.decode_tokens_per_second =
        (result.tokens.size() - 1) * 1000.0 / result.stats.decode_ms;
  }
  return result;
}

}  // namespace lnpu::framework
