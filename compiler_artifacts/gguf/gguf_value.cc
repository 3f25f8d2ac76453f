#include "compiler_artifacts/gguf/gguf_value.h"

#include <bit>
#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_artifacts/gguf/gguf_encoding.h"

namespace lnpu::gguf {
namespace {

void AppendArrayHeader(std::vector<uint8_t>& out, GgufValueType element_type, uint64_t count) {
  AppendScalar<uint32_t>(out, static_cast<uint32_t>(element_type));
  AppendScalar<uint64_t>(out, count);
}

template <typename T>
std::vector<uint8_t> EncodeScalar(T value) {
  std::vector<uint8_t> out;
  AppendScalar(out, value);
  return out;
}

}  // namespace

bool IsValidGgufValueType(uint32_t tag) { return tag <= static_cast<uint32_t>(GgufValueType::kFloat64); }

std::string GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: return "uint8";
    case GgufValueType::kInt8: return "int8";
    case GgufValueType::kUint16: return "uint16";
    case GgufValueType::kInt16: return "int16";
    case GgufValueType::kUint32: return "uint32";
    case GgufValueType::kInt32: return "int32";
    case GgufValueType::kFloat32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "uint64";
    case GgufValueType::kInt64: return "int64";
    case GgufValueType::kFloat64: return "float64";
  }
  return absl::StrCat("value type ", static_cast<uint32_t>(type));
}

uint32_t GgufScalarSize(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64: return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray: return 0;
  }
  return 0;
}

GgufValue GgufValue::Uint8(uint8_t value) { return {GgufValueType::kUint8, EncodeScalar(value)}; }
GgufValue GgufValue::Int8(int8_t value) { return {GgufValueType::kInt8, EncodeScalar(value)}; }
GgufValue GgufValue::Uint16(uint16_t value) { return {GgufValueType::kUint16, EncodeScalar(value)}; }
GgufValue GgufValue::Int16(int16_t value) { return {GgufValueType::kInt16, EncodeScalar(value)}; }
GgufValue GgufValue::Uint32(uint32_t value) { return {GgufValueType::kUint32, EncodeScalar(value)}; }
GgufValue GgufValue::Int32(int32_t value) { return {GgufValueType::kInt32, EncodeScalar(value)}; }
GgufValue GgufValue::Uint64(uint64_t value) { return {GgufValueType::kUint64, EncodeScalar(value)}; }
GgufValue GgufValue::Int64(int64_t value) { return {GgufValueType::kInt64, EncodeScalar(value)}; }
GgufValue GgufValue::Float32(float value) { return {GgufValueType::kFloat32, EncodeScalar(value)}; }
GgufValue GgufValue::Float64(double value) { return {GgufValueType::kFloat64, EncodeScalar(value)}; }
GgufValue GgufValue::Bool(bool value) {
  return {GgufValueType::kBool, EncodeScalar<uint8_t>(value ? 1 : 0)};
}

GgufValue GgufValue::String(std::string_view value) {
  std::vector<uint8_t> out;
  AppendString(out, value);
  return {GgufValueType::kString, std::move(out)};
}

GgufValue GgufValue::StringArray(absl::Span<const std::string> values) {
  std::vector<uint8_t> out;
  AppendArrayHeader(out, GgufValueType::kString, values.size());
  for (const std::string& value : values) AppendString(out, value);
  return {GgufValueType::kArray, std::move(out)};
}

GgufValue GgufValue::Float32Array(absl::Span<const float> values) {
  std::vector<uint8_t> out;
  out.reserve(12 + values.size() * sizeof(float));
  AppendArrayHeader(out, GgufValueType::kFloat32, values.size());
  for (float value : values) AppendScalar(out, value);
  return {GgufValueType::kArray, std::move(out)};
}

GgufValue GgufValue::Int32Array(absl::Span<const int32_t> values) {
  std::vector<uint8_t> out;
  out.reserve(12 + values.size() * sizeof(int32_t));
  AppendArrayHeader(out, GgufValueType::kInt32, values.size());
  for (int32_t value : values) AppendScalar(out, value);
  return {GgufValueType::kArray, std::move(out)};
}

absl::StatusOr<GgufValue> GgufValue::Array(GgufValueType element_type,
                                           absl::Span<const GgufValue> elements) {
  if (!IsValidGgufValueType(static_cast<uint32_t>(element_type))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GGUF array element type ", static_cast<uint32_t>(element_type),
        " is not a GGUF value type (0..12)"));
  }
  std::vector<uint8_t> out;
  AppendArrayHeader(out, element_type, elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].type() != element_type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GGUF array of ", GgufValueTypeName(element_type), " has element ", i, " of type ",
          GgufValueTypeName(elements[i].type()), ": all elements must have the array's type"));
    }
    out.insert(out.end(), elements[i].encoded().begin(), elements[i].encoded().end());
  }
  return GgufValue(GgufValueType::kArray, std::move(out));
}

}  // namespace lnpu::gguf
