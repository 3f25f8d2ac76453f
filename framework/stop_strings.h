// Finds stop strings in streamed text. Generated text arrives one decoded
// token piece at a time, and a stop string may span several pieces, so
// text that could still be the start of a stop string is held back until
// the following pieces decide it.
//
// Not thread-safe; one per generation.
#ifndef FRAMEWORK_STOP_STRINGS_H_
#define FRAMEWORK_STOP_STRINGS_H_

#include <string>
#include <string_view>
#include <vector>

namespace lnpu::framework {

class StopStringMatcher {
 public:
  // `stops` should be non-empty, well-formed UTF-8 strings
  // (Sampler::Validate checks GenerationConfig::stop_strings); empty ones
  // are ignored. With no stops, Push returns its input (less a trailing
  // incomplete UTF-8 character, held until completed).
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Feeds the next decoded text piece and returns the text that can be
  // emitted now: everything not held back because it could be the start
  // of a stop string or is an incomplete UTF-8 character. When a stop
  // string completes, the text before it is returned, stopped() becomes
  // true, and the stop string and everything after it (in this and later
  // pieces) is dropped. The earliest-starting stop string wins.
  std::string Push(std::string_view piece);

  // Ends the text: returns what is still held back (a near-miss of a stop
  // string, or an incomplete character as is); empty once stopped().
  std::string Flush();

  bool stopped() const { return stopped_; }

 private:
  // The length of the longest suffix of pending_ that is a proper prefix
  // of a stop string or an incomplete UTF-8 character.
  size_t HeldBackLength() const;

  std::vector<std::string> stops_;
  std::string pending_;  // received, not yet emitted
  bool stopped_ = false;
};

}  // namespace lnpu::framework

#endif  // FRAMEWORK_STOP_STRINGS_H_
