#include "compiler_artifacts/gguf/gguf_writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "compiler_artifacts/gguf/gguf_encoding.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::gguf {
namespace {

uint64_t Padding(uint64_t offset, uint64_t alignment) {
  return (alignment - offset % alignment) % alignment;
}

}  // namespace

void GgufWriter::Set(std::string key, GgufValue value) {
  auto it = metadata_index_.find(key);
  if (it != metadata_index_.end()) {
    metadata_[it->second].value = std::move(value);
    return;
  }
  metadata_index_.emplace(key, metadata_.size());
  metadata_.push_back(Entry{std::move(key), std::move(value)});
}

void GgufWriter::SetString(std::string key, std::string value) {
  Set(std::move(key), GgufValue::String(value));
}
void GgufWriter::SetUint32(std::string key, uint32_t value) {
  Set(std::move(key), GgufValue::Uint32(value));
}
void GgufWriter::SetInt32(std::string key, int32_t value) {
  Set(std::move(key), GgufValue::Int32(value));
}
void GgufWriter::SetFloat32(std::string key, float value) {
  Set(std::move(key), GgufValue::Float32(value));
}
void GgufWriter::SetBool(std::string key, bool value) { Set(std::move(key), GgufValue::Bool(value)); }
void GgufWriter::SetStringArray(std::string key, std::vector<std::string> values) {
  Set(std::move(key), GgufValue::StringArray(values));
}
void GgufWriter::SetFloat32Array(std::string key, std::vector<float> values) {
  Set(std::move(key), GgufValue::Float32Array(values));
}
void GgufWriter::SetInt32Array(std::string key, std::vector<int32_t> values) {
  Set(std::move(key), GgufValue::Int32Array(values));
}

absl::StatusOr<uint64_t> GgufWriter::CheckedTensorBytes(const std::string& name, GgmlType type,
                                                        const std::vector<uint64_t>& dims) const {
  const std::string what = absl::StrCat("GGUF tensor '", name, "'");
  if (name.empty()) return absl::InvalidArgumentError("GGUF tensor name is empty");
  if (tensor_index_.contains(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " was already added: tensor names must be unique"));
  }
  if (dims.empty() || dims.size() > kMaxTensorDims) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", dims.size(),
                                                   " dimensions; GGUF allows 1 to ", kMaxTensorDims));
  }
  uint64_t elements = 1;
  for (uint64_t dim : dims) {
    if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " has dims [", absl::StrJoin(dims, ", "),
          "]: every dimension must be positive and the element count must fit int64"));
    }
    elements *= dim;
  }
  absl::StatusOr<std::pair<uint32_t, uint32_t>> block = GgmlTypeBlock(type);
  if (!block.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", block.status().message()));
  const auto [block_elements, block_bytes] = *block;
  if (dims[0] % block_elements != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " of type ", ToAbsl(GgmlTypeName(type)), " has rows of ", dims[0],
        " elements (dims[0]), not a multiple of the type's block size ", block_elements));
  }
  const uint64_t blocks = elements / block_elements;
  if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of type ", ToAbsl(GgmlTypeName(type)),
                                                   " and dims [", absl::StrJoin(dims, ", "),
                                                   "] has more bytes than fit 64 bits"));
  }
  return blocks * block_bytes;
}

absl::Status GgufWriter::AddTensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                                   std::vector<uint8_t> data) {
  LNPU_ASSIGN_OR_RETURN(uint64_t bytes, CheckedTensorBytes(name, type, dims));
  if (bytes != data.size()) {
    const uint32_t block_bytes = GgmlTypeBlock(type)->second;  // type checked above
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF tensor '", name, "' of type ", ToAbsl(GgmlTypeName(type)), " and dims [",
                     absl::StrJoin(dims, ", "), "] needs ", bytes / block_bytes, " blocks of ",
                     block_bytes, " bytes but got ", data.size(), " bytes of data"));
  }
  tensor_index_.emplace(name, tensors_.size());
  tensors_.push_back(Tensor{std::move(name), type, std::move(dims), bytes, std::move(data), {}});
  return absl::OkStatus();
}

absl::Status GgufWriter::AddStreamedTensor(std::string name, GgmlType type,
                                           std::vector<uint64_t> dims, DataSource source) {
  LNPU_ASSIGN_OR_RETURN(uint64_t bytes, CheckedTensorBytes(name, type, dims));
  if (!source) {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF tensor '", name, "' has no data source"));
  }
  tensor_index_.emplace(name, tensors_.size());
  tensors_.push_back(Tensor{std::move(name), type, std::move(dims), bytes, {}, std::move(source)});
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> GgufWriter::Alignment() const {
  auto it = metadata_index_.find(ToAbsl(kGgufAlignmentKey));
  if (it == metadata_index_.end()) return kGgufDefaultAlignment;
  const GgufValue& value = metadata_[it->second].value;
  uint32_t alignment = 0;
  if (value.type() == GgufValueType::kUint32) {
    std::memcpy(&alignment, value.encoded().data(), sizeof(alignment));
  }
  if (!std::has_single_bit(alignment)) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(kGgufAlignmentKey), " must be a uint32 power of two; set it with SetUint32 (e.g. 32)"));
  }
  return alignment;
}

absl::Status GgufWriter::EmitTensorData(const Tensor& tensor, Sink sink) const {
  if (!tensor.source) return sink(tensor.data);
  uint64_t produced = 0;
  LNPU_RETURN_IF_ERROR(tensor.source([&](absl::Span<const uint8_t> piece) {
    produced += piece.size();
    if (produced > tensor.bytes) return absl::OkStatus();  // reported below
    return sink(piece);
  }));
  if (produced != tensor.bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the data source of GGUF tensor '", tensor.name, "' produced ", produced,
        " bytes; the tensor has ", tensor.bytes));
  }
  return absl::OkStatus();
}

absl::Status GgufWriter::Emit(Sink sink) const {
  LNPU_ASSIGN_OR_RETURN(uint64_t alignment, Alignment());

  std::vector<uint8_t> header;
  AppendScalar<uint32_t>(header, kGgufMagic);
  AppendScalar<uint32_t>(header, kGgufVersion);
  AppendScalar<uint64_t>(header, tensors_.size());
  AppendScalar<uint64_t>(header, metadata_.size());
  for (const Entry& entry : metadata_) {
    if (entry.key.empty()) {
      return absl::InvalidArgumentError("a GGUF metadata key is empty: every key needs a name");
    }
    AppendString(header, entry.key);
    AppendScalar<uint32_t>(header, static_cast<uint32_t>(entry.value.type()));
    header.insert(header.end(), entry.value.encoded().begin(), entry.value.encoded().end());
  }
  uint64_t offset = 0;
  for (const Tensor& tensor : tensors_) {
    AppendString(header, tensor.name);
    AppendScalar<uint32_t>(header, static_cast<uint32_t>(tensor.dims.size()));
    for (uint64_t dim : tensor.dims) AppendScalar<uint64_t>(header, dim);
    AppendScalar<uint32_t>(header, static_cast<uint32_t>(tensor.type));
    AppendScalar<uint64_t>(header, offset);
    offset += tensor.bytes + Padding(tensor.bytes, alignment);
  }
  header.resize(header.size() + Padding(header.size(), alignment), 0);
  LNPU_RETURN_IF_ERROR(sink(header));

  const std::vector<uint8_t> zeros(alignment, 0);
  for (const Tensor& tensor : tensors_) {
    LNPU_RETURN_IF_ERROR(EmitTensorData(tensor, sink));
    const uint64_t padding = Padding(tensor.bytes, alignment);
    LNPU_RETURN_IF_ERROR(sink(absl::MakeConstSpan(zeros).first(padding)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> GgufWriter::Serialize() const {
  std::vector<uint8_t> bytes;
  LNPU_RETURN_IF_ERROR(Emit([&bytes](absl::Span<const uint8_t> piece) {
    bytes.insert(bytes.end(), piece.begin(), piece.end());
    return absl::OkStatus();
  }));
  return bytes;
}

absl::Status GgufWriter::Write(const std::string& path) const {
  LNPU_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                        AtomicFileWriter::Create(path, "GGUF file"));
  LNPU_RETURN_IF_ERROR(
      Emit([&file](absl::Span<const uint8_t> piece) { return file->Append(piece); }));
  return file->Commit();
}

}  // namespace lnpu::gguf
