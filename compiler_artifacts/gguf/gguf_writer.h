#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_WRITER_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_artifacts/gguf/ggml_type.h"
#include "compiler_artifacts/gguf/gguf_value.h"

namespace lnpu::gguf {

// Builds a GGUF v3 file: metadata in the order keys were first set, tensors
// in the order they were added, each tensor's data aligned to
// general.alignment (32 unless set with SetUint32). Tensors added with
// AddTensor are held in memory until written; those added with
// AddStreamedTensor are generated piece by piece while the file is written,
// so that multi-gigabyte files need little memory.
//
// Not thread-safe: use one writer from one thread at a time.
class GgufWriter {
 public:
  // Sets `key` to `value`. Setting a key again replaces its value and keeps
  // its position. Keys are checked by Serialize / Write (non-empty).
  void Set(std::string key, GgufValue value);
  void SetString(std::string key, std::string value);
  void SetUint32(std::string key, uint32_t value);
  void SetInt32(std::string key, int32_t value);
  void SetFloat32(std::string key, float value);
  void SetBool(std::string key, bool value);
  void SetStringArray(std::string key, std::vector<std::string> values);
  void SetFloat32Array(std::string key, std::vector<float> values);
  void SetInt32Array(std::string key, std::vector<int32_t> values);

  // Adds a tensor. InvalidArgument if the name is empty or already used, if
  // dims has not 1 to 4 entries or holds a 0, if the type is unknown or
  // dims[0] is not a multiple of its block size, or if data.size() is not
  // the tensor's byte size.
  absl::Status AddTensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                         std::vector<uint8_t> data);

  // Receives a streamed tensor's data, piece by piece.
  using DataSink = absl::FunctionRef<absl::Status(absl::Span<const uint8_t>)>;
  // Generates a tensor's data into the sink: consecutive pieces adding up
  // to exactly the tensor's byte size. Called once by every Serialize /
  // Write, so it must produce the same bytes each time it is called.
  using DataSource = std::function<absl::Status(DataSink)>;
  // Adds a tensor whose data `source` produces while the file is written.
  // The same checks as AddTensor for the name, type and dims. Serialize /
  // Write return the source's error, or InvalidArgument naming the tensor
  // if it produces more or fewer bytes than the tensor's size.
  absl::Status AddStreamedTensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                                 DataSource source);

  // The complete file contents.
  absl::StatusOr<std::vector<uint8_t>> Serialize() const;
  // Writes the file to `path` through base/atomic_file.h: readers see
  // either the old file or the complete, fsynced new one; a non-regular
  // `path` is refused; on failure nothing is left behind.
  absl::Status Write(const std::string& path) const;

 private:
  struct Entry {
    std::string key;
    GgufValue value;
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    uint64_t bytes;
    std::vector<uint8_t> data;  // AddTensor
    DataSource source;          // AddStreamedTensor
  };
  // Receives the file contents piece by piece.
  using Sink = DataSink;

  // The byte size of a new tensor, after the checks both Add functions make.
  absl::StatusOr<uint64_t> CheckedTensorBytes(const std::string& name, GgmlType type,
                                              const std::vector<uint64_t>& dims) const;
  absl::StatusOr<uint64_t> Alignment() const;
  absl::Status EmitTensorData(const Tensor& tensor, Sink sink) const;
  absl::Status Emit(Sink sink) const;

  // Lists and indexes like GgufFile's, but owning their keys (GgufFile's
  // index views into its mapping).
  std::vector<Entry> metadata_;
  absl::flat_hash_map<std::string, size_t> metadata_index_;
  std::vector<Tensor> tensors_;
  absl::flat_hash_map<std::string, size_t> tensor_index_;
};

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_GGUF_WRITER_H_
