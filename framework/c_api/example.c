/* npu-llm-c-example: a two-turn conversation through the C API.
 *
 * usage: npu-llm-c-example MODEL.lnpu [PROMPT]
 *
 * Streams the reply to the prompt, then a second turn that continues the
 * same session (only the new turn's tokens are prefilled), and prints each
 * turn's statistics to stderr. Exits 0 on success, 1 on an error. */
#include <stdio.h>
#include <string.h>

#include "framework/c_api/npu_llm.h"

static int print_piece(void* user_data, int32_t token, const char* text, size_t text_len) {
  (void)token;
  fwrite(text, 1, text_len, (FILE*)user_data);
  fflush((FILE*)user_data);
  return 1; /* continue */
}

static int turn(npu_llm_session* session, const char* text, const npu_llm_config* config) {
  npu_llm_result result;
  fputs(text, stdout);
  if (npu_llm_session_generate(session, text, config, print_piece, stdout, &result) !=
      NPU_LLM_OK) {
    fprintf(stderr, "\nnpu-llm-c-example: %s\n", npu_llm_last_error());
    return 1;
  }
  fprintf(stderr,
          "\n[prompt %d tokens (prefill %.2f ms), generated %d, finish %d, "
          "%.1f tokens/s]\n",
          result.prompt_tokens, result.prefill_ms, result.generated_tokens,
          (int)result.finish_reason, result.decode_tokens_per_second);
  npu_llm_result_clear(&result);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.lnpu [PROMPT]\n", argv[0]);
    return 1;
  }
  npu_llm* llm = NULL;
  if (npu_llm_open(argv[1], "auto", &llm) != NPU_LLM_OK) {
    fprintf(stderr, "npu-llm-c-example: %s\n", npu_llm_last_error());
    return 1;
  }
  npu_llm_session* session = NULL;
  if (npu_llm_session_create(llm, &session) != NPU_LLM_OK) {
    fprintf(stderr, "npu-llm-c-example: %s\n", npu_llm_last_error());
    npu_llm_close(llm);
    return 1;
  }
  fprintf(stderr, "[session device memory: %llu bytes]\n",
          (unsigned long long)npu_llm_session_memory_bytes(session));

  npu_llm_config config;
  npu_llm_config_init(&config);
  config.max_new_tokens = 24;
  const char* stops[] = {"\n"};
  config.stop_strings = stops;
  config.n_stop_strings = 1;

  int failed = turn(session, argc > 2 ? argv[2] : "Once upon a time", &config);
  if (!failed) failed = turn(session, " Then", &config);

  npu_llm_session_destroy(session);
  npu_llm_close(llm);
  return failed;
}
