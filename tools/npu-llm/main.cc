// npu-llm: generates text with a compiled model, streaming it to stdout,
// then prints per-request statistics and memory to stderr.
//
// One-shot (-p), or a chat (--chat) that reads one user turn per stdin line
// and continues the same session, so earlier turns are never prefilled
// again. The conversation can start from and be saved to a session file.
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "framework/chat_template.h"
#include "framework/llm.h"
#include "framework/session.h"

ABSL_FLAG(std::string, m, "", "compiled model artifact (.lnpu), from npu-compile");
ABSL_FLAG(std::string, p, "", "prompt text (one-shot), or the first user turn with --chat");
ABSL_FLAG(bool, chat, false,
          "chat: after the prompt, read one user turn per stdin line until EOF; the "
          "session keeps the history, so each turn prefills only its own tokens");
ABSL_FLAG(std::string, system, "",
          "system prompt, run first (through the model's chat template when it has one)");
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
ABSL_FLAG(std::string, device, "auto",
          "\"auto\" (lnpu /dev/accel node, else the software NPU), \"soft\", "
          "or a device node path");

namespace {

using lnpu::framework::ChatMessage;
using lnpu::framework::GenerationConfig;
using lnpu::framework::GenerationResult;

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

// Feeds a chat conversation into a session turn by turn. With the model's
// chat template, each turn sends the part of the rendered conversation the
// session has not seen yet (or, for a template whose rendering of the
// history changes, the whole conversation after a reset); without one,
// the raw text.
class Conversation {
 public:
  Conversation(lnpu::framework::Session& session,
               std::optional<lnpu::framework::ChatTemplate> chat_template)
      : session_(session), template_(std::move(chat_template)) {}

  bool templated() const { return template_.has_value(); }

  // The text to send for a new message (`generate`: an assistant reply
  // follows).
  absl::StatusOr<std::string> Add(const std::string& role, const std::string& content,
                                  bool generate) {
    if (!template_) return content;
    messages_.push_back({role, content});
    absl::StatusOr<std::string> rendered = template_->Render(messages_, generate);
    if (!rendered.ok()) return rendered.status();
    std::string delta;
    if (rendered->compare(0, seen_.size(), seen_) == 0) {
      delta = rendered->substr(seen_.size());
    } else {
      session_.Reset();
      delta = *rendered;
    }
    seen_ = *rendered;
    return delta;
  }

  // Records the reply the session generated after the last Add().
  void Reply(const GenerationResult& result) {
    if (!template_) return;
    messages_.push_back({"assistant", result.text});
    seen_ += result.text;
  }

 private:
  lnpu::framework::Session& session_;
  std::optional<lnpu::framework::ChatTemplate> template_;
  std::vector<ChatMessage> messages_;
  std::string seen_;  // rendered text the session holds
};

// Generates a reply to `text`, streaming it; prints its statistics.
absl::StatusOr<GenerationResult> Reply(lnpu::framework::Session& session,
                                       const std::string& text, const GenerationConfig& config) {
  absl::StatusOr<GenerationResult> result =
      session.Generate(text, config, [](int32_t, std::string_view piece) {
        std::cout << piece << std::flush;
        return true;
      });
  std::cout << "\n" << std::flush;
  if (!result.ok()) return result.status();
  const auto& stats = result->stats;
  std::cerr << absl::StrFormat(
      "[prompt %d tokens (prefill %.2f ms), generated %d tokens, finish: %s%s; time to first "
      "token %.2f ms; decode %.1f tokens/s; conversation %d tokens]\n",
      stats.prompt_tokens, stats.prefill_ms, stats.generated_tokens,
      lnpu::framework::FinishReasonName(result->finish_reason),
      result->error.empty() ? "" : " (" + result->error + ")", stats.time_to_first_token_ms,
      stats.decode_tokens_per_second, static_cast<int>(session.Tokens().size()));
  return result;
}

// absl flags are spelled with underscores; accept --save-session as well
// as --save_session by rewriting the name part of each "--flag[=value]".
void AcceptDashedFlagNames(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* arg = argv[i];
    if (std::strncmp(arg, "--", 2) != 0) continue;
    if (arg[2] == '\0') break;  // "--": the rest are not flags
    for (char* c = arg + 2; *c != '\0' && *c != '='; ++c) {
      if (*c == '-') *c = '_';
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "generates text on the NPU.\n"
      "usage: npu-llm -m MODEL.lnpu -p PROMPT [-n N] [--temp T] [--seed S] [--stop S]\n"
      "       npu-llm -m MODEL.lnpu --chat [--system TEXT] [--save-session F] "
      "[--load-session F] [--context ring]");
  AcceptDashedFlagNames(argc, argv);
  absl::ParseCommandLine(argc, argv);
  const std::string model_path = absl::GetFlag(FLAGS_m);
  if (model_path.empty()) {
    return Fail("no model given: pass -m MODEL.lnpu (make one with npu-compile MODEL.gguf -o "
                "MODEL.lnpu)");
  }
  std::string error;
  const std::optional<GenerationConfig> config = ConfigFromFlags(&error);
  if (!config) return Fail(error);
  lnpu::framework::ContextPolicy policy;
  if (absl::GetFlag(FLAGS_context) == "ring") {
    policy.on_full = lnpu::framework::ContextPolicy::OnFull::kRing;
    policy.sink_tokens = absl::GetFlag(FLAGS_sink_tokens);
  } else if (absl::GetFlag(FLAGS_context) != "finish") {
    return Fail("--context must be \"finish\" or \"ring\", got '" +
                absl::GetFlag(FLAGS_context) + "'");
  }

  lnpu::framework::LlmOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  options.import_weights = !absl::GetFlag(FLAGS_copy_weights);
  absl::StatusOr<std::unique_ptr<lnpu::framework::Llm>> llm =
      lnpu::framework::Llm::Load(model_path, options);
  if (!llm.ok()) return Fail(std::string(llm.status().message()));
  absl::StatusOr<std::unique_ptr<lnpu::framework::Session>> session = (*llm)->CreateSession();
  if (!session.ok()) return Fail(std::string(session.status().message()));
  if (absl::Status set = (*session)->SetContextPolicy(policy); !set.ok()) {
    return Fail(std::string(set.message()));
  }
  const std::string load = absl::GetFlag(FLAGS_load_session);
  if (!load.empty()) {
    if (absl::Status loaded = (*session)->LoadFromFile(load); !loaded.ok()) {
      return Fail(std::string(loaded.message()));
    }
    std::cerr << absl::StrFormat("[loaded %d tokens from %s]\n",
                                 static_cast<int>((*session)->Tokens().size()), load);
  }

  const bool chat = absl::GetFlag(FLAGS_chat);
  std::optional<lnpu::framework::ChatTemplate> chat_template;
  if (chat && !(*llm)->info().chat_template.empty()) {
    const lnpu::framework::Tokenizer& tokenizer = (*llm)->tokenizer();
    lnpu::framework::ChatSpecialTokens specials;
    if (tokenizer.bos_id() >= 0) specials.bos = tokenizer.TokenBytes(tokenizer.bos_id());
    if (tokenizer.eos_id() >= 0) specials.eos = tokenizer.TokenBytes(tokenizer.eos_id());
    specials.add_bos = tokenizer.vocabulary().add_bos;
    absl::StatusOr<lnpu::framework::ChatTemplate> detected =
        lnpu::framework::ChatTemplate::Detect((*llm)->info().chat_template, specials);
    if (!detected.ok()) return Fail(std::string(detected.status().message()));
    chat_template = *std::move(detected);
  }
  Conversation conversation(**session, std::move(chat_template));

  const std::string system = absl::GetFlag(FLAGS_system);
  if (!system.empty()) {
    absl::StatusOr<std::string> text = conversation.Add("system", system, false);
    if (!text.ok()) return Fail(std::string(text.status().message()));
    // A templated system turn is usually a prefix of every later
    // rendering; when it is not, Conversation::Add starts over.
    if (absl::Status appended = (*session)->Append(*text); !appended.ok()) {
      return Fail(std::string(appended.message()));
    }
  }

  int turns = 0;
  auto turn = [&](const std::string& user) -> bool {
    absl::StatusOr<std::string> text = conversation.Add("user", user, true);
    if (!text.ok()) {
      std::cerr << "npu-llm: " << text.status().message() << "\n";
      return false;
    }
    if (!chat || turns == 0) std::cout << user << std::flush;
    absl::StatusOr<GenerationResult> result = Reply(**session, *text, *config);
    if (!result.ok()) {
      std::cerr << "npu-llm: " << result.status().message() << "\n";
      return false;
    }
    conversation.Reply(*result);
    ++turns;
    return true;
  };

  bool ok = true;
  const std::string prompt = absl::GetFlag(FLAGS_p);
  if (!prompt.empty()) ok = turn(prompt);
  if (ok && chat) {
    std::string line;
    while (ok && std::getline(std::cin, line)) {
      if (!line.empty()) ok = turn(line);
    }
  }

  const std::string save = absl::GetFlag(FLAGS_save_session);
  if (!save.empty()) {
    if (absl::Status saved = (*session)->SaveToFile(save); !saved.ok()) {
      return Fail(std::string(saved.message()));
    }
    std::cerr << absl::StrFormat("[saved %d tokens to %s]\n",
                                 static_cast<int>((*session)->Tokens().size()), save);
  }
  std::cerr << absl::StrFormat(
      "[device: %s; weights %.1f MiB in device memory%s; session %.1f MiB]\n"
      "peak RSS: %.1f MiB\n",
      (*llm)->device().Describe(), (*llm)->weights_device_memory_bytes() / 1048576.0,
      (*llm)->weights_imported() ? " (imported file mapping, not copied)" : "",
      (*session)->device_memory_bytes() / 1048576.0, PeakRssMiB());
  return ok ? 0 : 1;
}
