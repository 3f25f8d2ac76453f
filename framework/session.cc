#include "framework/session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "framework/generator.h"
#include "framework/llm.h"
#include "framework/sampler.h"
#include "framework/stop_strings.h"
#include "framework/tokenizer/streaming_detokenizer.h"
#include "runtime/cache_snapshot.h"

namespace lnpu::framework {
Session::Session(std::shared_ptr<const Tokenizer> tokenizer, std::string artifact_path,
                 std::unique_ptr<runtime::Sequence> runtime)
    : tokenizer_(std::move(tokenizer)),
      artifact_path_(std::move(artifact_path)),
      runtime_(std::move(runtime)) {}

Session::~Session() = default;

absl::Status Session::SetCacheFullPolicy(const runtime::CacheFullPolicy& policy) {
  return runtime_->SetCacheFullPolicy(policy);
}

void Session::Reset() {
  runtime_->Reset();
  pending_.clear();
}

std::vector<int32_t> Session::Tokens() const {
  std::vector<int32_t> tokens = runtime_->cache().TokensInContext();
  tokens.insert(tokens.end(), pending_.begin(), pending_.end());
  return tokens;
}

int64_t Session::processed_tokens() const { return runtime_->cache().next_position(); }

uint32_t Session::free_slots() const { return runtime_->cache().free_slots(); }

bool Session::StartsWithBos(bool add_bos) const {
  const bool empty = runtime_->cache().next_position() == 0 && pending_.empty();
  return add_bos && empty && tokenizer_->vocabulary().add_bos;
}

absl::StatusOr<std::vector<int32_t>> Session::Tokenize(std::string_view text,
                                                       bool add_bos) const {
  return tokenizer_->Encode(text, StartsWithBos(add_bos));
}

absl::StatusOr<std::vector<int32_t>> Session::TokenizeSegments(
    absl::Span<const TextSegment> prompt, bool add_bos) const {
  return tokenizer_->EncodeSegments(prompt, StartsWithBos(add_bos));
}

absl::Status Session::CheckInput(absl::Span<const int32_t> input) const {
  const runtime::ModelInfo& info = runtime_->info();
  if (input.empty()) {
    return absl::InvalidArgumentError("the input is empty: give at least one token");
  }
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i] < 0 || static_cast<uint32_t>(input[i]) >= info.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", input[i], " at index ", i,
                                                     " is outside the vocabulary [0, ",
                                                     info.vocab_size, ")"));
    }
  }
  const runtime::KvCacheState& cache = runtime_->cache();
  if (cache.next_position() == 0 && input.size() > info.max_prompt_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prompt has ", input.size(), " tokens but the model was compiled for at most ",
        info.max_prompt_len, ": shorten the prompt, or recompile with npu-compile "
        "--max-prompt-len ", input.size(), " or more"));
  }
  if (!cache.policy().ring() && input.size() > cache.free_slots()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the conversation holds ", cache.written_slots(), " of ", cache.capacity(),
        " cache slots and the ", input.size(), " new tokens do not fit: reset the session, "
        "enable the ring context policy, or recompile with a larger capacity"));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const float>> Session::RunPending(size_t count) {
  const runtime::KvCacheState& cache = runtime_->cache();
  const int64_t before = cache.next_position();
  absl::StatusOr<absl::Span<const float>> logits =
      runtime_->Forward(absl::MakeConstSpan(pending_).first(count));
  // Tokens that did not make it into the cache (a device error) stay
  // pending for the next call.
  const size_t run = static_cast<size_t>(cache.next_position() - before);
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(run));
  return logits;
}

absl::StatusOr<absl::Span<const float>> Session::RunInput(absl::Span<const int32_t> tokens) {
  std::vector<int32_t> input = pending_;
  input.insert(input.end(), tokens.begin(), tokens.end());
  LNPU_RETURN_IF_ERROR(CheckInput(input));
  pending_ = std::move(input);
  return RunPending(pending_.size());
}

absl::Status Session::Append(std::string_view text, bool add_bos) {
  LNPU_ASSIGN_OR_RETURN(const std::vector<int32_t> tokens, Tokenize(text, add_bos));
  return AppendTokens(tokens);
}

absl::Status Session::AppendTokens(absl::Span<const int32_t> tokens) {
  return RunInput(tokens).status();
}

absl::StatusOr<GenerationResult> Session::Generate(std::string_view text,
                                                   const GenerationConfig& config,
                                                   const StreamCallback& on_token) {
  LNPU_ASSIGN_OR_RETURN(const std::vector<int32_t> tokens, Tokenize(text, config.add_bos));
  return GenerateFromTokens(tokens, config, on_token);
}

absl::StatusOr<GenerationResult> Session::GenerateFromTokens(absl::Span<const int32_t> tokens,
                                                             const GenerationConfig& config,
                                                             const StreamCallback& on_token) {
  LNPU_ASSIGN_OR_RETURN(Generator generator,
                        Generator::Start(*this, tokens, config, {.on_token = on_token}));
  while (!generator.done()) {
    LNPU_RETURN_IF_ERROR(generator.Step());
  }
  return generator.TakeResult();
}

absl::StatusOr<runtime::CacheSnapshot> Session::SaveState() const {
  LNPU_ASSIGN_OR_RETURN(runtime::CacheSnapshot state, runtime_->SaveState());
  state.pending_tokens = pending_;
  return state;
}

absl::Status Session::RestoreState(const runtime::CacheSnapshot& state) {
  const uint32_t vocab_size = runtime_->info().vocab_size;
  for (int32_t token : state.pending_tokens) {
    if (token < 0 || static_cast<uint32_t>(token) >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the saved session has pending token id ", token, " outside the vocabulary [0, ",
          vocab_size, ")"));
    }
  }
  LNPU_RETURN_IF_ERROR(runtime_->RestoreState(state));
  pending_ = state.pending_tokens;
  return absl::OkStatus();
}

absl::Status Session::SaveToFile(const std::string& path) const {
  LNPU_ASSIGN_OR_RETURN(const runtime::CacheSnapshot state, SaveState());
  return runtime::WriteCacheSnapshotFile(state, path, {artifact_path_});
}

absl::Status Session::LoadFromFile(const std::string& path) {
  LNPU_ASSIGN_OR_RETURN(const runtime::CacheSnapshot state, runtime::ReadCacheSnapshotFile(path));
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(RestoreState(state), "session file '", path, "': ");
  return absl::OkStatus();
}

absl::Status Session::CopyPrefixFrom(const Session& source, uint32_t tokens) {
  absl::Status copied = runtime_->CopyPrefixFrom(*source.runtime_, tokens);
  if (copied.ok()) pending_.clear();
  return copied;
}

}  // namespace lnpu::framework
