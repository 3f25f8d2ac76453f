#include "framework/stop_strings.h"

#include <algorithm>
#include <utility>

#include "framework/tokenizer/utf8.h"

namespace lnpu::framework {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops)
    : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()),
               stops_.end());
}

std::string StopStringMatcher::Push(std::string_view piece) {
  if (stopped_) return {};
  pending_.append(piece);
  size_t stop_at = std::string::npos;
  for (const std::string& stop : stops_) {
    stop_at = std::min(stop_at, pending_.find(stop));
  }
  if (stop_at != std::string::npos) {
    stopped_ = true;
    std::string emitted = pending_.substr(0, stop_at);
    pending_.clear();
    return emitted;
  }
  const size_t emit = pending_.size() - HeldBackLength();
  std::string emitted = pending_.substr(0, emit);
  pending_.erase(0, emit);
  return emitted;
}

std::string StopStringMatcher::Flush() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

size_t StopStringMatcher::HeldBackLength() const {
  const std::string_view text = pending_;
  size_t held = 0;
  for (const std::string& stop : stops_) {
    // Longest first; only lengths that would hold back more are worth it.
    for (size_t k = std::min(stop.size() - 1, text.size()); k > held; --k) {
      if (text.substr(text.size() - k) == std::string_view(stop).substr(0, k)) {
        held = k;
        break;
      }
    }
  }
  // A trailing incomplete character (at most 3 bytes of a 4-byte one).
  for (size_t k = std::min<size_t>(3, text.size()); k > held; --k) {
    const std::string_view tail = text.substr(text.size() - k);
    if (utf8::CharLength(tail[0]) > k &&
        utf8::DecodeChar(tail).kind == utf8::DecodedChar::Kind::kIncomplete) {
      held = k;
      break;
    }
  }
  return held;
}

}  // namespace lnpu::framework
