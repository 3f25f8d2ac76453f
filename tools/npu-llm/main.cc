// npu-llm: generates text with a compiled model, streaming it to stdout,
// then prints per-request statistics and memory to stderr.
//
// One-shot (-p), or a chat (`npu-llm chat` or --chat) that reads one user
// turn per stdin line and continues the same session, so earlier turns are
// never prefilled again. Chat turns go through the model's chat template:
// its turn markers become control tokens, the user's text stays text. The
// conversation can start from and be saved to a session file.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file_io.h"
#include "base/interrupt.h"
#include "base/status_macros.h"
#include "framework/chat_template.h"
#include "framework/llm.h"
#include "framework/sampler.h"
#include "framework/session.h"
#include "tools/common/flag_command_line.h"
#include "tools/common/tool_main.h"
#include "tools/common/trace_writer.h"

ABSL_FLAG(std::string, m, "", "compiled model artifact (.lnpu), from npu-compile");
ABSL_FLAG(std::string, p, "", "prompt text (one-shot), or the first user turn with --chat");
ABSL_FLAG(bool, chat, false,
          "chat (as the `chat` subcommand): after the prompt, read one user turn per stdin "
          "line until EOF; the session keeps the history, so each turn prefills only its "
          "own tokens");
ABSL_FLAG(std::string, system, "",
          "system prompt, run first (through the model's chat template when it has one)");
ABSL_FLAG(std::string, chat_template, "",
          "chat template family to use instead of the model's: chatml, llama3, llama3.1, "
          "llama2, zephyr, phi3, phi4, gemma, qwen3, mistral-v3 or mistral-tekken");
ABSL_FLAG(bool, enable_thinking, true,
          "qwen3 template: let the model reason in a <think> block before it answers "
          "(--enable-thinking=false renders an empty one, so that it answers at once)");
ABSL_FLAG(bool, verbose_prompt, false,
          "print the token ids of each prompt sent to the model to stderr");
ABSL_FLAG(int, n, 128, "maximum number of tokens to generate per reply");
ABSL_FLAG(float, temp, 0.0f, "sampling temperature; 0 = greedy");
ABSL_FLAG(int, top_k, 0, "sample among the k most likely tokens; 0 = all");
ABSL_FLAG(float, top_p, 1.0f, "nucleus sampling mass in (0, 1]");
ABSL_FLAG(float, min_p, 0.0f, "drop tokens below min_p times the top probability; 0 = off");
ABSL_FLAG(float, repeat_penalty, 1.0f, "repetition penalty (> 0, 1 = off)");
ABSL_FLAG(float, presence_penalty, 0.0f, "presence penalty (0 = off)");
ABSL_FLAG(float, frequency_penalty, 0.0f, "frequency penalty (0 = off)");
ABSL_FLAG(int, repeat_last_n, 64, "tokens of history the penalties look at");
ABSL_FLAG(std::vector<std::string>, logit_bias, {},
          "comma-separated TOKEN:BIAS pairs, e.g. 13:-2.5,2:-inf");
ABSL_FLAG(uint64_t, seed, 0, "random seed for sampling");
ABSL_FLAG(std::vector<std::string>, stop, {},
          "comma-separated stop strings; generation ends before them");
ABSL_FLAG(std::vector<std::string>, stop_token, {}, "comma-separated extra stop token ids");
ABSL_FLAG(bool, ignore_eos, false, "keep generating after end-of-generation tokens");
ABSL_FLAG(std::string, context, "finish",
          "when the KV cache is full: \"finish\" (finish reason length) or \"ring\" "
          "(keep --sink-tokens, overwrite the oldest others: endless generation)");
ABSL_FLAG(uint32_t, sink_tokens, 4, "tokens the ring context policy never evicts");
ABSL_FLAG(std::string, load_session, "", "continue the conversation saved in this file");
ABSL_FLAG(std::string, save_session, "", "save the conversation to this file at the end");
ABSL_FLAG(bool, copy_weights, false,
          "copy the weights into device memory even when the device can map them from "
          "the model file");
ABSL_FLAG(std::string, speculative, "none",
          "speculative decoding: \"lookup\" proposes the continuation of an earlier "
          "occurrence of the text's last tokens (pays off when the reply repeats the prompt), "
          "\"draft\" what --draft-model picks; the model needs a verify graph (npu-compile "
          "--verify-rows); greedy output is unchanged");
ABSL_FLAG(std::string, draft_model, "",
          "--speculative draft: a small artifact of the same vocabulary (e.g. npu-compile "
          "--keep-layers N of the same model)");
ABSL_FLAG(int, draft_tokens, lnpu::framework::SpeculativeConfig{}.max_draft_tokens,
          "--speculative: tokens proposed per step (>= 1)");
ABSL_FLAG(float, draft_min_p, lnpu::framework::SpeculativeConfig{}.min_draft_probability,
          "--speculative draft: the draft model stops proposing at a token whose most likely "
          "candidate it gives less than this probability (0..1; 0 = always propose "
          "--draft-tokens)");
ABSL_FLAG(std::string, trace, "",
          "write a Chrome/Perfetto trace (JSON, for ui.perfetto.dev) of the run to this file: "
          "jobs and commands on the NPU's engines, submits, waits, tokenizer and sampling on "
          "the host");
ABSL_FLAG(std::string, device, "auto",
          "\"auto\" (lnpu /dev/accel node, else the software NPU), \"soft\", "
          "or a device node path");

namespace {

constexpr char kSynopsis[] =
    R"(usage: npu-llm -m MODEL.lnpu -p PROMPT [options]
       npu-llm chat -m MODEL.lnpu [-p FIRST_TURN] [options]

Generates text with a compiled model on the NPU, streaming it to stdout, then
prints the request's statistics and peak memory to stderr. `npu-llm chat`
(or --chat) reads one user turn per stdin line until EOF and continues the
same session, so earlier turns are never prefilled again.
)";

using lnpu::framework::ChatMessage;
using lnpu::framework::GenerationConfig;
using lnpu::framework::GenerationResult;
using lnpu::framework::TextSegment;

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

int Fail(const std::string& message) {
  std::cerr << "npu-llm: " << message << "\n";
  return 1;
}

std::optional<GenerationConfig> ConfigFromFlags(std::string* error) {
  GenerationConfig config;
  config.max_new_tokens = absl::GetFlag(FLAGS_n);
  config.temperature = absl::GetFlag(FLAGS_temp);
  config.top_k = absl::GetFlag(FLAGS_top_k);
  config.top_p = absl::GetFlag(FLAGS_top_p);
  config.min_p = absl::GetFlag(FLAGS_min_p);
  config.repetition_penalty = absl::GetFlag(FLAGS_repeat_penalty);
  config.presence_penalty = absl::GetFlag(FLAGS_presence_penalty);
  config.frequency_penalty = absl::GetFlag(FLAGS_frequency_penalty);
  config.repeat_last_n = absl::GetFlag(FLAGS_repeat_last_n);
  config.seed = absl::GetFlag(FLAGS_seed);
  config.stop_at_eos = !absl::GetFlag(FLAGS_ignore_eos);
  config.stop_strings = absl::GetFlag(FLAGS_stop);
  for (const std::string& id : absl::GetFlag(FLAGS_stop_token)) {
    int32_t token = 0;
    if (!absl::SimpleAtoi(id, &token)) {
      *error = absl::StrFormat("--stop-token expects token ids, got '%s'", id);
      return std::nullopt;
    }
    config.stop_token_ids.push_back(token);
  }
  for (const std::string& pair : absl::GetFlag(FLAGS_logit_bias)) {
    const std::vector<std::string> parts = absl::StrSplit(pair, ':');
    int32_t token = 0;
    float bias = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &token) ||
        !absl::SimpleAtof(parts[1], &bias)) {
      *error = absl::StrFormat("--logit-bias expects TOKEN:BIAS pairs, got '%s'", pair);
      return std::nullopt;
    }
    config.logit_bias[token] = bias;
  }
  return config;
}

// What the session holds for token `id` as text of a rendered
// conversation: a control token's spelling (e.g. "<|im_end|>"), else its
// bytes.
std::string HeldText(const lnpu::framework::Tokenizer& tokenizer, int32_t id) {
  const lnpu::Vocabulary& vocabulary = tokenizer.vocabulary();
  if (id >= 0 && id < tokenizer.vocab_size() &&
      vocabulary.token_types[id] ==
          static_cast<int32_t>(lnpu::TokenType::kControl)) {
    return vocabulary.tokens[id];
  }
  return tokenizer.TokenBytes(id);
}

// `segments` from byte `offset` of their joined text on.
std::vector<TextSegment> SegmentsFrom(const std::vector<TextSegment>& segments, size_t offset) {
  std::vector<TextSegment> out;
  for (const TextSegment& segment : segments) {
    if (offset >= segment.text.size()) {
      offset -= segment.text.size();
      continue;
    }
    out.push_back({segment.text.substr(offset), segment.parse_special});
    offset = 0;
  }
  return out;
}

// Feeds a chat conversation into a session turn by turn. With a chat
// template, each turn sends the part of the rendered conversation the
// session does not hold yet, in segments (the template's special tokens
// parsed, message content plain text); when the rendering of the history
// differs from what the session holds (a template that re-renders earlier
// turns), the whole conversation after a reset. Without one, the raw text.
class Conversation {
 public:
  Conversation(lnpu::framework::Session& session, const lnpu::framework::Tokenizer& tokenizer,
               std::optional<lnpu::framework::ChatTemplate> chat_template)
      : session_(session), tokenizer_(tokenizer), template_(std::move(chat_template)) {}

  // The prompt to send for a new message (`generate`: an assistant reply
  // follows).
  absl::StatusOr<std::vector<TextSegment>> Add(const std::string& role,
                                               const std::string& content, bool generate) {
    if (!template_) return std::vector<TextSegment>{{content, /*parse_special=*/false}};
    messages_.push_back({role, content});
    LNPU_ASSIGN_OR_RETURN(std::vector<TextSegment> rendered,
                          template_->RenderSegments(messages_, generate));
    std::string text;
    for (const TextSegment& segment : rendered) text += segment.text;
    std::vector<TextSegment> delta;
    if (text.compare(0, held_.size(), held_) == 0) {
      delta = SegmentsFrom(rendered, held_.size());
    } else {
      session_.Reset();
      delta = std::move(rendered);
    }
    held_ = std::move(text);
    return delta;
  }

  // Records the reply the session generated after the last Add(): its
  // text and, when a stop token ended it (e.g. <|im_end|>, which the
  // session holds), that token.
  void Reply(const GenerationResult& result) {
    if (!template_) return;
    messages_.push_back({"assistant", result.text});
    held_ += result.text;
    const std::vector<int32_t> tokens = session_.Tokens();
    const bool stop_token = result.finish_reason == lnpu::framework::FinishReason::kStop &&
                            !tokens.empty() &&
                            (result.tokens.empty() || tokens.back() != result.tokens.back());
    if (stop_token) held_ += HeldText(tokenizer_, tokens.back());
  }

 private:
  lnpu::framework::Session& session_;
  const lnpu::framework::Tokenizer& tokenizer_;
  std::optional<lnpu::framework::ChatTemplate> template_;
  std::vector<ChatMessage> messages_;
  std::string held_;  // rendered text the session holds
};

// The --trace of the run: the writer (null without --trace) and where the
// host's work on the next token starts: after the last graph run and the
// trace's own recording of it, or after the previous token of the same run
// (a speculative step emits several).
struct Trace {
  std::unique_ptr<lnpu::tools::TraceWriter> writer;
  int64_t token_work_start_ns = 0;
};

// How the weights were placed, for the summary line: " (imported file
// mapping, not copied)" or " (copied from the model file, ...)".
std::string WeightsLabel(const lnpu::framework::Llm& llm) {
  if (llm.weights_imported()) return " (imported file mapping, not copied)";
  std::string label = " (copied from the model file";
  if (llm.weight_q6_k_conversions() != 0) {
    absl::StrAppendFormat(&label, ", %d Q6_K matrices converted to Q8_0",
                          llm.weight_q6_k_conversions());
  }
  if (llm.weight_panel_matrices() != 0) {
    absl::StrAppendFormat(&label, ", %d matrices as panels of the device's preferred layout",
                          llm.weight_panel_matrices());
  }
  return label + ")";
}

// Tokenizes `prompt` for the session (printing the ids with
// --verbose-prompt).
absl::StatusOr<std::vector<int32_t>> PromptTokens(lnpu::framework::Session& session,
                                                  const std::vector<TextSegment>& prompt,
                                                  bool add_bos, Trace& trace) {
  const int64_t start_ns = trace.writer ? lnpu::runtime::MonotonicNanos() : 0;
  absl::StatusOr<std::vector<int32_t>> tokens = session.TokenizeSegments(prompt, add_bos);
  if (trace.writer) {
    trace.writer->AddHostSpan("tokenize", "tokenizer", "main",
                              {start_ns, lnpu::runtime::MonotonicNanos()});
  }
  if (tokens.ok() && absl::GetFlag(FLAGS_verbose_prompt)) {
    std::cerr << "[prompt tokens: " << absl::StrJoin(*tokens, " ") << "]\n";
  }
  return tokens;
}

// Generates a reply to `prompt`, streaming it after `echo` (printed with
// the first generated piece, so that nothing is printed for a prompt the
// session refuses); prints its statistics. SIGINT / SIGTERM (inside the
// caller's InterruptScope) stop it at a token boundary: FinishReason
// kCancelled.
absl::StatusOr<GenerationResult> Reply(lnpu::framework::Session& session,
                                       const std::vector<TextSegment>& prompt,
                                       const GenerationConfig& config, const std::string& echo,
                                       Trace& trace) {
  LNPU_ASSIGN_OR_RETURN(const std::vector<int32_t> tokens,
                        PromptTokens(session, prompt, config.add_bos, trace));
  bool echoed = false;
  absl::StatusOr<GenerationResult> result =
      session.GenerateFromTokens(tokens, config, [&](int32_t, std::string_view piece) {
        if (trace.writer) {
          const int64_t now = lnpu::runtime::MonotonicNanos();
          trace.writer->AddHostSpan("sample + detokenize", "sampling", "main",
                                    {trace.token_work_start_ns, now});
          trace.token_work_start_ns = now;
        }
        if (!echoed) std::cout << echo;
        echoed = true;
        std::cout << piece << std::flush;
        return !lnpu::InterruptRequested();
      });
  LNPU_RETURN_IF_ERROR(result.status());
  if (!echoed) std::cout << echo;
  std::cout << "\n" << std::flush;
  const auto& stats = result->stats;
  if (config.speculative.kind != lnpu::framework::SpeculativeConfig::Kind::kNone) {
    std::cerr << absl::StrFormat(
        "[speculative %s: %d of %d proposed tokens accepted (%.1f%%)]\n",
        lnpu::framework::SpeculativeKindName(config.speculative.kind), stats.accepted_tokens,
        stats.drafted_tokens,
        stats.drafted_tokens > 0 ? 100.0 * stats.accepted_tokens / stats.drafted_tokens : 0.0);
  }
  std::cerr << absl::StrFormat(
      "[prompt %d tokens (prefill %.2f ms), generated %d tokens, finish: %s%s; time to first "
      "token %.2f ms; decode %.1f tokens/s; conversation %d tokens]\n",
      stats.prompt_tokens, stats.prefill_ms, stats.generated_tokens,
      lnpu::framework::FinishReasonName(result->finish_reason),
      result->error.ok() ? "" : absl::StrCat(" (", result->error.message(), ")"), stats.time_to_first_token_ms,
      stats.decode_tokens_per_second, static_cast<int>(session.Tokens().size()));
  return result;
}

int Main(int argc, char** argv) {
  // The `chat` subcommand is --chat.
  bool chat_subcommand = false;
  if (argc > 1 && std::strcmp(argv[1], "chat") == 0) {
    chat_subcommand = true;
    std::copy(argv + 2, argv + argc + 1, argv + 1);  // argv[argc] is nullptr
    --argc;
  }
  const std::vector<char*> positional =
      lnpu::tools::ParseFlagCommandLine(argc, argv, kSynopsis, __FILE__);
  if (positional.size() > 1) {
    return Fail(absl::StrFormat("unexpected argument '%s': the only subcommand is chat, and "
                                "the prompt goes in -p",
                                positional[1]));
  }
  const std::string model_path = absl::GetFlag(FLAGS_m);
  if (model_path.empty()) {
    return Fail("no model given: pass -m MODEL.lnpu (make one with npu-compile MODEL.gguf -o "
                "MODEL.lnpu)");
  }
  std::string error;
  std::optional<GenerationConfig> config = ConfigFromFlags(&error);
  if (!config) return Fail(error);
  using SpeculativeKind = lnpu::framework::SpeculativeConfig::Kind;
  const std::string speculative = absl::GetFlag(FLAGS_speculative);
  const std::string draft_model = absl::GetFlag(FLAGS_draft_model);
  config->speculative.max_draft_tokens = absl::GetFlag(FLAGS_draft_tokens);
  config->speculative.min_draft_probability = absl::GetFlag(FLAGS_draft_min_p);
  if (speculative == "lookup") {
    config->speculative.kind = SpeculativeKind::kPromptLookup;
  } else if (speculative == "draft") {
    config->speculative.kind = SpeculativeKind::kDraftModel;
    if (draft_model.empty()) {
      return Fail(
          "--speculative draft needs --draft-model DRAFT.lnpu (e.g. npu-compile "
          "--keep-layers N of the same model)");
    }
  } else if (speculative != "none") {
    return Fail("--speculative must be \"none\", \"lookup\" or \"draft\", got '" + speculative +
                "'");
  }
  if (!draft_model.empty() && config->speculative.kind != SpeculativeKind::kDraftModel) {
    return Fail("--draft-model is used only with --speculative draft");
  }
  const std::string save = absl::GetFlag(FLAGS_save_session);
  if (!save.empty()) {
    // Before anything runs: a session file must never replace the model
    // or a non-regular file, and an unwritable path must not cost a whole
    // generation.
    if (absl::Status writable = lnpu::CheckOutputPath(save, {model_path}, "session file");
        !writable.ok()) {
      return Fail(std::string(writable.message()));
    }
  }
  lnpu::runtime::CacheFullPolicy policy;
  if (absl::GetFlag(FLAGS_context) == "ring") {
    policy.on_full = lnpu::runtime::CacheFullPolicy::OnFull::kRing;
    policy.sink_tokens = absl::GetFlag(FLAGS_sink_tokens);
  } else if (absl::GetFlag(FLAGS_context) != "finish") {
    return Fail("--context must be \"finish\" or \"ring\", got '" +
                absl::GetFlag(FLAGS_context) + "'");
  }

  lnpu::framework::LlmOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  if (absl::GetFlag(FLAGS_copy_weights)) options.weights = lnpu::runtime::WeightPlacement::kCopy;
  absl::StatusOr<std::unique_ptr<lnpu::framework::Llm>> llm =
      lnpu::framework::Llm::Load(model_path, options);
  if (!llm.ok()) return Fail(std::string(llm.status().message()));
  absl::StatusOr<std::unique_ptr<lnpu::framework::Session>> session = (*llm)->CreateSession();
  if (!session.ok()) return Fail(std::string(session.status().message()));
  if (absl::Status set = (*session)->SetCacheFullPolicy(policy); !set.ok()) {
    return Fail(std::string(set.message()));
  }
  // The draft model runs on the same device as the model.
  std::unique_ptr<lnpu::framework::Llm> draft_llm;
  std::unique_ptr<lnpu::framework::Session> draft_session;
  if (!draft_model.empty()) {
    absl::StatusOr<std::unique_ptr<lnpu::framework::Llm>> loaded =
        lnpu::framework::Llm::Load(draft_model, options);
    if (!loaded.ok()) return Fail("draft model: " + std::string(loaded.status().message()));
    draft_llm = *std::move(loaded);
    absl::StatusOr<std::unique_ptr<lnpu::framework::Session>> created = draft_llm->CreateSession();
    if (!created.ok()) return Fail("draft model: " + std::string(created.status().message()));
    draft_session = *std::move(created);
    config->speculative.draft = draft_session.get();
  }
  Trace trace;
  if (const std::string trace_path = absl::GetFlag(FLAGS_trace); !trace_path.empty()) {
    absl::StatusOr<std::unique_ptr<lnpu::tools::TraceWriter>> opened =
        lnpu::tools::TraceWriter::Open(trace_path, {model_path});
    if (!opened.ok()) return Fail(std::string(opened.status().message()));
    trace.writer = *std::move(opened);
    absl::Status observed =
        (*session)->SetStepObserver([&trace](const lnpu::runtime::StepTimeline& step) {
          trace.writer->AddStep(step, "main");
          // Recording a step's hundreds of command events takes as long as
          // a small model's step: shown as such, not as sampling.
          const int64_t recorded = lnpu::runtime::MonotonicNanos();
          trace.writer->AddHostSpan("trace recording", "trace", "main",
                                    {step.step.end_ns, recorded});
          trace.token_work_start_ns = recorded;
        });
    if (!observed.ok()) return Fail(std::string(observed.message()));
  }
  const std::string load = absl::GetFlag(FLAGS_load_session);
  if (!load.empty()) {
    if (absl::Status loaded = (*session)->LoadFromFile(load); !loaded.ok()) {
      return Fail(std::string(loaded.message()));
    }
    std::cerr << absl::StrFormat("[loaded %d tokens from %s]\n",
                                 static_cast<int>((*session)->Tokens().size()), load);
  }

  const bool chat = chat_subcommand || absl::GetFlag(FLAGS_chat);
  std::optional<lnpu::framework::ChatTemplate> chat_template;
  const std::string family_name = absl::GetFlag(FLAGS_chat_template);
  if (chat || !family_name.empty()) {
    std::optional<lnpu::framework::ChatFamily> family;
    if (!family_name.empty()) {
      absl::StatusOr<lnpu::framework::ChatFamily> parsed =
          lnpu::framework::ParseChatFamily(family_name);
      if (!parsed.ok()) return Fail(std::string(parsed.status().message()));
      family = *parsed;
    }
    absl::StatusOr<lnpu::framework::ChatTemplate> found = (*llm)->GetChatTemplate(family);
    if (found.ok()) {
      chat_template = found->WithThinking(absl::GetFlag(FLAGS_enable_thinking));
    } else if (!absl::IsNotFound(found.status())) {
      return Fail(std::string(found.status().message()));
    } else {
      std::cerr << "[the model has no chat template: turns are sent as plain text; pass "
                   "--chat-template FAMILY to use one]\n";
    }
  }
  Conversation conversation(**session, (*llm)->tokenizer(), std::move(chat_template));
  // Every setting is checked before the first prompt is echoed.
  if (absl::Status valid = lnpu::framework::Sampler::Validate(
          *config, static_cast<int32_t>((*llm)->info().vocab_size));
      !valid.ok()) {
    return Fail(std::string(valid.message()));
  }

  const std::string system = absl::GetFlag(FLAGS_system);
  if (!system.empty()) {
    absl::StatusOr<std::vector<TextSegment>> prompt = conversation.Add("system", system, false);
    if (!prompt.ok()) return Fail(std::string(prompt.status().message()));
    // A templated system turn is usually a prefix of every later
    // rendering; when it is not, Conversation::Add starts over.
    absl::StatusOr<std::vector<int32_t>> tokens =
        PromptTokens(**session, *prompt, config->add_bos, trace);
    if (!tokens.ok()) return Fail(std::string(tokens.status().message()));
    if (absl::Status appended = (*session)->AppendTokens(*tokens); !appended.ok()) {
      return Fail(std::string(appended.message()));
    }
  }

  // Generation stops cleanly at a token boundary on SIGINT / SIGTERM: the
  // summary is printed and the session saved, then the exit status is
  // 128 + the signal. A second signal ends the program at once.
  lnpu::InterruptScope interrupt_scope;
  auto turn = [&](const std::string& user) -> bool {
    absl::StatusOr<std::vector<TextSegment>> prompt = conversation.Add("user", user, true);
    if (!prompt.ok()) {
      std::cerr << "npu-llm: " << prompt.status().message() << "\n";
      return false;
    }
    absl::StatusOr<GenerationResult> result =
        Reply(**session, *prompt, *config, chat ? std::string() : user, trace);
    if (!result.ok()) {
      std::cerr << "npu-llm: " << result.status().message() << "\n";
      return false;
    }
    conversation.Reply(*result);
    return true;
  };

  bool ok = true;
  const std::string prompt = absl::GetFlag(FLAGS_p);
  if (!chat || !prompt.empty()) {
    // One-shot with an empty prompt generates from BOS alone (as
    // llama.cpp does); a vocabulary without BOS needs a prompt.
    const lnpu::Vocabulary& vocabulary = (*llm)->tokenizer().vocabulary();
    if (prompt.empty() && (!config->add_bos || !vocabulary.add_bos || vocabulary.bos_id < 0)) {
      return Fail("the prompt is empty and this model's vocabulary adds no BOS token to start "
                  "from: give a prompt with -p TEXT");
    }
    ok = turn(prompt);
  }
  if (chat) {
    // A REPL on a terminal: a prompt before each turn. A line the session
    // cannot take (invalid UTF-8, more than the cache holds) is reported
    // and the next line is read; the exit status says that one failed.
    const bool interactive = isatty(STDIN_FILENO) != 0;
    std::string line;
    while (!lnpu::InterruptRequested()) {
      if (interactive) std::cout << "> " << std::flush;
      if (!std::getline(std::cin, line)) break;
      if (!line.empty() && !turn(line)) ok = false;
    }
  }

  if (!save.empty()) {
    if (absl::Status saved = (*session)->SaveToFile(save); !saved.ok()) {
      return Fail(std::string(saved.message()));
    }
    std::cerr << absl::StrFormat("[saved %d tokens to %s]\n",
                                 static_cast<int>((*session)->Tokens().size()), save);
  }
  if (trace.writer) {
    if (absl::Status written = trace.writer->Write(); !written.ok()) {
      return Fail(std::string(written.message()));
    }
    std::cerr << absl::StrFormat("[trace written to %s]\n", trace.writer->path());
  }
  std::cerr << absl::StrFormat(
      "[device: %s; weights %.1f MiB in device memory%s; session %.1f MiB]\n"
      "peak RSS: %.1f MiB\n",
      (*llm)->device().Describe(), (*llm)->weights_device_memory_bytes() / 1048576.0,
      WeightsLabel(**llm),
      (*session)->device_memory_bytes() / 1048576.0, PeakRssMiB());
  if (lnpu::InterruptRequested()) return lnpu::InterruptExitCode();
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return lnpu::tools::RunToolMain("npu-llm", [&] { return Main(argc, argv); });
}
