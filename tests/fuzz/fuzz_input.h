// FuzzInput and FuzzInputWriter: the byte encoding of fuzz inputs.
//
// FuzzInput reads little-endian integers front to back from the bytes the
// fuzzer supplies; once the input is exhausted every read returns 0, so a
// decoder never has to check for the end. FuzzInputWriter produces the same
// encoding (for seed corpora written by tools and tests).
//
// Thread-safety: none; one object per thread.
#ifndef TESTS_FUZZ_FUZZ_INPUT_H_
#define TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/types/span.h"

namespace lnpu::fuzz {

class FuzzInput {
 public:
  explicit FuzzInput(absl::Span<const uint8_t> data) : data_(data) {}

  bool empty() const { return data_.empty(); }

  uint8_t U8() { return Read<uint8_t>(); }
  uint16_t U16() { return Read<uint16_t>(); }
  uint32_t U32() { return Read<uint32_t>(); }
  uint64_t U64() { return Read<uint64_t>(); }

  // The next min(n, remaining) bytes.
  absl::Span<const uint8_t> Bytes(size_t n) {
    const absl::Span<const uint8_t> bytes = data_.subspan(0, n);
    data_.remove_prefix(bytes.size());
    return bytes;
  }

 private:
  // Missing trailing bytes read as zero.
  template <typename T>
  T Read() {
    uint8_t bytes[sizeof(T)] = {};
    const absl::Span<const uint8_t> available = Bytes(sizeof(T));
    if (!available.empty()) {
      std::memcpy(bytes, available.data(), available.size());
    }
    T value = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<T>(static_cast<T>(bytes[i]) << (8 * i));
    }
    return value;
  }

  absl::Span<const uint8_t> data_;
};

class FuzzInputWriter {
 public:
  FuzzInputWriter& U8(uint8_t v) { return Write(v); }
  FuzzInputWriter& U16(uint16_t v) { return Write(v); }
  FuzzInputWriter& U32(uint32_t v) { return Write(v); }
  FuzzInputWriter& U64(uint64_t v) { return Write(v); }
  FuzzInputWriter& Bytes(absl::Span<const uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  template <typename T>
  FuzzInputWriter& Write(T value) {
    for (size_t i = 0; i < sizeof(T); ++i) {
      bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
    }
    return *this;
  }

  std::vector<uint8_t> bytes_;
};

}  // namespace lnpu::fuzz

#endif  // TESTS_FUZZ_FUZZ_INPUT_H_
