#include "tools/npu-serve/request_stream.h"

#include <utility>

namespace lnpu::serve {

bool RequestStream::Wait(absl::Duration timeout, std::string& text) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &RequestStream::Ready), timeout);
  text = std::move(text_);
  text_.clear();
  return finished_;
}

bool RequestStream::Ready() const { return finished_ || !text_.empty(); }

void RequestStream::AppendText(std::string_view text) {
  if (text.empty()) return;
  absl::MutexLock lock(&mu_);
  text_ += text;
}

void RequestStream::Finish(RequestOutcome outcome) {
  outcome_ = std::move(outcome);
  absl::MutexLock lock(&mu_);
  finished_ = true;
}

}  // namespace lnpu::serve
