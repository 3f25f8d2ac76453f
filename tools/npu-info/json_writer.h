// JsonWriter: builds one JSON document (objects, arrays, strings, numbers,
// booleans) in order, with commas and string escaping handled, for the
// --json output of npu-info.
//
//   JsonWriter json;
//   json.BeginObject().Key("device").String(name).Key("pass").Bool(true)
//       .EndObject();
//   std::cout << json.text();
//
// The caller nests Begin/End calls correctly and gives every object member
// a Key() first; numbers that are not finite are written as null.
// Thread-safety: none.
#ifndef TOOLS_NPU_INFO_JSON_WRITER_H_
#define TOOLS_NPU_INFO_JSON_WRITER_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace lnpu::info {

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
    if (std::isfinite(value)) {
      absl::StrAppendFormat(&text_, "%.6g", value);
    } else {
      text_ += "null";
    }
    return *this;
  }
  JsonWriter& Bool(bool value) {
    Separate();
    text_ += value ? "true" : "false";
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
  void AppendString(absl::string_view s) {
    text_ += '"';
    for (char c : s) {
      switch (c) {
        case '"': text_ += "\\\""; break;
        case '\\': text_ += "\\\\"; break;
        case '\n': text_ += "\\n"; break;
        case '\t': text_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            absl::StrAppendFormat(&text_, "\\u%04x", c);
          } else {
            text_ += c;
          }
      }
    }
    text_ += '"';
  }

  std::string text_;
  std::vector<bool> depth_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace lnpu::info

#endif  // TOOLS_NPU_INFO_JSON_WRITER_H_
