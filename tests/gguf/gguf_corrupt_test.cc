// GgufFile::Open on damaged files: every malformed field is rejected with a
// message naming the file and the problem, without crashing and without large
// allocations.

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler_artifacts/gguf/gguf_file.h"
#include "compiler_artifacts/gguf/gguf_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/allocation_tracker.h"
#include "tests/gguf/gguf_test_util.h"

namespace lnpu::gguf {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempPath;

constexpr size_t kMaxAllocationForSmallFile = 64 * 1024;

// Layout of the first fields (fixed by the format).
constexpr size_t kVersionOffset = 4;
constexpr size_t kTensorCountOffset = 8;
constexpr size_t kMetadataCountOffset = 16;
constexpr size_t kFirstKeyOffset = 24;

class CorruptGgufTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter writer;
    writer.SetString("general.architecture", "test");
    writer.SetUint32("key.a", 7);
    writer.SetUint32("key.b", 8);
    writer.SetBool("flag", true);
    writer.SetStringArray("strings", {"x", "yz"});
    writer.Set("nested", *GgufValue::Array(GgufValueType::kArray,
                                           {GgufValue::Float32Array({1.0f, 2.0f})}));
    // 32-byte tensors: no padding after the last one, so every cut is damage.
    ASSERT_TRUE(writer.AddTensor("tensor.aaaaa", GgmlType::kF32, {4, 2}, std::vector<uint8_t>(32, 1)).ok());
    ASSERT_TRUE(writer.AddTensor("tensor.bbbbb", GgmlType::kF32, {8}, std::vector<uint8_t>(32, 2)).ok());
    absl::StatusOr<std::vector<uint8_t>> bytes = writer.Serialize();
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    good_ = *bytes;
    path_ = TempPath("corrupt.gguf");
  }

  // Offset of the first occurrence of `text` in the good file.
  size_t Find(std::string_view text) const {
    auto it = std::search(good_.begin(), good_.end(), text.begin(), text.end());
    EXPECT_NE(it, good_.end()) << text;
    return static_cast<size_t>(it - good_.begin());
  }
  // Offset just past the name `text` (where its type tag or n_dims follows).
  size_t After(std::string_view text) const { return Find(text) + text.size(); }

  template <typename T>
  std::vector<uint8_t> Patched(size_t offset, T value) const {
    std::vector<uint8_t> bytes = good_;
    std::memcpy(&bytes[offset], &value, sizeof(T));
    return bytes;
  }

  // Opens `bytes` as a file; returns the status, checking that failures name
  // the file and allocate little.
  absl::Status Open(const std::vector<uint8_t>& bytes) {
    testing::WriteBytes(path_, bytes);
    absl::StatusOr<std::unique_ptr<GgufFile>> file = absl::UnknownError("not opened");
    {
      testing::LargestAllocationTracker tracker;
      file = GgufFile::Open(path_);
      EXPECT_LT(tracker.largest(), kMaxAllocationForSmallFile);
    }
    if (!file.ok()) {
      EXPECT_THAT(std::string(file.status().message()), StartsWith(path_ + ": "));
    }
    return file.status();
  }

  void ExpectRejected(const std::vector<uint8_t>& bytes, std::string_view what,
                      absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
    absl::Status status = Open(bytes);
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(std::string(what)));
  }

  std::vector<uint8_t> good_;
  std::string path_;
};

TEST_F(CorruptGgufTest, GoodFileOpens) {
  EXPECT_TRUE(Open(good_).ok());
  EXPECT_TRUE(Open(Patched<uint32_t>(kVersionOffset, 2)).ok()) << "GGUF v2 has the same layout";
}

TEST_F(CorruptGgufTest, BadMagic) {
  std::vector<uint8_t> bytes = good_;
  bytes[3] = 'X';
  ExpectRejected(bytes, "not a GGUF file: it starts with 'GGUX' instead of 'GGUF'");
  ExpectRejected({}, "the file is empty");
}

TEST_F(CorruptGgufTest, BadVersion) {
  ExpectRejected(Patched<uint32_t>(kVersionOffset, 1), "GGUF version 1 is not supported",
                 absl::StatusCode::kUnimplemented);
  ExpectRejected(Patched<uint32_t>(kVersionOffset, 4), "GGUF version 4 at byte 4 is not supported",
                 absl::StatusCode::kUnimplemented);
  ExpectRejected(Patched<uint32_t>(kVersionOffset, 0x03000000), "big-endian GGUF",
                 absl::StatusCode::kUnimplemented);
}

TEST_F(CorruptGgufTest, HugeCounts) {
  ExpectRejected(Patched<uint64_t>(kTensorCountOffset, uint64_t{1} << 60),
                 "tensor count 1152921504606846976 (read at byte 8) cannot fit");
  ExpectRejected(Patched<uint64_t>(kMetadataCountOffset, ~uint64_t{0}),
                 "metadata count 18446744073709551615 (read at byte 16) cannot fit");
  ExpectRejected(Patched<uint64_t>(kFirstKeyOffset, uint64_t{1} << 62),
                 "metadata key #0 at byte 24 claims 4611686018427387904 bytes");
  ExpectRejected(Patched<uint64_t>(After("strings") + 4 + 4, uint64_t{1} << 61),
                 "array of string with element count 2305843009213693952");
  ExpectRejected(Patched<uint64_t>(After("strings") + 4 + 12, uint64_t{1} << 40),
                 "value of metadata key 'strings'[0] at byte");
}

TEST_F(CorruptGgufTest, WrongCounts) {
  // Too few metadata entries: the rest is read as tensor infos.
  EXPECT_FALSE(Open(Patched<uint64_t>(kMetadataCountOffset, 5)).ok());
  // Too many tensors: the third tensor info runs into the padding and data.
  EXPECT_FALSE(Open(Patched<uint64_t>(kTensorCountOffset, 3)).ok());
}

TEST_F(CorruptGgufTest, BadValueTypes) {
  ExpectRejected(Patched<uint32_t>(After("key.a"), 13),
                 "metadata key 'key.a' has value type 13 at byte");
  ExpectRejected(Patched<uint32_t>(After("strings") + 4, 77),
                 "is an array of value type 77, which is not a GGUF value type");
  ExpectRejected(Patched<uint8_t>(After("flag") + 4, 2), "is a bool holding 2");
}

TEST_F(CorruptGgufTest, DuplicateNames) {
  std::vector<uint8_t> keys = good_;
  keys[Find("key.b") + 4] = 'a';
  ExpectRejected(keys, "metadata key 'key.a' appears twice");
  std::vector<uint8_t> tensors = good_;
  std::memcpy(&tensors[Find("tensor.bbbbb")], "tensor.aaaaa", 12);
  ExpectRejected(tensors, "tensor 'tensor.aaaaa' appears twice (second as tensor #1)");
}

TEST_F(CorruptGgufTest, BadTensorInfo) {
  const size_t n_dims = After("tensor.aaaaa");
  const size_t dims = n_dims + 4;
  const size_t type = dims + 2 * 8;
  const size_t offset = type + 4;
  ExpectRejected(Patched<uint32_t>(n_dims, 0), "tensor 'tensor.aaaaa' has 0 dimensions");
  ExpectRejected(Patched<uint32_t>(n_dims, 5), "has 5 dimensions");
  ExpectRejected(Patched<uint64_t>(dims + 8, 0), "has dims[1] = 0");
  std::vector<uint8_t> overflow = Patched<uint64_t>(dims, uint64_t{1} << 40);
  std::memcpy(&overflow[dims + 8], &overflow[dims], 8);
  ExpectRejected(overflow, "has dims [1099511627776, 1099511627776] whose element count overflows");
  ExpectRejected(Patched<uint32_t>(type, 31), "unknown ggml tensor type 31");
  ExpectRejected(Patched<uint32_t>(type, static_cast<uint32_t>(GgmlType::kQ8_0)),
                 "of type Q8_0 has rows of 4 elements (dims[0]), not a multiple");
  ExpectRejected(Patched<uint64_t>(offset, 4),
                 "has data offset 4 (byte " + std::to_string(offset) +
                     "), which is not a multiple of the alignment 32");
  ExpectRejected(Patched<uint64_t>(offset, 1 << 20),
                 "tensor 'tensor.aaaaa' data ends at byte");
  ExpectRejected(Patched<uint64_t>(offset, ~uint64_t{31}), "beyond the file size");
  ExpectRejected(Patched<uint64_t>(After("tensor.bbbbb") + 4 + 8 + 4, 0),
                 "tensors 'tensor.aaaaa' (data bytes 0..32) and 'tensor.bbbbb' (from 0) overlap");
}

TEST_F(CorruptGgufTest, BadAlignment) {
  GgufWriter writer;
  writer.SetUint32("general.alignment", 64);
  ASSERT_TRUE(writer.AddTensor("t", GgmlType::kF32, {16}, std::vector<uint8_t>(64)).ok());
  good_ = *writer.Serialize();
  ExpectRejected(Patched<uint32_t>(After("general.alignment") + 4, 48),
                 "general.alignment is 48, not a power of two");
  ExpectRejected(Patched<uint32_t>(After("general.alignment") + 4, 0), "is 0, not a power of two");
  ExpectRejected(Patched<uint32_t>(After("general.alignment"), static_cast<uint32_t>(GgufValueType::kFloat32)),
                 "'general.alignment' holds float32, not an integer");
}

TEST_F(CorruptGgufTest, DeeplyNestedArrays) {
  auto nested = [](int levels) {
    GgufValue value = GgufValue::Float32Array({1.0f});
    for (int i = 1; i < levels; ++i) value = *GgufValue::Array(GgufValueType::kArray, {value});
    GgufWriter writer;
    writer.Set("deep", value);
    return *writer.Serialize();
  };
  EXPECT_TRUE(Open(nested(8)).ok());
  ExpectRejected(nested(9), "nests arrays more than 8 deep");
}

TEST_F(CorruptGgufTest, TruncatedAtEveryByte) {
  for (size_t size = 0; size < good_.size(); ++size) {
    absl::Status status = Open(std::vector<uint8_t>(good_.begin(), good_.begin() + size));
    ASSERT_FALSE(status.ok()) << "cut at " << size;
    ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    ASSERT_THAT(std::string(status.message()), AnyOf(HasSubstr("truncated"), HasSubstr("the file is empty")))
        << status;
  }
}

TEST_F(CorruptGgufTest, TruncatedMessagesSayWhere) {
  const size_t data_end = good_.size();
  ExpectRejected(std::vector<uint8_t>(good_.begin(), good_.begin() + 6),
                 "GGUF version at byte 4 needs 4 bytes but the file ends at byte 6: the file is "
                 "truncated");
  ExpectRejected(std::vector<uint8_t>(good_.begin(), good_.begin() + data_end - 1),
                 "tensor 'tensor.bbbbb' data ends at byte " + std::to_string(data_end) +
                     " beyond the file size " + std::to_string(data_end - 1) +
                     ": the file is truncated");
}

TEST_F(CorruptGgufTest, RandomDamageNeverCrashes) {
  // Damage only the header, metadata and tensor infos (the data section is
  // opaque): every result is either a valid file or a named error.
  const size_t header_size = good_.size() - 64;
  std::mt19937 random(1234);
  int rejected = 0;
  for (int i = 0; i < 400; ++i) {
    std::vector<uint8_t> bytes = good_;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int f = 0; f < flips; ++f) {
      bytes[random() % header_size] = static_cast<uint8_t>(random());
    }
    absl::Status status = Open(bytes);
    if (!status.ok()) {
      ++rejected;
      ASSERT_THAT(std::string(status.message()), AllOf(StartsWith(path_), HasSubstr(": "))) << status;
    }
  }
  EXPECT_GT(rejected, 200);
}

}  // namespace
}  // namespace lnpu::gguf
