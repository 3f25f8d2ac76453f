#include "compiler_artifacts/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/gguf_encoding.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::gguf {
namespace {

// Smallest encodings, used to bound counts read from the file before any
// allocation: a metadata entry is a key length, a type tag and at least one
// value byte; a tensor info is a name length, n_dims, one dim, a type and an
// offset; a string is its length; a nested array is its element type and
// count.
constexpr uint64_t kMinMetadataEntryBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
constexpr uint64_t kMinStringBytes = 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;
// Arrays of arrays deeper than this are rejected (bounds the recursion).
constexpr int kMaxArrayNesting = 8;

template <typename T>
T Load(const uint8_t* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

// Printable form of a name read from the file (which may hold any bytes).
std::string Quoted(std::string_view name) { return absl::StrCat("'", absl::CHexEscape(ToAbsl(name)), "'"); }

bool IsIntegerType(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64: return true;
    default: return false;
  }
}

// An integer of any GGUF integer type, as sign and magnitude.
struct IntegerValue {
  bool negative;
  uint64_t magnitude;
};

IntegerValue DecodeInteger(GgufValueType type, const uint8_t* bytes) {
  auto from_signed = [](int64_t value) {
    return value < 0 ? IntegerValue{true, 0 - static_cast<uint64_t>(value)}
                     : IntegerValue{false, static_cast<uint64_t>(value)};
  };
  switch (type) {
    case GgufValueType::kUint8: return {false, Load<uint8_t>(bytes)};
    case GgufValueType::kUint16: return {false, Load<uint16_t>(bytes)};
    case GgufValueType::kUint32: return {false, Load<uint32_t>(bytes)};
    case GgufValueType::kUint64: return {false, Load<uint64_t>(bytes)};
    case GgufValueType::kInt8: return from_signed(Load<int8_t>(bytes));
    case GgufValueType::kInt16: return from_signed(Load<int16_t>(bytes));
    case GgufValueType::kInt32: return from_signed(Load<int32_t>(bytes));
    case GgufValueType::kInt64: return from_signed(Load<int64_t>(bytes));
    default: return {false, 0};  // Callers check IsIntegerType first.
  }
}

// `value` as T, or nullopt if it does not fit.
template <typename T>
std::optional<T> IntegerAs(IntegerValue value) {
  using Limits = std::numeric_limits<T>;
  if (value.negative) {
    if constexpr (Limits::is_signed) {
      if (value.magnitude - 1 > static_cast<uint64_t>(Limits::max())) return std::nullopt;
      return static_cast<T>(-static_cast<int64_t>(value.magnitude - 1) - 1);
    } else {
      return std::nullopt;
    }
  }
  if (value.magnitude > static_cast<uint64_t>(Limits::max())) return std::nullopt;
  return static_cast<T>(value.magnitude);
}

std::string Describe(IntegerValue value) {
  return absl::StrCat(value.negative ? "-" : "", value.magnitude);
}

// Reads a little-endian string (u64 length + bytes) at `*cursor` of validated
// data and advances the cursor.
std::string_view LoadString(const uint8_t*& cursor) {
  const uint64_t length = Load<uint64_t>(cursor);
  std::string_view value(reinterpret_cast<const char*>(cursor + 8), length);
  cursor += 8 + length;
  return value;
}

// A constant field name for the parser's lazily built error context.
auto Literal(const char* text) {
  return [text] { return std::string(text); };
}

}  // namespace

uint64_t TensorInfo::elements() const {
  uint64_t product = 1;
  for (uint64_t dim : dims) product *= dim;
  return product;
}

// Walks the file once, validating every field before it is used; records the
// metadata and tensor infos into the GgufFile.
class GgufFile::Parser {
 public:
  // Names the field being read; only called to build an error message.
  using What = absl::FunctionRef<std::string()>;

  explicit Parser(GgufFile& file) : file_(file), size_(file.size_) {}

  absl::Status Parse() {
    LNPU_RETURN_IF_ERROR(ParseHeader());
    for (uint64_t i = 0; i < metadata_count_; ++i) {
      LNPU_RETURN_IF_ERROR(ParseMetadataEntry(i));
    }
    LNPU_RETURN_IF_ERROR(ParseAlignment());
    LNPU_RETURN_IF_ERROR(CheckCount(tensor_count_, kMinTensorInfoBytes, Literal("tensor count"),
                                    kTensorCountOffset));
    file_.tensors_.reserve(tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      LNPU_RETURN_IF_ERROR(ParseTensorInfo(i));
    }
    return PlaceTensorData();
  }

 private:
  static constexpr uint64_t kTensorCountOffset = 8;
  static constexpr uint64_t kMetadataCountOffset = 16;

  template <typename... Args>
  absl::Status Invalid(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(file_.path_, ": ", args...));
  }

  uint64_t Remaining() const { return size_ - pos_; }
  const uint8_t* At(uint64_t offset) const { return file_.map_ + offset; }

  absl::Status Need(uint64_t bytes, What what) const {
    if (bytes <= Remaining()) return absl::OkStatus();
    return Invalid(what(), " at byte ", pos_, " needs ", bytes, " bytes but the file ends at byte ",
                   size_, ": the file is truncated");
  }

  template <typename T>
  absl::Status Read(T& value, What what) {
    LNPU_RETURN_IF_ERROR(Need(sizeof(T), what));
    value = Load<T>(At(pos_));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }

  absl::Status ReadString(std::string_view& value, What what) {
    const uint64_t start = pos_;
    uint64_t length = 0;
    LNPU_RETURN_IF_ERROR(Read(length, [&] { return absl::StrCat("length of ", what()); }));
    if (length > Remaining()) {
      return Invalid(what(), " at byte ", start, " claims ", length, " bytes but only ",
                     Remaining(), " bytes follow: the file is truncated or corrupt");
    }
    value = std::string_view(reinterpret_cast<const char*>(At(pos_)), length);
    pos_ += length;
    return absl::OkStatus();
  }

  // Rejects a count read at `offset` whose items (each at least `min_bytes`)
  // cannot fit in the rest of the file, before anything is allocated for it.
  absl::Status CheckCount(uint64_t count, uint64_t min_bytes, What what, uint64_t offset) const {
    if (count <= Remaining() / min_bytes) return absl::OkStatus();
    return Invalid(what(), " ", count, " (read at byte ", offset, ") cannot fit in the ", Remaining(),
                   " bytes left after byte ", pos_, ": the file is corrupt or truncated");
  }

  absl::Status ParseHeader() {
    if (absl::Status status = Need(4, Literal("GGUF magic")); !status.ok()) {
      return size_ == 0 ? Invalid("the file is empty, not a GGUF file") : status;
    }
    const std::string_view magic(reinterpret_cast<const char*>(At(0)), 4);
    if (Load<uint32_t>(At(0)) != kGgufMagic) {
      return Invalid("not a GGUF file: it starts with ", Quoted(magic), " instead of 'GGUF'");
    }
    pos_ = 4;
    uint32_t version = 0;
    LNPU_RETURN_IF_ERROR(Read(version, Literal("GGUF version")));
    const uint32_t swapped = __builtin_bswap32(version);
    if (version != 2 && version != 3) {
      if (swapped == 2 || swapped == 3) {
        return absl::UnimplementedError(absl::StrCat(
            file_.path_, ": big-endian GGUF (version ", swapped,
            ") is not supported: convert the model on a little-endian machine"));
      }
      if (version == 1) {
        return absl::UnimplementedError(absl::StrCat(
            file_.path_, ": GGUF version 1 is not supported (only 2 and 3): re-convert the model "
            "with a current llama.cpp"));
      }
      return absl::UnimplementedError(absl::StrCat(
          file_.path_, ": GGUF version ", version,
          " at byte 4 is not supported (only 2 and 3): the file is corrupt or too new"));
    }
    file_.version_ = version;
    LNPU_RETURN_IF_ERROR(Read(tensor_count_, Literal("tensor count")));
    LNPU_RETURN_IF_ERROR(Read(metadata_count_, Literal("metadata count")));
    LNPU_RETURN_IF_ERROR(CheckCount(metadata_count_, kMinMetadataEntryBytes,
                                    Literal("metadata count"), kMetadataCountOffset));
    return CheckCount(tensor_count_, kMinTensorInfoBytes, Literal("tensor count"),
                      kTensorCountOffset);
  }

  absl::Status ParseMetadataEntry(uint64_t index) {
    const std::string entry_name = absl::StrCat("metadata key #", index);
    std::string_view key;
    LNPU_RETURN_IF_ERROR(ReadString(key, [&] { return entry_name; }));
    if (key.empty()) return Invalid(entry_name, " ending at byte ", pos_, " is empty");
    const std::string what = absl::StrCat("metadata key ", Quoted(key));
    uint32_t tag = 0;
    LNPU_RETURN_IF_ERROR(Read(tag, [&] { return absl::StrCat("value type of ", what); }));
    if (!IsValidGgufValueType(tag)) {
      return Invalid(what, " has value type ", tag, " at byte ", pos_ - 4,
                     ", which is not a GGUF value type (0..12): the file is corrupt");
    }
    const auto type = static_cast<GgufValueType>(tag);
    const uint64_t value_start = pos_;
    LNPU_RETURN_IF_ERROR(SkipValue(type, 0, [&] { return absl::StrCat("value of ", what); }));
    if (file_.metadata_index_.contains(key)) {
      return Invalid(what, " appears twice (second at ", entry_name,
                     "): keys must be unique; the file is corrupt");
    }
    file_.metadata_index_.emplace(key, file_.metadata_.size());
    file_.metadata_.push_back(MetadataEntry{
        key, type, absl::MakeConstSpan(At(value_start), pos_ - value_start)});
    return absl::OkStatus();
  }

  // Validates the value of `type` at the cursor and moves past it.
  absl::Status SkipValue(GgufValueType type, int depth, What what) {
    if (type == GgufValueType::kString) {
      std::string_view ignored;
      return ReadString(ignored, what);
    }
    if (type == GgufValueType::kBool) {
      uint8_t value = 0;
      LNPU_RETURN_IF_ERROR(Read(value, what));
      if (value > 1) {
        return Invalid(what(), " at byte ", pos_ - 1, " is a bool holding ", value,
                       " (must be 0 or 1): the file is corrupt");
      }
      return absl::OkStatus();
    }
    if (type != GgufValueType::kArray) {
      LNPU_RETURN_IF_ERROR(Need(GgufScalarSize(type), what));
      pos_ += GgufScalarSize(type);
      return absl::OkStatus();
    }
    if (depth >= kMaxArrayNesting) {
      return Invalid(what(), " at byte ", pos_, " nests arrays more than ", kMaxArrayNesting,
                     " deep");
    }
    const uint64_t start = pos_;
    uint32_t tag = 0;
    uint64_t count = 0;
    LNPU_RETURN_IF_ERROR(Read(tag, [&] { return absl::StrCat("element type of ", what()); }));
    if (!IsValidGgufValueType(tag)) {
      return Invalid(what(), " at byte ", start, " is an array of value type ", tag,
                     ", which is not a GGUF value type (0..12): the file is corrupt");
    }
    LNPU_RETURN_IF_ERROR(Read(count, [&] { return absl::StrCat("element count of ", what()); }));
    const auto element_type = static_cast<GgufValueType>(tag);
    const uint64_t min_bytes = element_type == GgufValueType::kString  ? kMinStringBytes
                               : element_type == GgufValueType::kArray ? kMinArrayBytes
                                                                       : GgufScalarSize(element_type);
    LNPU_RETURN_IF_ERROR(CheckCount(
        count, min_bytes,
        [&] {
          return absl::StrCat(what(), ": array of ", GgufValueTypeName(element_type),
                              " with element count");
        },
        start + 4));
    if (element_type != GgufValueType::kString && element_type != GgufValueType::kArray &&
        element_type != GgufValueType::kBool) {
      pos_ += count * min_bytes;  // Checked by CheckCount.
      return absl::OkStatus();
    }
    for (uint64_t i = 0; i < count; ++i) {
      LNPU_RETURN_IF_ERROR(
          SkipValue(element_type, depth + 1, [&] { return absl::StrCat(what(), "[", i, "]"); }));
    }
    return absl::OkStatus();
  }

  absl::Status ParseAlignment() {
    if (!file_.HasKey(kGgufAlignmentKey)) return absl::OkStatus();
    LNPU_ASSIGN_OR_RETURN(uint64_t alignment, file_.GetUint(kGgufAlignmentKey));
    if (alignment == 0 || !std::has_single_bit(alignment)) {
      return Invalid(ToAbsl(kGgufAlignmentKey), " is ", alignment, ", not a power of two");
    }
    file_.alignment_ = alignment;
    return absl::OkStatus();
  }

  absl::Status ParseTensorInfo(uint64_t index) {
    const std::string tensor_name = absl::StrCat("tensor #", index);
    std::string_view name;
    LNPU_RETURN_IF_ERROR(ReadString(name, [&] { return absl::StrCat("name of ", tensor_name); }));
    if (name.empty()) return Invalid("name of ", tensor_name, " ending at byte ", pos_, " is empty");
    const std::string what = absl::StrCat("tensor ", Quoted(name));
    if (file_.tensor_index_.contains(name)) {
      return Invalid(what, " appears twice (second as ", tensor_name,
                     "): tensor names must be unique; the file is corrupt");
    }
    uint32_t n_dims = 0;
    LNPU_RETURN_IF_ERROR(Read(n_dims, [&] { return absl::StrCat("dimension count of ", what); }));
    if (n_dims == 0 || n_dims > kMaxTensorDims) {
      return Invalid(what, " has ", n_dims, " dimensions (byte ", pos_ - 4, "); GGUF allows 1 to ",
                     kMaxTensorDims);
    }
    TensorInfo info{std::string(name), GgmlType::kF32, {}, 0, 0};
    info.dims.resize(n_dims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      LNPU_RETURN_IF_ERROR(
          Read(info.dims[d], [&] { return absl::StrCat("dims[", d, "] of ", what); }));
      if (info.dims[d] == 0) return Invalid(what, " has dims[", d, "] = 0 (byte ", pos_ - 8, ")");
      if (info.dims[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements) {
        return Invalid(what, " has dims [", absl::StrJoin(info.dims.begin(), info.dims.begin() + d + 1, ", "),
                       "] whose element count overflows int64: the file is corrupt");
      }
      elements *= info.dims[d];
    }
    uint32_t tag = 0;
    LNPU_RETURN_IF_ERROR(Read(tag, [&] { return absl::StrCat("type of ", what); }));
    info.type = static_cast<GgmlType>(tag);
    absl::StatusOr<std::pair<uint32_t, uint32_t>> block = GgmlTypeBlock(info.type);
    if (!block.ok()) {
      return Invalid(what, " at byte ", pos_ - 4, ": ", block.status().message());
    }
    const auto [block_elements, block_bytes] = *block;
    if (info.dims[0] % block_elements != 0) {
      return Invalid(what, " of type ", ToAbsl(GgmlTypeName(info.type)), " has rows of ", info.dims[0],
                     " elements (dims[0]), not a multiple of the type's block size ",
                     block_elements);
    }
    const uint64_t blocks = elements / block_elements;
    if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
      return Invalid(what, " is too large: ", blocks, " blocks of ", block_bytes,
                     " bytes overflow 64 bits");
    }
    info.bytes = blocks * block_bytes;
    LNPU_RETURN_IF_ERROR(Read(info.offset, [&] { return absl::StrCat("data offset of ", what); }));
    if (info.offset % file_.alignment_ != 0) {
      return Invalid(what, " has data offset ", info.offset, " (byte ", pos_ - 8,
                     "), which is not a multiple of the alignment ", file_.alignment_,
                     ": the file is corrupt");
    }
    file_.tensor_index_.emplace(name, file_.tensors_.size());
    file_.tensors_.push_back(std::move(info));
    return absl::OkStatus();
  }

  // Places the data section after the tensor infos and checks that every
  // tensor lies inside the file without overlapping another.
  absl::Status PlaceTensorData() {
    const uint64_t alignment = file_.alignment_;
    const uint64_t padding = (alignment - pos_ % alignment) % alignment;
    if (padding > std::numeric_limits<uint64_t>::max() - pos_) {
      return Invalid("the data section start overflows with alignment ", alignment);
    }
    file_.data_offset_ = pos_ + padding;
    if (file_.tensors_.empty()) return absl::OkStatus();
    if (file_.data_offset_ > size_) {
      return Invalid("the tensor data section starts at byte ", file_.data_offset_,
                     " beyond the file size ", size_, ": the file is truncated");
    }
    const uint64_t data_size = size_ - file_.data_offset_;
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(file_.tensors_.size());
    for (const TensorInfo& tensor : file_.tensors_) {
      if (tensor.offset > data_size || tensor.bytes > data_size - tensor.offset) {
        constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
        const bool overflows = tensor.offset > kMax - file_.data_offset_ ||
                               tensor.bytes > kMax - file_.data_offset_ - tensor.offset;
        return Invalid("tensor ", Quoted(tensor.name), " data ends at byte ",
                       overflows ? std::string("2^64 or more")
                                 : absl::StrCat(file_.data_offset_ + tensor.offset + tensor.bytes),
                       " beyond the file size ", size_, ": the file is truncated");
      }
      by_offset.push_back(&tensor);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const TensorInfo& previous = *by_offset[i - 1];
      if (previous.offset + previous.bytes > by_offset[i]->offset) {
        return Invalid("tensors ", Quoted(previous.name), " (data bytes ", previous.offset, "..",
                       previous.offset + previous.bytes, ") and ", Quoted(by_offset[i]->name),
                       " (from ", by_offset[i]->offset, ") overlap: the file is corrupt");
      }
    }
    return absl::OkStatus();
  }

  GgufFile& file_;
  const uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t metadata_count_ = 0;
};

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open GGUF file ", path));
  absl::Cleanup close_fd = [fd] { ::close(fd); };
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot stat GGUF file ", path));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  const size_t size = static_cast<size_t>(info.st_size);
  const uint8_t* map = nullptr;
  if (size > 0) {
    void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot mmap GGUF file ", path));
    }
    map = static_cast<const uint8_t*>(mapped);
  }
  std::unique_ptr<GgufFile> file(new GgufFile(path, map, size));
  LNPU_RETURN_IF_ERROR(Parser(*file).Parse());
  return file;
}

GgufFile::GgufFile(std::string path, const uint8_t* map, size_t size)
    : path_(std::move(path)), map_(map), size_(size) {}

GgufFile::~GgufFile() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), size_);
}

std::vector<std::string_view> GgufFile::keys() const {
  std::vector<std::string_view> keys;
  keys.reserve(metadata_.size());
  for (const MetadataEntry& entry : metadata_) keys.push_back(entry.key);
  return keys;
}

bool GgufFile::HasKey(std::string_view key) const { return metadata_index_.contains(key); }

absl::StatusOr<const GgufFile::MetadataEntry*> GgufFile::FindEntry(std::string_view key) const {
  auto it = metadata_index_.find(key);
  if (it == metadata_index_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": metadata key '", ToAbsl(key), "' is not present"));
  }
  return &metadata_[it->second];
}

absl::Status GgufFile::TypeMismatch(const MetadataEntry& entry, std::string_view wanted) const {
  std::string held = GgufValueTypeName(entry.type);
  if (entry.type == GgufValueType::kArray) {
    held = absl::StrCat("array of ",
                        GgufValueTypeName(static_cast<GgufValueType>(Load<uint32_t>(entry.encoded.data()))));
  }
  return absl::InvalidArgumentError(absl::StrCat(path_, ": metadata key '", ToAbsl(entry.key), "' holds ",
                                                 held, ", not ", ToAbsl(wanted)));
}

absl::StatusOr<GgufValueType> GgufFile::KeyType(std::string_view key) const {
  LNPU_ASSIGN_OR_RETURN(const MetadataEntry* entry, FindEntry(key));
  return entry->type;
}

absl::StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  LNPU_ASSIGN_OR_RETURN(const MetadataEntry* entry, FindEntry(key));
  if (entry->type != GgufValueType::kString) return TypeMismatch(*entry, "a string");
  const uint8_t* cursor = entry->encoded.data();
  return std::string(LoadString(cursor));
}

absl::StatusOr<uint64_t> GgufFile::GetUint(std::string_view key) const {
  LNPU_ASSIGN_OR_RETURN(const MetadataEntry* entry, FindEntry(key));
  if (!IsIntegerType(entry->type)) return TypeMismatch(*entry, "an integer");
  const IntegerValue value = DecodeInteger(entry->type, entry->encoded.data());
  if (value.negative) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": metadata key '", ToAbsl(key), "' holds ",
                                              Describe(value), ", expected a non-negative value"));
  }
  return value.magnitude;
}

absl::StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  LNPU_ASSIGN_OR_RETURN(const MetadataEntry* entry, FindEntry(key));
  if (!IsIntegerType(entry->type)) return TypeMismatch(*entry, "an integer");
  const IntegerValue value = DecodeInteger(entry->type, entry->encoded.data());
  std::optional<int64_t> result = IntegerAs<int64_t>(value);
  if (!result) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": metadata key '", ToAbsl(key), "' holds ",
                                              Describe(value), ", which does not fit int64"));
  }
  return *result;
}

absl::StatusOr<float> GgufFile::GetFloat(std::string_view key) const {
  LNPU_ASSIGN_OR_RETURN(const MetadataEntry* entry, FindEntry(key));
  switch (entry->type) {
    case GgufValueType::kFloat32:
      return Load<float>(entry->encoded.data());
    case GgufValueType::kFloat64:
      return static_cast<float>(Load<double>(entry->encoded.data()));
    default:
      return TypeMismatch(*entry, "a float32 or float64");
  }
}

absl::StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  LNPU_ASSIGN_OR_RETURN(const MetadataEntry* entry, FindEntry(key));
  if (entry->type != GgufValueType::kBool) return TypeMismatch(*entry, "a bool");
  return entry->encoded[0] != 0;
}

absl::StatusOr<GgufFile::ArrayView> GgufFile::FindArray(std::string_view key,
                                                        std::string_view wanted) const {
  LNPU_ASSIGN_OR_RETURN(const MetadataEntry* entry, FindEntry(key));
  if (entry->type != GgufValueType::kArray) return TypeMismatch(*entry, wanted);
  const uint8_t* encoded = entry->encoded.data();
  return ArrayView{static_cast<GgufValueType>(Load<uint32_t>(encoded)), Load<uint64_t>(encoded + 4),
                   entry->encoded.subspan(12)};
}

absl::StatusOr<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  constexpr std::string_view kWanted = "an array of string";
  LNPU_ASSIGN_OR_RETURN(ArrayView array, FindArray(key, kWanted));
  if (array.element_type != GgufValueType::kString) return TypeMismatch(**FindEntry(key), kWanted);
  std::vector<std::string> values;
  values.reserve(array.count);
  const uint8_t* cursor = array.elements.data();
  for (uint64_t i = 0; i < array.count; ++i) values.emplace_back(LoadString(cursor));
  return values;
}

absl::StatusOr<std::vector<float>> GgufFile::GetFloatArray(std::string_view key) const {
  constexpr std::string_view kWanted = "an array of float32 or float64";
  LNPU_ASSIGN_OR_RETURN(ArrayView array, FindArray(key, kWanted));
  std::vector<float> values(array.count);
  const uint8_t* elements = array.elements.data();
  switch (array.element_type) {
    case GgufValueType::kFloat32:
      std::memcpy(values.data(), elements, values.size() * sizeof(float));
      return values;
    case GgufValueType::kFloat64:
      for (uint64_t i = 0; i < array.count; ++i) {
        values[i] = static_cast<float>(Load<double>(elements + 8 * i));
      }
      return values;
    default: return TypeMismatch(**FindEntry(key), kWanted);
  }
}

absl::StatusOr<std::vector<int32_t>> GgufFile::GetInt32Array(std::string_view key) const {
  constexpr std::string_view kWanted = "an array of integers";
  LNPU_ASSIGN_OR_RETURN(ArrayView array, FindArray(key, kWanted));
  if (!IsIntegerType(array.element_type)) return TypeMismatch(**FindEntry(key), kWanted);
  const uint32_t stride = GgufScalarSize(array.element_type);
  std::vector<int32_t> values(array.count);
  for (uint64_t i = 0; i < array.count; ++i) {
    const IntegerValue value =
        DecodeInteger(array.element_type, array.elements.data() + stride * i);
    std::optional<int32_t> narrowed = IntegerAs<int32_t>(value);
    if (!narrowed) {
      return absl::OutOfRangeError(absl::StrCat(path_, ": metadata key '", ToAbsl(key), "' element ", i,
                                                " is ", Describe(value), ", which does not fit int32"));
    }
    values[i] = *narrowed;
  }
  return values;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

absl::Span<const uint8_t> GgufFile::TensorData(const TensorInfo& tensor) const {
  const uint64_t data_size = size_ - std::min<uint64_t>(data_offset_, size_);
  if (tensor.offset > data_size || tensor.bytes > data_size - tensor.offset) return {};
  return absl::MakeConstSpan(map_ + data_offset_ + tensor.offset, tensor.bytes);
}

absl::StatusOr<std::vector<float>> GgufFile::TensorToF32(const TensorInfo& tensor) const {
  if (!CanDequantize(tensor.type)) {
    return absl::UnimplementedError(absl::StrCat(
        path_, ": tensor '", tensor.name, "' has type ", ToAbsl(GgmlTypeName(tensor.type)),
        "; conversion to f32 is implemented for ", ToAbsl(DequantizableTypeNames()), " only"));
  }
  const absl::Span<const uint8_t> data = TensorData(tensor);
  const uint64_t elements = tensor.elements();
  // The block check comes before the allocation: `tensor` may not be ours.
  const auto block = GgmlTypeBlock(tensor.type);
  if (block.ok() && elements % block->first == 0 &&
      data.size() == elements / block->first * block->second) {
    std::vector<float> values(elements);
    if (DequantizeRow(tensor.type, data, absl::MakeSpan(values)).ok()) return values;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path_, ": tensor '", tensor.name, "' does not describe data of this file (",
      tensor.bytes, " bytes at data offset ", tensor.offset, " for ", elements, " elements of ",
      ToAbsl(GgmlTypeName(tensor.type)), "): pass a TensorInfo from tensors()"));
}

}  // namespace lnpu::gguf
