#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_ENCODING_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_ENCODING_H_

// Private to compiler_artifacts/gguf: GGUF's byte encoding of scalars and
// strings and its format limits, shared by the reader (gguf_file.cc), the
// value codec (gguf_value.cc) and the writer (gguf_writer.cc).

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

namespace lnpu::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF is little-endian; big-endian hosts are not supported");

// A tensor has 1 to this many dimensions (GGML_MAX_DIMS).
inline constexpr uint32_t kMaxTensorDims = 4;

// Appends `value`'s little-endian bytes.
template <typename T>
void AppendScalar(std::vector<uint8_t>& out, T value) {
  static_assert(std::is_arithmetic_v<T>);
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

// Appends a GGUF string: its uint64 length, then its bytes (no terminator).
inline void AppendString(std::vector<uint8_t>& out, std::string_view value) {
  AppendScalar<uint64_t>(out, value.size());
  out.insert(out.end(), value.begin(), value.end());
}

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_ENCODING_H_
