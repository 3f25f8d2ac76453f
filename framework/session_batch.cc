#include "framework/session_batch.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lnpu::framework {

SessionBatch::SessionBatch(std::vector<std::unique_ptr<Session>> sessions,
                           std::unique_ptr<runtime::DecodeBatch> batch)
    : sessions_(std::move(sessions)),
      batch_(std::move(batch)),
      tokens_(sessions_.size(), runtime::DecodeBatch::kIdle),
      decoding_(sessions_.size(), nullptr) {}

SessionBatch::~SessionBatch() = default;

std::optional<size_t> SessionBatch::LaneOf(const Session& session) const {
  for (size_t i = 0; i < sessions_.size(); ++i) {
    if (sessions_[i].get() == &session) return i;
  }
  return std::nullopt;
}

uint64_t SessionBatch::device_memory_bytes() const {
  uint64_t total = batch_->device_memory_bytes();
  for (const auto& session : sessions_) total += session->device_memory_bytes();
  return total;
}

absl::Status SessionBatch::Step(absl::Span<Generator* const> generators) {
  std::vector<size_t> lanes;
  lanes.reserve(generators.size());
  for (size_t i = 0; i < generators.size(); ++i) {
    const Generator& generator = *generators[i];
    const std::optional<size_t> lane = LaneOf(*generator.session_);
    if (!lane) {
      return absl::FailedPreconditionError(
          absl::StrCat("generator ", i, " runs on a session of another batch"));
    }
    if (generator.done()) {
      return absl::FailedPreconditionError(absl::StrCat("generator ", i, " is done"));
    }
    if (std::find(lanes.begin(), lanes.end(), *lane) != lanes.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("generator ", i, " runs on the session of an earlier one"));
    }
    lanes.push_back(*lane);
  }
  absl::Status first_error;
  bool batched = false;
  for (size_t i = 0; i < generators.size(); ++i) {
    Generator& generator = *generators[i];
    if (generator.cancelled_ || generator.prefilling()) {
      if (absl::Status step = generator.Step(); !step.ok() && first_error.ok()) {
        first_error = std::move(step);
      }
      continue;
    }
    if (const std::optional<int32_t> token = generator.SampleNextToken()) {
      tokens_[lanes[i]] = *token;
      decoding_[lanes[i]] = &generator;
      batched = true;
    }
  }
  if (batched) {
    const absl::Status ran = batch_->Step(tokens_);
    for (size_t lane = 0; lane < sessions_.size(); ++lane) {
      if (decoding_[lane] == nullptr) continue;
      decoding_[lane]->RanNextToken(ran.ok() ? absl::StatusOr<absl::Span<const float>>(
                                                   batch_->logits(lane))
                                             : ran);
      decoding_[lane] = nullptr;
      tokens_[lane] = runtime::DecodeBatch::kIdle;
    }
  }
  return first_error;
}

}  // namespace lnpu::framework
