// npu-llm-session-bench: prints what sessions save and what the ring
// context policy costs in quality:
//   1. second-turn prefill time with KV reuse (multi-turn session) and
//      without (one prefill of the whole conversation);
//   2. time to restore a saved prefix (file, and copy between sessions)
//      against recomputing it;
//   3. perplexity of a long continuation under the ring policy (with and
//      without sinks) against truncation (reset and re-prefill the latest
//      half of the cache) and, with --full, a cache that holds everything.
// Figures are medians over --repeats runs on the chosen device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "framework/llm.h"
#include "framework/sampler.h"
#include "framework/session.h"
#include "kernel_iface/driver/device.h"
#include "runtime/model.h"
#include "runtime/sequence.h"
#include "tools/common/flag_command_line.h"

ABSL_FLAG(std::string, m, "", "compiled model artifact (.lnpu)");
ABSL_FLAG(std::string, full, "",
          "optional: the same model compiled with a cache that holds the whole perplexity "
          "text (the no-eviction baseline)");
ABSL_FLAG(int, history, 200, "tokens of conversation before the second turn");
ABSL_FLAG(int, turn, 16, "tokens of the second turn");
ABSL_FLAG(int, prefix, 200, "tokens of the saved prefix");
ABSL_FLAG(int, ppl_factor, 4, "perplexity text length in multiples of the cache capacity");
ABSL_FLAG(int, repeats, 5, "runs per timing (median reported)");
ABSL_FLAG(std::string, device, "auto", "\"auto\", \"soft\" or a device node path");
ABSL_FLAG(std::string, scratch, "/tmp", "directory for the saved-prefix file");

namespace {

using lnpu::framework::GenerationConfig;
using lnpu::framework::Llm;
using lnpu::framework::Session;

template <typename T>
T Check(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) {
    std::cerr << "npu-llm-session-bench: " << what << ": " << value.status().message() << "\n";
    std::exit(1);
  }
  return *std::move(value);
}

void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::cerr << "npu-llm-session-bench: " << what << ": " << status.message() << "\n";
    std::exit(1);
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double MedianMs(int repeats, F&& body) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const absl::Time start = absl::Now();
    body();
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }
  return Median(ms);
}

// `n` tokens sampled from the model at temperature 1 after BOS (seeded):
// text of the model's own distribution, without end-of-text tokens.
std::vector<int32_t> SampleText(lnpu::runtime::Sequence& session, int n, int32_t bos,
                                int32_t eos) {
  GenerationConfig config;
  config.temperature = 1.0f;
  config.seed = 7;
  if (eos >= 0) config.logit_bias[eos] = -INFINITY;
  lnpu::framework::Sampler sampler(config);
  session.Reset();
  std::vector<int32_t> tokens = {bos};
  absl::Span<const float> logits = Check(session.Forward(tokens), "sampling text");
  while (static_cast<int>(tokens.size()) < n) {
    tokens.push_back(sampler.Sample(logits));
    logits = Check(session.Forward(absl::MakeConstSpan(&tokens.back(), 1)), "sampling text");
  }
  return tokens;
}

double NegLogProb(absl::Span<const float> logits, int32_t token) {
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(double{l} - top);
  return -(double{logits[token]} - top - std::log(sum));
}

enum class Overflow { kRing, kTruncate, kNone };

// Perplexity of text[1:] fed token by token (teacher forcing). kRing uses
// the session's policy; kTruncate resets a full cache and re-prefills the
// latest capacity / 2 tokens; kNone needs a cache that holds the text.
double Perplexity(lnpu::runtime::Sequence& session, const std::vector<int32_t>& text,
                  Overflow overflow) {
  session.Reset();
  double nll = 0;
  absl::Span<const float> logits = Check(session.Forward({text[0]}), "perplexity");
  const uint32_t capacity = session.cache().capacity();
  for (size_t i = 1; i < text.size(); ++i) {
    nll += NegLogProb(logits, text[i]);
    if (overflow == Overflow::kTruncate && session.cache().free_slots() == 0) {
      session.Reset();
      const size_t keep = capacity / 2;
      logits = Check(session.Forward(absl::MakeConstSpan(text).subspan(i + 1 - keep, keep)),
                     "truncation re-prefill");
    } else {
      logits = Check(session.Forward(absl::MakeConstSpan(&text[i], 1)), "perplexity");
    }
  }
  return std::exp(nll / static_cast<double>(text.size() - 1));
}

}  // namespace

int main(int argc, char** argv) {
  lnpu::tools::ParseFlagCommandLine(
      argc, argv,
      "usage: npu-llm-session-bench -m MODEL.lnpu [--full BIG_CACHE_MODEL.lnpu] [options]\n\n"
      "Prints session reuse and ring-policy figures.\n",
      __FILE__);
  const std::string path = absl::GetFlag(FLAGS_m);
  if (path.empty()) {
    std::cerr << "npu-llm-session-bench: pass -m MODEL.lnpu\n";
    return 2;
  }
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  std::unique_ptr<Llm> llm = Check(Llm::Load(path, {.device = absl::GetFlag(FLAGS_device)}),
                                   "loading the model");
  const lnpu::runtime::ModelInfo& info = llm->info();
  std::printf("model %s: capacity %u slots, prefill chunks", path.c_str(), info.kv_capacity);
  for (uint32_t c : info.prefill_chunks) std::printf(" %u", c);
  std::printf("; device %s\n\n", llm->device().Describe().c_str());

  // Conversation tokens: the model's own greedy story.
  GenerationConfig greedy;
  greedy.stop_at_eos = false;
  const int history = absl::GetFlag(FLAGS_history), turn = absl::GetFlag(FLAGS_turn);
  std::unique_ptr<Session> scratch = Check(llm->CreateSession(), "session");
  greedy.max_new_tokens = history + turn;
  const std::vector<int32_t> story = [&] {
    std::vector<int32_t> t = {info.vocabulary.bos_id};
    auto r = Check(scratch->GenerateFromTokens(t, greedy), "story");
    t.insert(t.end(), r.tokens.begin(), r.tokens.end());
    return t;
  }();
  const std::vector<int32_t> first(story.begin(), story.begin() + history);
  const std::vector<int32_t> second(story.begin() + history, story.begin() + history + turn);
  greedy.max_new_tokens = 1;

  // 1. Second turn with and without KV reuse.
  std::vector<double> reuse, no_reuse;
  for (int i = 0; i < repeats; ++i) {
    std::unique_ptr<Session> chat = Check(llm->CreateSession(), "session");
    Check(chat->AppendTokens(first), "first turn");
    reuse.push_back(Check(chat->GenerateFromTokens(second, greedy), "second turn").stats.prefill_ms);
    std::vector<int32_t> whole = first;
    whole.insert(whole.end(), second.begin(), second.end());
    std::unique_ptr<Session> fresh = Check(llm->CreateSession(), "session");
    no_reuse.push_back(
        Check(fresh->GenerateFromTokens(whole, greedy), "whole conversation").stats.prefill_ms);
  }
  std::printf("second-turn prefill (%d history + %d new tokens):\n", history, turn);
  std::printf("  with KV reuse    %8.2f ms  (%d tokens prefilled)\n", Median(reuse), turn);
  std::printf("  without (re-prefill) %4.2f ms  (%d tokens prefilled)\n\n", Median(no_reuse),
              history + turn);

  // 2. A saved prefix: restore vs recompute.
  const int prefix = std::min<int>(absl::GetFlag(FLAGS_prefix), static_cast<int>(story.size()));
  const std::vector<int32_t> prefix_tokens(story.begin(), story.begin() + prefix);
  std::unique_ptr<Session> source = Check(llm->CreateSession(), "session");
  Check(source->AppendTokens(prefix_tokens), "prefix");
  const std::string file = absl::GetFlag(FLAGS_scratch) + "/npu-llm-session-bench.session";
  Check(source->SaveToFile(file), "saving the prefix");
  std::unique_ptr<Session> target = Check(llm->CreateSession(), "session");
  const double recompute = MedianMs(repeats, [&] {
    target->Reset();
    Check(target->AppendTokens(prefix_tokens), "recompute");
  });
  const double from_file =
      MedianMs(repeats, [&] { Check(target->LoadFromFile(file), "restore from file"); });
  const double copied =
      MedianMs(repeats, [&] { Check(target->CopyPrefixFrom(*source, prefix), "copy prefix"); });
  std::remove(file.c_str());
  std::printf("saved prefix of %d tokens:\n", prefix);
  std::printf("  recompute (prefill)        %8.3f ms\n", recompute);
  std::printf("  restore from file          %8.3f ms\n", from_file);
  std::printf("  copy from a live session   %8.3f ms\n\n", copied);

  // 3. Ring vs truncation perplexity, on the runtime directly (logits of
  // every token).
  std::shared_ptr<lnpu::Device> device =
      Check(lnpu::Device::Open(absl::GetFlag(FLAGS_device)), "device");
  std::unique_ptr<lnpu::runtime::Model> model =
      Check(lnpu::runtime::Model::Load(device, path), "model");
  std::unique_ptr<lnpu::runtime::Sequence> session = Check(model->CreateSequence(), "session");
  const int length = absl::GetFlag(FLAGS_ppl_factor) * static_cast<int>(info.kv_capacity);
  std::unique_ptr<lnpu::runtime::Model> full_model;
  std::unique_ptr<lnpu::runtime::Sequence> full_session;
  if (!absl::GetFlag(FLAGS_full).empty()) {
    full_model = Check(lnpu::runtime::Model::Load(device, absl::GetFlag(FLAGS_full)), "--full");
    full_session = Check(full_model->CreateSequence(), "session");
    if (full_model->info().kv_capacity < static_cast<uint32_t>(length)) {
      std::cerr << "npu-llm-session-bench: --full needs a capacity of at least " << length
                << "\n";
      return 1;
    }
  }
  // The text comes from the big-cache model when given (no eviction while
  // sampling), else from the ring.
  Check(session->SetCacheFullPolicy(lnpu::runtime::CacheFullPolicy::Ring(4)), "ring policy");
  const std::vector<int32_t> text =
      SampleText(full_session ? *full_session : *session, length, info.vocabulary.bos_id, info.vocabulary.eos_id);
  std::printf("perplexity of %d sampled tokens (%dx the %u-slot cache):\n", length,
              absl::GetFlag(FLAGS_ppl_factor), info.kv_capacity);
  if (full_session) {
    std::printf("  whole context (no eviction)   %7.3f\n",
                Perplexity(*full_session, text, Overflow::kNone));
  }
  for (uint32_t sinks : {4u, 1u, 0u}) {
    session->Reset();
    Check(session->SetCacheFullPolicy(lnpu::runtime::CacheFullPolicy::Ring(sinks)), "ring policy");
    std::printf("  ring, %u sink tokens           %7.3f\n", sinks,
                Perplexity(*session, text, Overflow::kRing));
  }
  session->Reset();
  Check(session->SetCacheFullPolicy({}), "policy");
  std::printf("  truncation (keep latest half) %7.3f\n",
              Perplexity(*session, text, Overflow::kTruncate));
  return 0;
}
