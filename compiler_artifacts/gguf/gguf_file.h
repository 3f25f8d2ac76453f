#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_FILE_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compiler_artifacts/gguf/ggml_type.h"
#include "compiler_artifacts/gguf/gguf_value.h"

namespace lnpu::gguf {

// Description of one tensor of a GGUF file.
struct TensorInfo {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> dims;  // GGUF order: dims[0] is the contiguous dimension (ne0).
  uint64_t offset;             // From the start of the tensor data section.
  uint64_t bytes;

  // Product of dims (1 for no dims).
  uint64_t elements() const;
};

// A GGUF file (versions 2 and 3, little-endian), memory-mapped read-only and
// fully validated by Open: every later accessor works on checked data. The
// tensor data is never copied; TensorData returns views into the mapping.
//
// Immutable after Open; all methods are safe to call concurrently.
class GgufFile {
 public:
  // Maps and validates the file at `path`. NotFound / PermissionDenied /
  // ... for files that cannot be opened, InvalidArgument naming the path,
  // the field and its byte offset for malformed files, Unimplemented for
  // GGUF versions or byte orders this reader does not support.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);

  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return version_; }
  // general.alignment, or 32 when absent; tensor offsets are multiples of it.
  uint64_t alignment() const { return alignment_; }
  const std::string& path() const { return path_; }

  // Metadata keys in file order.
  std::vector<std::string_view> keys() const;
  bool HasKey(std::string_view key) const;
  // Type of the value stored under `key`; NotFound if absent.
  absl::StatusOr<GgufValueType> KeyType(std::string_view key) const;

  // Typed metadata getters. NotFound when the key is absent, InvalidArgument
  // when the stored type does not fit the request, OutOfRange when an integer
  // does not fit the result type.
  absl::StatusOr<std::string> GetString(std::string_view key) const;
  // Any integer type holding a non-negative value.
  absl::StatusOr<uint64_t> GetUint(std::string_view key) const;
  // Any integer type holding a value that fits int64.
  absl::StatusOr<int64_t> GetInt(std::string_view key) const;
  // float32 or float64 (narrowed to float).
  absl::StatusOr<float> GetFloat(std::string_view key) const;
  absl::StatusOr<bool> GetBool(std::string_view key) const;
  absl::StatusOr<std::vector<std::string>> GetStringArray(std::string_view key) const;
  // Array of float32 or float64.
  absl::StatusOr<std::vector<float>> GetFloatArray(std::string_view key) const;
  // Array of any integer type whose values all fit int32.
  absl::StatusOr<std::vector<int32_t>> GetInt32Array(std::string_view key) const;

  // Tensors in file order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr if the file has no tensor with that name.
  const TensorInfo* FindTensor(std::string_view name) const;
  // The tensor's bytes inside the mapping (valid while this object lives).
  // `tensor` must come from tensors(); anything that does not lie inside the
  // data section yields an empty span.
  absl::Span<const uint8_t> TensorData(const TensorInfo& tensor) const;
  // The whole tensor converted to f32 (the types of CanDequantize, see
  // dequantize.h). Unimplemented naming the type for other types.
  absl::StatusOr<std::vector<float>> TensorToF32(const TensorInfo& tensor) const;

 private:
  // A metadata value: its type tag and its encoded bytes (validated by Open).
  struct MetadataEntry {
    std::string_view key;
    GgufValueType type;
    absl::Span<const uint8_t> encoded;
  };
  class Parser;

  GgufFile(std::string path, const uint8_t* map, size_t size);

  // An array entry: its element type and its encoded elements.
  struct ArrayView {
    GgufValueType element_type;
    uint64_t count;
    absl::Span<const uint8_t> elements;
  };

  absl::StatusOr<const MetadataEntry*> FindEntry(std::string_view key) const;
  // InvalidArgument naming `wanted` if the entry is not an array.
  absl::StatusOr<ArrayView> FindArray(std::string_view key, std::string_view wanted) const;
  absl::Status TypeMismatch(const MetadataEntry& entry, std::string_view wanted) const;

  const std::string path_;
  const uint8_t* const map_;  // nullptr for an empty file.
  const size_t size_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;  // Start of the tensor data section in the file.
  std::vector<MetadataEntry> metadata_;
  absl::flat_hash_map<std::string_view, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  absl::flat_hash_map<std::string_view, size_t> tensor_index_;
};

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_FILE_H_
