#include "tools/npu-serve/scheduler.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace lnpu::serve {

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const framework::Llm& llm,
                                                             const SchedulerOptions& options,
                                                             Metrics& metrics) {
  if (options.sessions == 0) {
    return absl::InvalidArgumentError("the scheduler needs at least 1 session");
  }
  SessionPool pool;
  std::vector<framework::Session*> created;
  // Groups of the largest compiled lane count that fits what is left.
  const std::vector<uint32_t>& lane_counts = llm.info().decode_batches;
  size_t left = options.sessions;
  while (options.batch_decode && left >= 2) {
    const auto fits = std::upper_bound(lane_counts.begin(), lane_counts.end(), left);
    if (fits == lane_counts.begin()) break;
    const size_t lanes = *std::prev(fits);
    absl::StatusOr<std::unique_ptr<framework::SessionBatch>> batch =
        llm.CreateSessionBatch(lanes);
    if (!batch.ok()) {
      return absl::Status(batch.status().code(),
                          absl::StrCat("creating a batch of ", lanes, " sessions: ",
                                       batch.status().message()));
    }
    for (size_t lane = 0; lane < lanes; ++lane) created.push_back(&(*batch)->session(lane));
    pool.batches.push_back(*std::move(batch));
    left -= lanes;
  }
  for (size_t i = created.size(); i < options.sessions; ++i) {
    absl::StatusOr<std::unique_ptr<framework::Session>> session = llm.CreateSession();
    if (!session.ok()) {
      return absl::Status(session.status().code(),
                          absl::StrCat("creating session ", i + 1, " of ", options.sessions,
                                       ": ", session.status().message()));
    }
    created.push_back(session->get());
    pool.plain.push_back(*std::move(session));
  }
  for (size_t i = 0; i < created.size(); ++i) {
    framework::Session* session = created[i];
    if (absl::Status set = session->SetCacheFullPolicy(options.context_policy); !set.ok()) {
      return set;
    }
    if (options.step_observer) {
      absl::Status observed = session->SetStepObserver(
          [observer = options.step_observer,
           who = absl::StrCat("session ", i + 1)](const runtime::StepTimeline& step) {
            observer(who, step);
          });
      if (!observed.ok()) return observed;
    }
  }
  // The batches' lanes are the first sessions, in order.
  size_t first_lane = 0;
  for (const auto& batch : pool.batches) {
    if (options.step_observer) {
      absl::Status observed = batch->SetStepObserver(
          [observer = options.step_observer,
           who = absl::StrCat("sessions ", first_lane + 1, "-", first_lane + batch->lanes())](
              const runtime::StepTimeline& step) { observer(who, step); });
      if (!observed.ok()) return observed;
    }
    first_lane += batch->lanes();
  }
  return std::unique_ptr<Scheduler>(new Scheduler(llm, options, metrics, std::move(pool)));
}

Scheduler::Scheduler(const framework::Llm& llm, const SchedulerOptions& options,
                     Metrics& metrics, SessionPool pool)
    : options_(options),
      prefill_chunk_(options.prefill_chunk != 0 ? options.prefill_chunk
                                                : llm.info().prefill_chunks.back()),
      metrics_(metrics),
      pool_(std::move(pool)),
      prefix_cache_(options.prefix_cache_entries, options.prefix_cache_bytes) {
  device_memory_bytes_ = llm.weights_device_memory_bytes();
  for (const auto& batch : pool_.batches) {
    device_memory_bytes_ += batch->device_memory_bytes();
    for (size_t lane = 0; lane < batch->lanes(); ++lane) sessions_.push_back(&batch->session(lane));
  }
  for (const auto& session : pool_.plain) {
    device_memory_bytes_ += session->device_memory_bytes();
    sessions_.push_back(session.get());
  }
  free_sessions_.assign(sessions_.rbegin(), sessions_.rend());
  batched_steps_.resize(pool_.batches.size());
  thread_ = std::thread([this] { Run(); });
}

Scheduler::~Scheduler() {
  {
    absl::MutexLock lock(&mu_);
    accepting_ = false;
    cancel_all_ = true;
    stop_ = true;
  }
  thread_.join();
}

absl::StatusOr<std::shared_ptr<RequestStream>> Scheduler::Submit(
    std::vector<int32_t> prompt, framework::GenerationConfig config, absl::Time arrival,
    std::unique_ptr<framework::TokenConstraint> constraint) {
  absl::MutexLock lock(&mu_);
  if (!accepting_) {
    return absl::UnavailableError("the server is shutting down: retry on another instance");
  }
  if (queue_.size() >= options_.max_queue + free_sessions_.size()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "all ", sessions_.size(), " sessions are busy and ", queue_.size(),
        " requests are waiting: retry later"));
  }
  auto stream = std::make_shared<RequestStream>();
  config.constraint = constraint.get();
  queue_.push_back(
      {.number = ++submitted_,
       .prompt = std::move(prompt),
       .config = std::move(config),
       .arrival = arrival,
       .arrival_ns = runtime::MonotonicNanos() - absl::ToInt64Nanoseconds(absl::Now() - arrival),
       .stream = stream,
       .constraint = std::move(constraint)});
  return stream;
}

void Scheduler::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

bool Scheduler::Idle() const { return queue_.empty() && active_count_ == 0; }

void Scheduler::Drain(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &Scheduler::Idle), timeout);
  cancel_all_ = true;
  mu_.Await(absl::Condition(this, &Scheduler::Idle));
}

MetricsGauges Scheduler::Gauges() const {
  absl::MutexLock lock(&mu_);
  return {.queue_depth = queue_.size(),
          .active_requests = active_count_,
          .sessions = sessions_.size(),
          .device_memory_bytes = device_memory_bytes_,
          .prefix_cache_entries = cache_entries_,
          .prefix_cache_bytes = cache_bytes_,
          .prefix_cache_hits = cache_hits_,
          .prefix_cache_misses = cache_misses_,
          .batched_decode_steps = batched_decode_steps_,
          .batched_decode_tokens = batched_decode_tokens_};
}

bool Scheduler::HasWork() const {
  return stop_ || active_count_ > 0 || (!queue_.empty() && !free_sessions_.empty());
}

void Scheduler::Run() {
  while (true) {
    bool cancel_all = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Scheduler::HasWork));
      if (stop_ && active_count_ == 0) {
        for (Job& job : queue_) {
          job.stream->Finish({.status = absl::UnavailableError("the server is shutting down")});
        }
        queue_.clear();
        return;
      }
      while (!queue_.empty() && !free_sessions_.empty()) {
        framework::Session* session = free_sessions_.back();
        framework::SessionBatch* batch = nullptr;
        for (const auto& b : pool_.batches) {
          if (b->LaneOf(*session)) batch = b.get();
        }
        active_.push_back(
            {.job = std::move(queue_.front()), .session = session, .batch = batch});
        queue_.pop_front();
        free_sessions_.pop_back();
        ++active_count_;
      }
      cancel_all = cancel_all_;
    }
    for (auto it = active_.begin(); it != active_.end();) {
      if (!it->generator && !Admit(*it)) {
        it = active_.erase(it);
      } else {
        if (cancel_all) it->generator->Cancel();
        ++it;
      }
    }
    RunRound();
  }
}

void Scheduler::ObserveSpan(absl::string_view name, int64_t start_ns, int64_t end_ns,
                            const Active* active) const {
  if (!options_.span_observer) return;
  const runtime::TimeSpan span{.start_ns = std::min(start_ns, end_ns), .end_ns = end_ns};
  if (active == nullptr) {
    options_.span_observer(name, "scheduler", span);
  } else {
    options_.span_observer(name, absl::StrCat("request ", active->job.number), span);
  }
}

bool Scheduler::Admit(Active& active) {
  active.admitted_ns = runtime::MonotonicNanos();
  ObserveSpan("queued", active.job.arrival_ns, active.admitted_ns, &active);
  const std::vector<int32_t>& prompt = active.job.prompt;
  framework::Session& session = *active.session;
  if (prompt.size() >= 2) {
    std::optional<runtime::CacheSnapshot> prefix =
        prefix_cache_.Lookup(prompt, static_cast<uint32_t>(prompt.size() - 1));
    if (prefix && session.RestoreState(*prefix).ok()) {
      active.cached_tokens = static_cast<int>(prefix->written_slots());
    }
  }
  absl::StatusOr<framework::Generator> generator = framework::Generator::Start(
      session, absl::MakeConstSpan(prompt).subspan(active.cached_tokens), active.job.config,
      {.max_prefill_tokens_per_step = prefill_chunk_,
       .on_token = [this, &active](int32_t, std::string_view text) {
         const absl::Time now = absl::Now();
         if (active.last_token == absl::Time()) {
           metrics_.ObserveTimeToFirstToken(absl::ToDoubleSeconds(now - active.job.arrival));
         } else {
           metrics_.ObserveDecodeStep(absl::ToDoubleSeconds(now - active.last_token));
         }
         active.last_token = now;
         active.job.stream->AppendText(text);
         return true;
       }});
  ObserveSpan("admit", active.admitted_ns);
  if (!generator.ok()) {
    Finish(active, generator.status());
    return false;
  }
  active.generator.emplace(*std::move(generator));
  return true;
}

void Scheduler::RunRound() {
  const int64_t start_ns = runtime::MonotonicNanos();
  bool prefilled = false;
  for (auto it = active_.begin(); it != active_.end();) {
    framework::Generator& generator = *it->generator;
    if (it->job.stream->cancelled()) generator.Cancel();
    // One prefill chunk per round; a cancelled request ends at its step.
    const bool prefill = generator.prefilling() && !it->job.stream->cancelled();
    if (prefill && prefilled) {
      ++it;
      continue;
    }
    prefilled |= prefill;
    if (!prefill && it->batch != nullptr) {
      // Runs below, with the other decode steps of its batch.
      const size_t b = std::find_if(pool_.batches.begin(), pool_.batches.end(),
                                    [&](const auto& p) { return p.get() == it->batch; }) -
                       pool_.batches.begin();
      batched_steps_[b].push_back(&generator);
      ++it;
      continue;
    }
    absl::Status step = generator.Step();
    if (!step.ok() || generator.done()) {
      Finish(*it, StepOutcome(std::move(step)));
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
  bool batched = false;
  for (size_t b = 0; b < pool_.batches.size(); ++b) {
    if (batched_steps_[b].empty()) continue;
    batched = true;
    // Decode steps only: their device errors end the replies, not the step.
    absl::Status step = pool_.batches[b]->Step(batched_steps_[b]);
    batched_steps_[b].clear();
    if (!step.ok()) {
      // A scheduler bug: end the batch's requests rather than loop on it.
      for (Active& active : active_) {
        if (active.batch == pool_.batches[b].get() && !active.generator->done()) {
          active.generator->Cancel();
        }
      }
    }
  }
  if (batched) {
    uint64_t steps = 0, tokens = 0;
    for (const auto& batch : pool_.batches) {
      steps += batch->stats().batched_steps;
      tokens += batch->stats().batched_tokens;
    }
    absl::MutexLock lock(&mu_);
    batched_decode_steps_ = steps;
    batched_decode_tokens_ = tokens;
  }
  ObserveSpan("round", start_ns);
  for (auto it = active_.begin(); it != active_.end();) {
    if (it->generator->done()) {
      Finish(*it, absl::OkStatus());
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::Status Scheduler::StepOutcome(absl::Status step) {
  if (step.ok()) return step;
  // Only the device fails a step: a server error whatever its code.
  return absl::InternalError(
      absl::StrCat("the device failed while running the prompt: ", step.message()));
}

void Scheduler::Finish(Active& active, absl::Status status) {
  const int64_t start_ns = runtime::MonotonicNanos();
  RequestOutcome outcome{.status = std::move(status), .cached_tokens = active.cached_tokens};
  framework::Session& session = *active.session;
  if (outcome.status.ok()) {
    outcome.result = active.generator->TakeResult();
    if (outcome.result.finish_reason != framework::FinishReason::kError) {
      absl::StatusOr<runtime::CacheSnapshot> state = session.SaveState();
      if (state.ok()) prefix_cache_.Insert(*std::move(state));
    }
    outcome.result.stats.prompt_tokens += active.cached_tokens;
    metrics_.CountGeneration(outcome.result.stats.prompt_tokens, active.cached_tokens,
                             outcome.result.stats.generated_tokens,
                             framework::FinishReasonName(outcome.result.finish_reason));
  }
  active.generator.reset();
  session.Reset();
  {
    absl::MutexLock lock(&mu_);
    // Given out lowest first: the session list's order, reversed.
    const auto rank = [this](framework::Session* s) {
      return std::find(sessions_.begin(), sessions_.end(), s) - sessions_.begin();
    };
    free_sessions_.insert(std::lower_bound(free_sessions_.begin(), free_sessions_.end(), &session,
                                           [&](framework::Session* a, framework::Session* b) {
                                             return rank(a) > rank(b);
                                           }),
                          &session);
    --active_count_;
    cache_entries_ = prefix_cache_.entries();
    cache_bytes_ = prefix_cache_.bytes();
    cache_hits_ = prefix_cache_.hits();
    cache_misses_ = prefix_cache_.misses();
  }
  ObserveSpan("finish", start_ns);
  ObserveSpan("generating", active.admitted_ns, runtime::MonotonicNanos(), &active);
  // Last, so that the client sees the session free once it sees the end.
  active.job.stream->Finish(std::move(outcome));
}

}  // namespace lnpu::serve
