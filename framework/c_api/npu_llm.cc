// The C API over framework::Llm and framework::Session.
#include "framework/c_api/npu_llm.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "framework/llm.h"
#include "framework/session.h"

struct npu_llm {
  std::unique_ptr<lnpu::framework::Llm> llm;
};

struct npu_llm_session {
  std::unique_ptr<lnpu::framework::Session> session;
};

namespace {

using lnpu::framework::FinishReason;

thread_local std::string last_error;

npu_llm_status StatusCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return NPU_LLM_OK;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kDataLoss:
      return NPU_LLM_INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return NPU_LLM_NOT_FOUND;
    case absl::StatusCode::kPermissionDenied:
      return NPU_LLM_PERMISSION_DENIED;
    case absl::StatusCode::kResourceExhausted:
      return NPU_LLM_RESOURCE_EXHAUSTED;
    case absl::StatusCode::kFailedPrecondition:
      return NPU_LLM_FAILED_PRECONDITION;
    case absl::StatusCode::kUnimplemented:
      return NPU_LLM_UNIMPLEMENTED;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kCancelled:
      return NPU_LLM_DEVICE_ERROR;
    default:
      return NPU_LLM_INTERNAL;
  }
}

// Records `status` as this thread's last error and returns its code.
npu_llm_status Report(const absl::Status& status) {
  last_error = status.ok() ? std::string() : std::string(status.message());
  return StatusCode(status);
}

npu_llm_status NullArgument(const char* name) {
  return Report(absl::InvalidArgumentError(absl::StrCat(name, " is NULL")));
}

// Runs `body` (returning absl::Status) so that no C++ exception (e.g.
// std::bad_alloc) crosses the C boundary.
template <typename Body>
npu_llm_status Guarded(Body&& body) {
  try {
    return Report(body());
  } catch (const std::bad_alloc&) {
    return Report(absl::ResourceExhaustedError("out of host memory"));
  } catch (const std::exception& e) {
    return Report(absl::InternalError(absl::StrCat("unexpected exception: ", e.what())));
  }
}

lnpu::framework::GenerationConfig ConfigOf(const npu_llm_config& c) {
  lnpu::framework::GenerationConfig config;
  config.max_new_tokens = c.max_new_tokens;
  config.temperature = c.temperature;
  config.top_k = c.top_k;
  config.top_p = c.top_p;
  config.min_p = c.min_p;
  config.repetition_penalty = c.repetition_penalty;
  config.presence_penalty = c.presence_penalty;
  config.frequency_penalty = c.frequency_penalty;
  config.repeat_last_n = c.repeat_last_n;
  config.seed = c.seed;
  config.add_bos = c.add_bos != 0;
  config.stop_at_eos = c.stop_at_eos != 0;
  for (size_t i = 0; i < c.n_stop_strings; ++i) config.stop_strings.push_back(c.stop_strings[i]);
  config.stop_token_ids.assign(c.stop_tokens, c.stop_tokens + c.n_stop_tokens);
  for (size_t i = 0; i < c.n_logit_bias; ++i) {
    config.logit_bias[c.logit_bias[i].token] = c.logit_bias[i].bias;
  }
  using Kind = lnpu::framework::SpeculativeConfig::Kind;
  config.speculative.kind = c.speculative == NPU_LLM_SPECULATIVE_LOOKUP  ? Kind::kPromptLookup
                            : c.speculative == NPU_LLM_SPECULATIVE_DRAFT ? Kind::kDraftModel
                                                                         : Kind::kNone;
  config.speculative.max_draft_tokens = c.draft_tokens;
  config.speculative.draft = c.draft_session != nullptr ? c.draft_session->session.get() : nullptr;
  config.speculative.min_draft_probability = c.draft_min_probability;
  return config;
}

// InvalidArgument when a (pointer, count) pair of `c` is (NULL, > 0) or a
// stop string is NULL.
absl::Status CheckArrays(const npu_llm_config& c) {
  if (c.speculative < NPU_LLM_SPECULATIVE_NONE || c.speculative > NPU_LLM_SPECULATIVE_DRAFT) {
    return absl::InvalidArgumentError(
        absl::StrCat("npu_llm_config.speculative is ", static_cast<int>(c.speculative),
                     ": use NPU_LLM_SPECULATIVE_NONE, _LOOKUP or _DRAFT"));
  }
  if ((c.n_stop_strings > 0 && c.stop_strings == nullptr) ||
      (c.n_stop_tokens > 0 && c.stop_tokens == nullptr) ||
      (c.n_logit_bias > 0 && c.logit_bias == nullptr)) {
    return absl::InvalidArgumentError(
        "npu_llm_config has a NULL array with a nonzero count (stop_strings, stop_tokens or "
        "logit_bias)");
  }
  for (size_t i = 0; i < c.n_stop_strings; ++i) {
    if (c.stop_strings[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("stop_strings[", i, "] is NULL"));
    }
  }
  return absl::OkStatus();
}

npu_llm_finish_reason FinishOf(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return NPU_LLM_FINISH_STOP;
    case FinishReason::kLength:
      return NPU_LLM_FINISH_LENGTH;
    case FinishReason::kCancelled:
      return NPU_LLM_FINISH_CANCELLED;
    case FinishReason::kError:
      return NPU_LLM_FINISH_ERROR;
  }
  return NPU_LLM_FINISH_ERROR;
}

}  // namespace

extern "C" {

const char* npu_llm_last_error(void) { return last_error.c_str(); }

npu_llm_status npu_llm_open(const char* artifact_path, const char* device, npu_llm** out) {
  if (out == nullptr) return NullArgument("out");
  *out = nullptr;
  if (artifact_path == nullptr) return NullArgument("artifact_path");
  return Guarded([&]() -> absl::Status {
    lnpu::framework::LlmOptions options;
    if (device != nullptr) options.device = device;
    LNPU_ASSIGN_OR_RETURN(std::unique_ptr<lnpu::framework::Llm> llm,
                          lnpu::framework::Llm::Load(artifact_path, options));
    *out = new npu_llm{std::move(llm)};
    return absl::OkStatus();
  });
}

void npu_llm_close(npu_llm* llm) { delete llm; }

void npu_llm_model_info_get(const npu_llm* llm, npu_llm_model_info* info) {
  if (llm == nullptr || info == nullptr) return;
  const lnpu::runtime::ModelInfo& model = llm->llm->info();
  info->vocab_size = model.vocab_size;
  info->kv_capacity = model.kv_capacity;
  info->max_prompt_len = model.max_prompt_len;
  info->bos_id = model.vocabulary.bos_id;
  info->eos_id = model.vocabulary.eos_id;
  info->weights_bytes = llm->llm->weights_device_memory_bytes();
}

void npu_llm_config_init(npu_llm_config* config) {
  if (config == nullptr) return;
  const lnpu::framework::GenerationConfig defaults;
  *config = npu_llm_config{};
  config->max_new_tokens = defaults.max_new_tokens;
  config->temperature = defaults.temperature;
  config->top_k = defaults.top_k;
  config->top_p = defaults.top_p;
  config->min_p = defaults.min_p;
  config->repetition_penalty = defaults.repetition_penalty;
  config->presence_penalty = defaults.presence_penalty;
  config->frequency_penalty = defaults.frequency_penalty;
  config->repeat_last_n = defaults.repeat_last_n;
  config->seed = defaults.seed;
  config->add_bos = defaults.add_bos ? 1 : 0;
  config->stop_at_eos = defaults.stop_at_eos ? 1 : 0;
  config->speculative = NPU_LLM_SPECULATIVE_NONE;
  config->draft_tokens = defaults.speculative.max_draft_tokens;
  config->draft_min_probability = defaults.speculative.min_draft_probability;
}

void npu_llm_result_clear(npu_llm_result* result) {
  if (result == nullptr) return;
  std::free(result->text);
  *result = npu_llm_result{};
}

npu_llm_status npu_llm_session_create(npu_llm* llm, npu_llm_session** out) {
  if (out == nullptr) return NullArgument("out");
  *out = nullptr;
  if (llm == nullptr) return NullArgument("llm");
  return Guarded([&]() -> absl::Status {
    LNPU_ASSIGN_OR_RETURN(std::unique_ptr<lnpu::framework::Session> session,
                          llm->llm->CreateSession());
    *out = new npu_llm_session{std::move(session)};
    return absl::OkStatus();
  });
}

void npu_llm_session_destroy(npu_llm_session* session) { delete session; }

npu_llm_status npu_llm_session_generate(npu_llm_session* session, const char* text,
                                        const npu_llm_config* config,
                                        npu_llm_token_callback callback, void* user_data,
                                        npu_llm_result* result) {
  if (session == nullptr) return NullArgument("session");
  if (text == nullptr) return NullArgument("text");
  if (result == nullptr) return NullArgument("result");
  *result = npu_llm_result{};
  std::string device_error;
  const npu_llm_status status = Guarded([&]() -> absl::Status {
    npu_llm_config defaults;
    npu_llm_config_init(&defaults);
    const npu_llm_config& c = config != nullptr ? *config : defaults;
    LNPU_RETURN_IF_ERROR(CheckArrays(c));
    lnpu::framework::StreamCallback on_token;
    if (callback != nullptr) {
      on_token = [&](int32_t token, std::string_view piece) {
        return callback(user_data, token, piece.data(), piece.size()) != 0;
      };
    }
    LNPU_ASSIGN_OR_RETURN(lnpu::framework::GenerationResult generated,
                          session->session->Generate(text, ConfigOf(c), on_token));
    char* copy = static_cast<char*>(std::malloc(generated.text.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, generated.text.data(), generated.text.size());
    copy[generated.text.size()] = '\0';
    result->finish_reason = FinishOf(generated.finish_reason);
    result->text = copy;
    result->text_len = generated.text.size();
    result->prompt_tokens = generated.stats.prompt_tokens;
    result->generated_tokens = generated.stats.generated_tokens;
    result->time_to_first_token_ms = generated.stats.time_to_first_token_ms;
    result->prefill_ms = generated.stats.prefill_ms;
    result->decode_tokens_per_second = generated.stats.decode_tokens_per_second;
    result->drafted_tokens = generated.stats.drafted_tokens;
    result->accepted_tokens = generated.stats.accepted_tokens;
    device_error = std::string(generated.error.message());
    return absl::OkStatus();
  });
  // The reply is returned; the error that ended it (a device error, or a
  // logit_bias that left no token) becomes this thread's last error.
  if (status == NPU_LLM_OK && result->finish_reason == NPU_LLM_FINISH_ERROR) {
    last_error = device_error;
  }
  return status;
}

npu_llm_status npu_llm_session_append(npu_llm_session* session, const char* text) {
  if (session == nullptr) return NullArgument("session");
  if (text == nullptr) return NullArgument("text");
  return Guarded([&] { return session->session->Append(text); });
}

void npu_llm_session_reset(npu_llm_session* session) {
  if (session != nullptr) session->session->Reset();
}

npu_llm_status npu_llm_session_set_context_policy(npu_llm_session* session, int ring,
                                                  uint32_t sink_tokens) {
  if (session == nullptr) return NullArgument("session");
  return Guarded([&] {
    lnpu::runtime::CacheFullPolicy policy;
    policy.on_full = ring != 0 ? lnpu::runtime::CacheFullPolicy::OnFull::kRing
                               : lnpu::runtime::CacheFullPolicy::OnFull::kFinish;
    policy.sink_tokens = sink_tokens;
    return session->session->SetCacheFullPolicy(policy);
  });
}

uint64_t npu_llm_session_token_count(const npu_llm_session* session) {
  return session == nullptr ? 0 : session->session->Tokens().size();
}

uint64_t npu_llm_session_memory_bytes(const npu_llm_session* session) {
  return session == nullptr ? 0 : session->session->device_memory_bytes();
}

npu_llm_status npu_llm_session_save(const npu_llm_session* session, const char* path) {
  if (session == nullptr) return NullArgument("session");
  if (path == nullptr) return NullArgument("path");
  return Guarded([&] { return session->session->SaveToFile(path); });
}

npu_llm_status npu_llm_session_load(npu_llm_session* session, const char* path) {
  if (session == nullptr) return NullArgument("session");
  if (path == nullptr) return NullArgument("path");
  return Guarded([&] { return session->session->LoadFromFile(path); });
}

npu_llm_status npu_llm_session_copy_prefix(npu_llm_session* session,
                                           const npu_llm_session* source, uint32_t tokens) {
  if (session == nullptr) return NullArgument("session");
  if (source == nullptr) return NullArgument("source");
  return Guarded([&] { return session->session->CopyPrefixFrom(*source->session, tokens); });
}

}  // extern "C"
