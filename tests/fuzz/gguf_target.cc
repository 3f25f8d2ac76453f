// The GGUF reader's fuzz target (parser_targets.h).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "base/half.h"
#include "tests/fuzz/memory_file.h"
#include "tests/fuzz/parser_targets.h"

namespace lnpu::fuzz {
namespace {

using gguf::GgmlType;
using gguf::GgufFile;
using gguf::GgufValueType;

// Tensors up to this many elements are converted to f32.
constexpr uint64_t kMaxConvertedElements = uint64_t{1} << 16;

// The getters agree with the key's type: the one for its type succeeds,
// the others fail.
void CheckGetters(const GgufFile& file, std::string_view key,
                  ParserRun& run) {
  const std::string name(key);
  const auto type = file.KeyType(key);
  if (!file.HasKey(key) || !type.ok()) {
    run.Fail(absl::StrCat("key '", name, "' is listed but not found"));
    return;
  }
  const bool is_string = *type == GgufValueType::kString;
  const bool is_float = *type == GgufValueType::kFloat32 ||
                        *type == GgufValueType::kFloat64;
  const bool is_integer = !is_string && !is_float &&
                          *type != GgufValueType::kBool &&
                          *type != GgufValueType::kArray;
  if (file.GetString(key).ok() != is_string) {
    run.Fail(absl::StrCat("GetString of '", name, "' disagrees with its type"));
  }
  if (file.GetFloat(key).ok() != is_float) {
    run.Fail(absl::StrCat("GetFloat of '", name, "' disagrees with its type"));
  }
  if (file.GetBool(key).ok() != (*type == GgufValueType::kBool)) {
    run.Fail(absl::StrCat("GetBool of '", name, "' disagrees with its type"));
  }
  const bool as_int = file.GetInt(key).ok();
  const bool as_uint = file.GetUint(key).ok();
  // Every integer is non-negative (GetUint) or fits int64 (GetInt).
  if (is_integer ? !(as_int || as_uint) : (as_int || as_uint)) {
    run.Fail(absl::StrCat("GetInt/GetUint of '", name,
                          "' disagree with its type"));
  }
  const auto strings = file.GetStringArray(key);
  const bool arrays_ok = file.GetFloatArray(key).ok() ||
                         file.GetInt32Array(key).ok() || strings.ok();
  if (arrays_ok && *type != GgufValueType::kArray) {
    run.Fail(absl::StrCat("an array getter accepts the scalar '", name, "'"));
  }
}

bool SameBits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

// F32, F16 and BF16 convert exactly; the expected value of element i.
bool ExactElement(GgmlType type, absl::Span<const uint8_t> data, size_t i,
                  float& value) {
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(&value, data.data() + 4 * i, 4);
      return true;
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      const uint16_t bits = static_cast<uint16_t>(
          data[2 * i] | (static_cast<uint16_t>(data[2 * i + 1]) << 8));
      value = type == GgmlType::kF16 ? Float16ToFloat(bits)
                                     : BFloat16ToFloat(bits);
      return true;
    }
    default:
      return false;
  }
}

void CheckTensor(const GgufFile& file, const gguf::TensorInfo& tensor,
                 ParserRun& run) {
  const std::string name = absl::StrCat("tensor '", tensor.name, "'");
  if (file.FindTensor(tensor.name) != &tensor) {
    run.Fail(absl::StrCat(name, " is not what FindTensor finds"));
  }
  if (tensor.offset % file.alignment() != 0) {
    run.Fail(absl::StrCat(name, " is not aligned"));
  }
  const absl::Span<const uint8_t> data = file.TensorData(tensor);
  if (data.size() != tensor.bytes) {
    run.Fail(absl::StrCat(name, ": TensorData has ", data.size(),
                          " bytes, the tensor ", tensor.bytes));
    return;
  }
  const uint64_t elements = tensor.elements();
  if (elements > kMaxConvertedElements) return;
  const auto values = file.TensorToF32(tensor);
  const bool supported = gguf::CanDequantize(tensor.type);
  if (values.ok() != supported) {
    run.Fail(absl::StrCat(name, ": TensorToF32 says ",
                          values.status().ToString(), " for type ",
                          static_cast<int>(tensor.type)));
    return;
  }
  if (!values.ok()) return;
  if (values->size() != elements) {
    run.Fail(absl::StrCat(name, ": TensorToF32 gave ", values->size(),
                          " values for ", elements, " elements"));
    return;
  }
  for (size_t i = 0; i < values->size(); ++i) {
    float expected;
    if (!ExactElement(tensor.type, data, i, expected)) break;
    if (!SameBits((*values)[i], expected)) {
      run.Fail(absl::StrCat(name, ": element ", i, " converts to ",
                            (*values)[i], ", expected ", expected));
      return;
    }
  }
}

}  // namespace

ParserRun RunGgufTarget(absl::Span<const uint8_t> input) {
  static MemoryFile* const file = new MemoryFile();
  ParserRun run;
  if (absl::Status s = file->Assign(input); !s.ok()) {
    run.Fail(s.ToString());
    return run;
  }
  const absl::StatusOr<std::unique_ptr<GgufFile>> gguf =
      GgufFile::Open(file->path());
  if (!gguf.ok()) {
    run.ExpectErrorNamesFile(gguf.status(), file->path());
    return run;
  }
  run.accepted = true;
  absl::flat_hash_set<std::string_view> keys;
  for (std::string_view key : (*gguf)->keys()) {
    if (!keys.insert(key).second) {
      run.Fail(absl::StrCat("key '", std::string(key), "' appears twice"));
    }
    CheckGetters(**gguf, key, run);
  }
  for (const gguf::TensorInfo& tensor : (*gguf)->tensors()) {
    CheckTensor(**gguf, tensor, run);
  }
  return run;
}

}  // namespace lnpu::fuzz
