#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_VALUE_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_VALUE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace lnpu::gguf {

// Constants of the GGUF container (little-endian only).
inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" as stored bytes.
inline constexpr uint32_t kGgufVersion = 3;         // Written by GgufWriter.
inline constexpr uint64_t kGgufDefaultAlignment = 32;
inline constexpr std::string_view kGgufAlignmentKey = "general.alignment";

// Type tag of a metadata value, with GGUF's numbering.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// True for the 13 tags defined by GGUF.
bool IsValidGgufValueType(uint32_t tag);

// "uint32", "string", "array", ...; "value type N" for invalid tags.
std::string GgufValueTypeName(GgufValueType type);

// Encoded size of one scalar of `type` (0 for kString and kArray, whose size
// depends on the value).
uint32_t GgufScalarSize(GgufValueType type);

// One metadata value, already encoded in GGUF's on-disk layout (without its
// type tag). Built with the factories below; immutable and cheap to move.
class GgufValue {
 public:
  static GgufValue Uint8(uint8_t value);
  static GgufValue Int8(int8_t value);
  static GgufValue Uint16(uint16_t value);
  static GgufValue Int16(int16_t value);
  static GgufValue Uint32(uint32_t value);
  static GgufValue Int32(int32_t value);
  static GgufValue Uint64(uint64_t value);
  static GgufValue Int64(int64_t value);
  static GgufValue Float32(float value);
  static GgufValue Float64(double value);
  static GgufValue Bool(bool value);
  static GgufValue String(std::string_view value);
  static GgufValue StringArray(absl::Span<const std::string> values);
  static GgufValue Float32Array(absl::Span<const float> values);
  static GgufValue Int32Array(absl::Span<const int32_t> values);
  // Array of any element type, arrays of arrays included (their elements may
  // differ in type, as GGUF allows). InvalidArgument if an element's type is
  // not `element_type`.
  static absl::StatusOr<GgufValue> Array(GgufValueType element_type,
                                         absl::Span<const GgufValue> elements);

  GgufValueType type() const { return type_; }
  // The encoded bytes that follow the type tag in a file.
  absl::Span<const uint8_t> encoded() const { return encoded_; }

 private:
  GgufValue(GgufValueType type, std::vector<uint8_t> encoded)
      : type_(type), encoded_(std::move(encoded)) {}

  GgufValueType type_;
  std::vector<uint8_t> encoded_;
};

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_VALUE_H_
