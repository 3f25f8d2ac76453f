/* npu_llm.h: the C API of lnpu-llm (C99 and later, C++).
 *
 * Handles are opaque. Every function that can fail returns an
 * npu_llm_status; on failure npu_llm_last_error() gives a message that
 * names the problem and what to do. Strings are NUL-terminated UTF-8.
 * No C++ type crosses this interface.
 *
 * Ownership: a handle made by npu_llm_open / npu_llm_session_create is
 * owned by the caller and released with npu_llm_close /
 * npu_llm_session_destroy (both accept NULL). Handles may be released in
 * any order: a session keeps what it needs of its model (device, weights,
 * tokenizer), so the model's memory goes with the last of them. Strings
 * returned in
 * npu_llm_result::text are owned by the caller and released with
 * npu_llm_result_clear. Text passed to callbacks is valid during the call
 * only. Input pointers are only read during the call.
 *
 * Thread-safety: an npu_llm handle may be used from several threads at
 * once (npu_llm_session_create, npu_llm_model_info). A session is used by
 * one thread at a time; different sessions may generate on different
 * threads concurrently. npu_llm_last_error() is per thread.
 */
#ifndef NPU_LLM_H_
#define NPU_LLM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npu_llm npu_llm;                 /* a loaded model */
typedef struct npu_llm_session npu_llm_session; /* one conversation */

typedef enum npu_llm_status {
  NPU_LLM_OK = 0,
  NPU_LLM_INVALID_ARGUMENT = 1,    /* a bad argument, config or file */
  NPU_LLM_NOT_FOUND = 2,           /* a file does not exist */
  NPU_LLM_PERMISSION_DENIED = 3,   /* a file or device may not be opened */
  NPU_LLM_RESOURCE_EXHAUSTED = 4,  /* KV cache or device memory full */
  NPU_LLM_FAILED_PRECONDITION = 5, /* e.g. a session file of another model */
  NPU_LLM_DEVICE_ERROR = 6,        /* the device failed, timed out or is gone */
  NPU_LLM_UNIMPLEMENTED = 7,       /* not supported by this device or build */
  NPU_LLM_INTERNAL = 8             /* a bug: please report it */
} npu_llm_status;

/* The message of the last failed call on this thread ("" if none). Valid
 * until the next call of an npu_llm function on this thread. */
const char* npu_llm_last_error(void);

/* ---- models ---------------------------------------------------------- */

/* Loads the compiled model `artifact_path` (.lnpu, from npu-compile) on
 * `device`: "auto" (or NULL: an lnpu /dev/accel node, else the software
 * NPU), "soft", or a device node path. */
npu_llm_status npu_llm_open(const char* artifact_path, const char* device, npu_llm** out);
void npu_llm_close(npu_llm* llm);

typedef struct npu_llm_model_info {
  uint32_t vocab_size;
  uint32_t kv_capacity;      /* KV cache slots per session */
  uint32_t max_prompt_len;   /* longest first prompt */
  int32_t bos_id, eos_id;    /* -1 when the vocabulary has none */
  uint64_t weights_bytes;    /* device memory of the shared weights */
} npu_llm_model_info;
void npu_llm_model_info_get(const npu_llm* llm, npu_llm_model_info* info);

/* ---- generation ------------------------------------------------------ */

typedef struct npu_llm_logit_bias {
  int32_t token;
  float bias; /* finite, or -INFINITY to ban the token */
} npu_llm_logit_bias;

typedef enum npu_llm_speculative {
  NPU_LLM_SPECULATIVE_NONE = 0,
  NPU_LLM_SPECULATIVE_LOOKUP = 1, /* propose what followed an earlier occurrence of the
                                     text's last tokens (no second model) */
  NPU_LLM_SPECULATIVE_DRAFT = 2,  /* propose what a draft model picks */
  /* Not a kind: makes the enum's range every int32 value, so that the
     library can refuse an out-of-range value from C without undefined
     behaviour (the Vulkan MAX_ENUM convention). */
  NPU_LLM_SPECULATIVE_MAX_ENUM = 0x7FFFFFFF
} npu_llm_speculative;

/* Initialize with npu_llm_config_init, then change fields. */
typedef struct npu_llm_config {
  int32_t max_new_tokens;   /* >= 1; default 128 */
  float temperature;        /* 0 = greedy (default) */
  int32_t top_k;            /* 0 = off */
  float top_p;              /* (0, 1], 1 = off */
  float min_p;              /* [0, 1], 0 = off */
  float repetition_penalty; /* > 0, 1 = off */
  float presence_penalty;   /* 0 = off */
  float frequency_penalty;  /* 0 = off */
  int32_t repeat_last_n;    /* tokens the penalties look back; default 64 */
  uint64_t seed;
  int add_bos;              /* BOS before the first text of a session; default 1 */
  int stop_at_eos;          /* default 1 */
  const char* const* stop_strings; /* n_stop_strings texts; not emitted */
  size_t n_stop_strings;
  const int32_t* stop_tokens;      /* extra tokens that end generation */
  size_t n_stop_tokens;
  const npu_llm_logit_bias* logit_bias;
  size_t n_logit_bias;
  /* Speculative decoding (the model needs a verify graph: npu-compile
   * --verify-rows K); greedy replies are unchanged, sampled ones keep the
   * model's distribution. */
  npu_llm_speculative speculative; /* default NPU_LLM_SPECULATIVE_NONE */
  int32_t draft_tokens;            /* tokens proposed per step, >= 1; default 3 */
  npu_llm_session* draft_session;  /* NPU_LLM_SPECULATIVE_DRAFT: a session of a
                                      model of the same vocabulary, used only by
                                      this call (its conversation is replaced) */
  float draft_min_probability;     /* NPU_LLM_SPECULATIVE_DRAFT: stop proposing at a
                                      token the draft gives less than this, [0, 1];
                                      default 0.75, 0 = always draft_tokens */
} npu_llm_config;
void npu_llm_config_init(npu_llm_config* config);

typedef enum npu_llm_finish_reason {
  NPU_LLM_FINISH_STOP = 0,      /* end-of-generation token, stop token or stop string */
  NPU_LLM_FINISH_LENGTH = 1,    /* max_new_tokens, or the KV cache is full */
  NPU_LLM_FINISH_CANCELLED = 2, /* the callback returned 0 */
  NPU_LLM_FINISH_ERROR = 3      /* a device error; npu_llm_last_error() says which */
} npu_llm_finish_reason;

typedef struct npu_llm_result {
  npu_llm_finish_reason finish_reason;
  char* text;                 /* the reply's text; free with npu_llm_result_clear */
  size_t text_len;
  int32_t prompt_tokens;      /* tokens run before the reply */
  int32_t generated_tokens;
  double time_to_first_token_ms;
  double prefill_ms;
  double decode_tokens_per_second;
  int32_t drafted_tokens;  /* speculative decoding: tokens proposed, */
  int32_t accepted_tokens; /* and accepted by the model */
} npu_llm_result;
/* Frees result->text and zeroes the result; NULL and cleared results are fine. */
void npu_llm_result_clear(npu_llm_result* result);

/* Called with each piece of text as it becomes complete (`text_len` bytes,
 * possibly 0 while a character is incomplete; token -1 for a final flush).
 * Return nonzero to continue, 0 to cancel (NPU_LLM_FINISH_CANCELLED). */
typedef int (*npu_llm_token_callback)(void* user_data, int32_t token, const char* text,
                                      size_t text_len);

/* ---- sessions -------------------------------------------------------- */

npu_llm_status npu_llm_session_create(npu_llm* llm, npu_llm_session** out);
void npu_llm_session_destroy(npu_llm_session* session);

/* Continues the conversation with `text` and generates a reply (multi-turn:
 * earlier turns are not recomputed). `config` NULL = defaults; `callback`
 * may be NULL. On NPU_LLM_OK, `*result` holds the reply (also for
 * NPU_LLM_FINISH_ERROR). */
npu_llm_status npu_llm_session_generate(npu_llm_session* session, const char* text,
                                        const npu_llm_config* config,
                                        npu_llm_token_callback callback, void* user_data,
                                        npu_llm_result* result);
/* Runs `text` through the model without generating (e.g. a system prompt). */
npu_llm_status npu_llm_session_append(npu_llm_session* session, const char* text);
/* Forgets the conversation. */
void npu_llm_session_reset(npu_llm_session* session);

/* When the KV cache is full: ring = 0 ends generation with
 * NPU_LLM_FINISH_LENGTH (default); ring = 1 keeps the first `sink_tokens`
 * and overwrites the oldest others (endless generation). */
npu_llm_status npu_llm_session_set_context_policy(npu_llm_session* session, int ring,
                                                  uint32_t sink_tokens);

/* Tokens of the conversation (kept in the cache or pending). */
uint64_t npu_llm_session_token_count(const npu_llm_session* session);
/* Device memory of the session's own buffers (the weights are shared). */
uint64_t npu_llm_session_memory_bytes(const npu_llm_session* session);

/* Saves / restores the conversation (KV cache, tokens). Loading a file of
 * another model or cache capacity fails with NPU_LLM_FAILED_PRECONDITION;
 * a corrupt or truncated one with NPU_LLM_INVALID_ARGUMENT. */
npu_llm_status npu_llm_session_save(const npu_llm_session* session, const char* path);
npu_llm_status npu_llm_session_load(npu_llm_session* session, const char* path);
/* Makes `session` the first `tokens` tokens of `source` (e.g. a shared
 * system prompt) without recomputing them. */
npu_llm_status npu_llm_session_copy_prefix(npu_llm_session* session,
                                           const npu_llm_session* source, uint32_t tokens);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* NPU_LLM_H_ */
