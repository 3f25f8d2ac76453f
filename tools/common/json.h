// JSON output of the tools (npu-info, npu-bench): string and number
// literals, and JsonWriter, which builds one JSON document (objects,
// arrays, strings, numbers, booleans, null) in order, with commas and string
// escaping handled.
//
//   JsonWriter json;
//   json.BeginObject().Key("device").String(name).Key("pass").Bool(true)
//       .EndObject();
//   std::cout << json.text();
//
// The caller nests Begin/End calls correctly and gives every object member
// a Key() first; numbers that are not finite are written as null. Each
// report lists its own keys in such a chain, so reports with like fields
// (npu-eval's, npu-info's) look alike without sharing any logic.
// Thread-safety: none.
#ifndef TOOLS_COMMON_JSON_H_
#define TOOLS_COMMON_JSON_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace lnpu::tools {

// `text` as a JSON string literal (quotes added, control characters
// escaped; bytes >= 0x80 pass through, so UTF-8 stays UTF-8).
inline std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// `value` as a JSON number; JSON has no inf or nan, so those become null.
inline std::string JsonNumber(double value) {
  return std::isfinite(value) ? absl::StrFormat("%.6g", value) : "null";
}

class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }

  JsonWriter& Key(absl::string_view key) {
    Separate();
    AppendString(key);
    text_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& String(absl::string_view value) {
    Separate();
    AppendString(value);
    return *this;
  }
  JsonWriter& Uint(uint64_t value) {
    Separate();
    absl::StrAppend(&text_, value);
    return *this;
  }
  JsonWriter& Double(double value) {
    Separate();
    text_ += JsonNumber(value);
    return *this;
  }
  JsonWriter& Bool(bool value) {
    Separate();
    text_ += value ? "true" : "false";
    return *this;
  }
  JsonWriter& Null() {
    Separate();
    text_ += "null";
    return *this;
  }

  // The document so far, with a trailing newline once complete.
  std::string text() const { return depth_.empty() ? text_ + "\n" : text_; }

 private:
  JsonWriter& Open(char bracket) {
    Separate();
    text_ += bracket;
    depth_.push_back(true);  // the next element is the first
    return *this;
  }
  JsonWriter& Close(char bracket) {
    text_ += bracket;
    depth_.pop_back();
    return *this;
  }
  // A comma before every element but the first of its container (and
  // nothing between a key and its value).
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (depth_.empty()) return;
    if (!depth_.back()) text_ += ',';
    depth_.back() = false;
  }
  void AppendString(absl::string_view s) { text_ += JsonQuote(s); }

  std::string text_;
  std::vector<bool> depth_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace lnpu::tools

#endif  // TOOLS_COMMON_JSON_H_
