/* The C API from C11, built with AddressSanitizer: every entry point, its
 * error codes and messages, ownership (results, handles), streaming with a
 * user pointer, cancellation, stop strings, multi-turn, save/load and
 * copy-prefix, context policy. Prints TAP; argv[1] is a stories260K
 * artifact compiled for 48 + 16 slots, argv[2] one for another capacity,
 * argv[3] a scratch directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/c_api/npu_llm.h"

static int test_number = 0;
static int failures = 0;

static void check(int ok, const char* what) {
  ++test_number;
  printf("%s %d - %s\n", ok ? "ok" : "not ok", test_number, what);
  if (!ok) {
    ++failures;
    printf("# last error: %s\n", npu_llm_last_error());
  }
}

typedef struct stream_state {
  char text[4096];
  size_t len;
  int calls;
  int cancel_after; /* 0 = never */
} stream_state;

static int collect(void* user_data, int32_t token, const char* text, size_t text_len) {
  stream_state* state = (stream_state*)user_data;
  (void)token;
  if (state->len + text_len < sizeof(state->text)) {
    memcpy(state->text + state->len, text, text_len);
    state->len += text_len;
    state->text[state->len] = '\0';
  }
  ++state->calls;
  return state->cancel_after == 0 || state->calls < state->cancel_after;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s STORIES.lnpu OTHER_CAPACITY.lnpu SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  npu_llm* llm = NULL;
  npu_llm_status status = npu_llm_open("/does/not/exist.lnpu", "soft", &llm);
  check(status == NPU_LLM_NOT_FOUND && llm == NULL, "open of a missing file is NOT_FOUND");
  check(strstr(npu_llm_last_error(), "/does/not/exist.lnpu") != NULL,
        "its message names the path");
  check(npu_llm_open(NULL, NULL, &llm) == NPU_LLM_INVALID_ARGUMENT, "NULL path is refused");

  check(npu_llm_open(argv[1], "soft", &llm) == NPU_LLM_OK && llm != NULL, "open");
  if (llm == NULL) return 1;
  npu_llm_model_info info;
  npu_llm_model_info_get(llm, &info);
  check(info.vocab_size == 512 && info.kv_capacity == 64 && info.max_prompt_len == 48 &&
            info.bos_id == 1 && info.weights_bytes > 0,
        "model info");

  npu_llm_session* session = NULL;
  check(npu_llm_session_create(llm, &session) == NPU_LLM_OK, "session create");
  check(npu_llm_session_memory_bytes(session) > 0, "session memory is reported");

  npu_llm_config config;
  npu_llm_config_init(&config);
  config.max_new_tokens = 12;
  config.stop_at_eos = 0;
  stream_state stream = {{0}, 0, 0, 0};
  npu_llm_result result;
  check(npu_llm_session_generate(session, "Once upon a time", &config, collect, &stream,
                                 &result) == NPU_LLM_OK,
        "generate");
  check(result.finish_reason == NPU_LLM_FINISH_LENGTH && result.generated_tokens == 12,
        "12 tokens, finish length");
  check(result.text != NULL && strncmp(result.text, ", there was a little girl", 25) == 0,
        "the greedy story");
  check(strcmp(stream.text, result.text) == 0 && result.text_len == strlen(result.text),
        "streamed text equals the result text");
  check(result.prompt_tokens == 5 && result.time_to_first_token_ms > 0, "statistics");
  char first_reply[512];
  snprintf(first_reply, sizeof first_reply, "%s", result.text != NULL ? result.text : "");
  npu_llm_result_clear(&result);
  check(result.text == NULL, "result_clear frees and zeroes");
  npu_llm_result_clear(&result); /* twice is fine */

  /* Speculative decoding gives the same greedy reply: with prompt lookup,
   * and with a draft session of the same model, whose proposals are all
   * accepted. */
  npu_llm_session* fresh = NULL;
  npu_llm_session* draft = NULL;
  check(npu_llm_session_create(llm, &fresh) == NPU_LLM_OK &&
            npu_llm_session_create(llm, &draft) == NPU_LLM_OK,
        "sessions for speculation");
  npu_llm_config speculative = config;
  speculative.speculative = NPU_LLM_SPECULATIVE_DRAFT;
  speculative.draft_session = draft;
  npu_llm_result drafted;
  check(npu_llm_session_generate(fresh, "Once upon a time", &speculative, NULL, NULL,
                                 &drafted) == NPU_LLM_OK &&
            strcmp(drafted.text, first_reply) == 0 && drafted.drafted_tokens > 0 &&
            drafted.accepted_tokens == drafted.drafted_tokens,
        "draft-model speculation: the same reply, every proposal accepted");
  npu_llm_result_clear(&drafted);
  check(config.draft_min_probability == 0.75f, "the draft's probability threshold defaults to 0.75");
  speculative.draft_min_probability = 1.5f;
  check(npu_llm_session_generate(fresh, "x", &speculative, NULL, NULL, &drafted) ==
                NPU_LLM_INVALID_ARGUMENT &&
            strstr(npu_llm_last_error(), "min_draft_probability is 1.5") != NULL &&
            drafted.text == NULL,
        "a draft probability threshold outside [0, 1] is refused");
  npu_llm_result_clear(&drafted);
  speculative.draft_min_probability = 0.0f;
  npu_llm_session_reset(fresh);
  check(npu_llm_session_generate(fresh, "Once upon a time", &speculative, NULL, NULL,
                                 &drafted) == NPU_LLM_OK &&
            strcmp(drafted.text, first_reply) == 0 && drafted.drafted_tokens > 0,
        "draft-model speculation without a threshold: the same reply");
  npu_llm_result_clear(&drafted);
  npu_llm_session_reset(fresh);
  speculative.speculative = NPU_LLM_SPECULATIVE_LOOKUP;
  speculative.draft_session = NULL;
  check(npu_llm_session_generate(fresh, "Once upon a time", &speculative, NULL, NULL,
                                 &drafted) == NPU_LLM_OK &&
            strcmp(drafted.text, first_reply) == 0 &&
            drafted.accepted_tokens <= drafted.drafted_tokens,
        "prompt-lookup speculation: the same reply");
  npu_llm_result_clear(&drafted);
  speculative.speculative = (npu_llm_speculative)7;
  check(npu_llm_session_generate(fresh, "x", &speculative, NULL, NULL, &drafted) ==
            NPU_LLM_INVALID_ARGUMENT,
        "an unknown speculative kind is refused");
  npu_llm_session_destroy(fresh);
  npu_llm_session_destroy(draft);

  /* Second turn: only the new text (and the pending last token) runs. */
  const uint64_t tokens_before = npu_llm_session_token_count(session);
  check(npu_llm_session_generate(session, " One day", &config, NULL, NULL, &result) ==
            NPU_LLM_OK,
        "second turn");
  check(result.prompt_tokens < 5 && npu_llm_session_token_count(session) ==
                                         tokens_before + (uint64_t)result.prompt_tokens - 1 +
                                             (uint64_t)result.generated_tokens,
        "second turn prefills only its own tokens");
  char* second_turn = result.text;
  result.text = NULL;
  npu_llm_result_clear(&result);

  /* Save, load into another session, continue both identically. */
  char path[1024];
  snprintf(path, sizeof path, "%s/c_api_test.session", argv[3]);
  npu_llm_session* restored = NULL;
  check(npu_llm_session_create(llm, &restored) == NPU_LLM_OK, "second session");
  check(npu_llm_session_save(session, path) == NPU_LLM_OK, "save");
  check(npu_llm_session_load(restored, path) == NPU_LLM_OK, "load");
  npu_llm_result a, b;
  check(npu_llm_session_generate(session, " Then", &config, NULL, NULL, &a) == NPU_LLM_OK &&
            npu_llm_session_generate(restored, " Then", &config, NULL, NULL, &b) ==
                NPU_LLM_OK &&
            strcmp(a.text, b.text) == 0,
        "a loaded session continues identically");
  npu_llm_result_clear(&a);
  npu_llm_result_clear(&b);

  /* Another capacity refuses the file with a message. */
  npu_llm* other = NULL;
  npu_llm_session* other_session = NULL;
  check(npu_llm_open(argv[2], "soft", &other) == NPU_LLM_OK &&
            npu_llm_session_create(other, &other_session) == NPU_LLM_OK,
        "open the other-capacity model");
  check(npu_llm_session_load(other_session, path) == NPU_LLM_FAILED_PRECONDITION &&
            strstr(npu_llm_last_error(), "slots") != NULL,
        "a file of another capacity is FAILED_PRECONDITION");
  npu_llm_session_destroy(other_session);
  npu_llm_close(other);
  remove(path);
  check(npu_llm_session_load(restored, path) == NPU_LLM_NOT_FOUND, "missing file");

  /* Stop strings, cancellation. */
  const char* stops[] = {"girl na"};
  config.stop_strings = stops;
  config.n_stop_strings = 1;
  config.max_new_tokens = 30;
  npu_llm_session_reset(session);
  check(npu_llm_session_generate(session, "Once upon a time", &config, NULL, NULL, &result) ==
                NPU_LLM_OK &&
            result.finish_reason == NPU_LLM_FINISH_STOP &&
            strcmp(result.text, ", there was a little ") == 0,
        "a stop string split across tokens stops and is not returned");
  npu_llm_result_clear(&result);
  config.n_stop_strings = 0;
  config.stop_strings = NULL;
  npu_llm_session_reset(session);
  stream_state cancel = {{0}, 0, 0, 3};
  check(npu_llm_session_generate(session, "Once upon a time", &config, collect, &cancel,
                                 &result) == NPU_LLM_OK &&
            result.finish_reason == NPU_LLM_FINISH_CANCELLED && result.generated_tokens == 3,
        "the callback cancels");
  npu_llm_result_clear(&result);

  /* Copy a prefix. */
  npu_llm_session_reset(restored);
  check(npu_llm_session_append(restored, "Once upon a time") == NPU_LLM_OK, "append");
  check(npu_llm_session_copy_prefix(session, restored, 5) == NPU_LLM_OK &&
            npu_llm_session_token_count(session) == 5,
        "copy prefix");
  check(npu_llm_session_copy_prefix(session, restored, 99) == NPU_LLM_INVALID_ARGUMENT,
        "copying more tokens than the source holds is refused");

  /* Context policy: endless generation with a ring. */
  config.max_new_tokens = 200;
  npu_llm_session_reset(session);
  check(npu_llm_session_set_context_policy(session, 1, 60) == NPU_LLM_INVALID_ARGUMENT,
        "a ring smaller than a prefill chunk is refused");
  check(npu_llm_session_set_context_policy(session, 1, 4) == NPU_LLM_OK, "ring policy");
  check(npu_llm_session_generate(session, "Once upon a time", &config, NULL, NULL, &result) ==
                NPU_LLM_OK &&
            result.generated_tokens == 200 && result.finish_reason == NPU_LLM_FINISH_LENGTH,
        "the ring generates past the capacity");
  npu_llm_result_clear(&result);

  /* A logit bias that bans every token ends the reply with an error naming it. */
  npu_llm_logit_bias ban_all[512];
  for (int32_t i = 0; i < 512; ++i) ban_all[i] = (npu_llm_logit_bias){.token = i, .bias = -INFINITY};
  config.logit_bias = ban_all;
  config.n_logit_bias = 512;
  check(npu_llm_session_generate(session, "x", &config, NULL, NULL, &result) == NPU_LLM_OK &&
            result.finish_reason == NPU_LLM_FINISH_ERROR && result.generated_tokens == 0 &&
            strstr(npu_llm_last_error(), "logit_bias bans every token of the vocabulary") != NULL,
        "a logit_bias banning every token finishes with an error naming logit_bias");
  npu_llm_result_clear(&result);
  config.logit_bias = NULL;
  config.n_logit_bias = 0;

  /* Bad arguments. */
  config.top_p = 3.0f;
  check(npu_llm_session_generate(session, "x", &config, NULL, NULL, &result) ==
                NPU_LLM_INVALID_ARGUMENT &&
            strstr(npu_llm_last_error(), "top_p") != NULL && result.text == NULL,
        "a bad config is INVALID_ARGUMENT naming the field");
  config.top_p = 1.0f;
  config.n_stop_strings = 2;
  check(npu_llm_session_generate(session, "x", &config, NULL, NULL, &result) ==
            NPU_LLM_INVALID_ARGUMENT,
        "a NULL array with a count is refused");
  check(npu_llm_session_generate(NULL, "x", NULL, NULL, NULL, &result) ==
            NPU_LLM_INVALID_ARGUMENT,
        "NULL session is refused");

  free(second_turn);
  npu_llm_session_destroy(restored);
  npu_llm_session_destroy(session);
  npu_llm_session_destroy(NULL);
  npu_llm_close(llm);
  npu_llm_close(NULL);

  /* Closing the model before its session: the session keeps working and
   * frees the model's memory with itself (ASan checks both). */
  {
    npu_llm* early = NULL;
    npu_llm_session* orphan = NULL;
    check(npu_llm_open(argv[1], "soft", &early) == NPU_LLM_OK &&
              npu_llm_session_create(early, &orphan) == NPU_LLM_OK,
          "open a model and a session");
    npu_llm_close(early);
    npu_llm_config_init(&config);
    config.max_new_tokens = 4;
    check(npu_llm_session_generate(orphan, "Once upon a time", &config, NULL, NULL, &result) ==
                  NPU_LLM_OK &&
              result.generated_tokens == 4,
          "a session generates after its model was closed");
    npu_llm_result_clear(&result);
    npu_llm_session_destroy(orphan);
  }
  printf("1..%d\n", test_number);
  return failures == 0 ? 0 : 1;
}
