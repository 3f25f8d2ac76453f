// GgufWriter -> GgufFile round trips of every value type and tensor type.

#include "compiler_artifacts/gguf/gguf_writer.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "base/half.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/gguf_test_util.h"

namespace lnpu::gguf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempPath;

template <typename T>
std::vector<uint8_t> ToBytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::unique_ptr<GgufFile> WriteAndOpen(const GgufWriter& writer, const std::string& path) {
  absl::Status written = writer.Write(path);
  EXPECT_TRUE(written.ok()) << written;
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? std::move(*file) : nullptr;
}

TEST(GgufWriterTest, EveryScalarValueType) {
  GgufWriter writer;
  writer.Set("u8", GgufValue::Uint8(200));
  writer.Set("i8", GgufValue::Int8(-100));
  writer.Set("u16", GgufValue::Uint16(60000));
  writer.Set("i16", GgufValue::Int16(-30000));
  writer.SetUint32("u32", 4000000000u);
  writer.SetInt32("i32", -2000000000);
  writer.Set("u64", GgufValue::Uint64(uint64_t{1} << 63));
  writer.Set("i64", GgufValue::Int64(std::numeric_limits<int64_t>::min()));
  writer.SetFloat32("f32", 3.25f);
  writer.Set("f64", GgufValue::Float64(-0.125));
  writer.SetBool("yes", true);
  writer.SetBool("no", false);
  writer.SetString("text", std::string("caf\xC3\xA9 \0 end", 11));
  writer.SetString("empty", "");
  std::unique_ptr<GgufFile> file = WriteAndOpen(writer, TempPath("scalars.gguf"));
  ASSERT_NE(file, nullptr);

  EXPECT_EQ(file->version(), 3u);
  EXPECT_THAT(file->keys(), ElementsAre("u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64",
                                        "f32", "f64", "yes", "no", "text", "empty"));
  EXPECT_EQ(*file->KeyType("u8"), GgufValueType::kUint8);
  EXPECT_EQ(*file->KeyType("i64"), GgufValueType::kInt64);
  EXPECT_EQ(*file->KeyType("f64"), GgufValueType::kFloat64);
  EXPECT_EQ(*file->GetUint("u8"), 200u);
  EXPECT_EQ(*file->GetInt("i8"), -100);
  EXPECT_EQ(*file->GetUint("u16"), 60000u);
  EXPECT_EQ(*file->GetInt("i16"), -30000);
  EXPECT_EQ(*file->GetUint("u32"), 4000000000u);
  EXPECT_EQ(*file->GetInt("u32"), 4000000000);
  EXPECT_EQ(*file->GetInt("i32"), -2000000000);
  EXPECT_EQ(*file->GetUint("u64"), uint64_t{1} << 63);
  EXPECT_EQ(*file->GetInt("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*file->GetFloat("f32"), 3.25f);
  EXPECT_EQ(*file->GetFloat("f64"), -0.125f);
  EXPECT_TRUE(*file->GetBool("yes"));
  EXPECT_FALSE(*file->GetBool("no"));
  EXPECT_EQ(*file->GetString("text"), std::string("caf\xC3\xA9 \0 end", 11));
  EXPECT_EQ(*file->GetString("empty"), "");

  // Integers that do not fit the request.
  absl::StatusOr<uint64_t> negative = file->GetUint("i8");
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(negative.status().message()), HasSubstr("holds -100"));
  absl::StatusOr<int64_t> too_big = file->GetInt("u64");
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("9223372036854775808"));
  EXPECT_EQ(file->GetUint("f32").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(file->GetFloat("u8").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(file->GetStringArray("text").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GgufWriterTest, EveryArrayType) {
  GgufWriter writer;
  writer.SetStringArray("strings", {"a", "", "\xE2\x96\x81word"});
  writer.SetFloat32Array("f32s", {1.5f, -2.0f, std::numeric_limits<float>::infinity()});
  writer.SetInt32Array("i32s", {std::numeric_limits<int32_t>::min(), 0, 7});
  writer.Set("u8s", *GgufValue::Array(GgufValueType::kUint8,
                                      {GgufValue::Uint8(0), GgufValue::Uint8(255)}));
  writer.Set("i16s", *GgufValue::Array(GgufValueType::kInt16,
                                       {GgufValue::Int16(-5), GgufValue::Int16(5)}));
  writer.Set("u64s", *GgufValue::Array(GgufValueType::kUint64,
                                       {GgufValue::Uint64(1), GgufValue::Uint64(1ull << 40)}));
  writer.Set("i64s", *GgufValue::Array(GgufValueType::kInt64, {GgufValue::Int64(-3)}));
  writer.Set("f64s", *GgufValue::Array(GgufValueType::kFloat64,
                                       {GgufValue::Float64(0.5), GgufValue::Float64(-1e300)}));
  writer.Set("bools", *GgufValue::Array(GgufValueType::kBool,
                                        {GgufValue::Bool(true), GgufValue::Bool(false)}));
  writer.Set("empty", *GgufValue::Array(GgufValueType::kUint32, {}));
  GgufValue inner_strings = GgufValue::StringArray({"x", "yz"});
  GgufValue inner_floats = GgufValue::Float32Array({1.0f});
  writer.Set("nested",
             *GgufValue::Array(GgufValueType::kArray, {inner_strings, inner_floats}));
  writer.SetString("after", "still readable");
  std::unique_ptr<GgufFile> file = WriteAndOpen(writer, TempPath("arrays.gguf"));
  ASSERT_NE(file, nullptr);

  EXPECT_THAT(*file->GetStringArray("strings"), ElementsAre("a", "", "\xE2\x96\x81word"));
  EXPECT_THAT(*file->GetFloatArray("f32s"),
              ElementsAre(1.5f, -2.0f, std::numeric_limits<float>::infinity()));
  EXPECT_THAT(*file->GetInt32Array("i32s"), ElementsAre(std::numeric_limits<int32_t>::min(), 0, 7));
  EXPECT_THAT(*file->GetInt32Array("u8s"), ElementsAre(0, 255));
  EXPECT_THAT(*file->GetInt32Array("i16s"), ElementsAre(-5, 5));
  EXPECT_THAT(*file->GetInt32Array("i64s"), ElementsAre(-3));
  EXPECT_THAT(*file->GetFloatArray("f64s"), ElementsAre(0.5f, -std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(file->GetInt32Array("empty")->empty());
  EXPECT_EQ(*file->KeyType("nested"), GgufValueType::kArray);
  EXPECT_EQ(*file->GetString("after"), "still readable");

  absl::StatusOr<std::vector<int32_t>> too_big = file->GetInt32Array("u64s");
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("element 1 is 1099511627776"));
  absl::StatusOr<std::vector<std::string>> nested = file->GetStringArray("nested");
  EXPECT_EQ(nested.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(nested.status().message()), HasSubstr("holds array of array"));
  EXPECT_EQ(file->GetFloatArray("bools").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(file->GetInt32Array("strings").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(file->GetStringArray("i32s").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GgufWriterTest, ArrayRejectsMixedElementTypes) {
  absl::StatusOr<GgufValue> mixed =
      GgufValue::Array(GgufValueType::kUint8, {GgufValue::Uint8(1), GgufValue::Int8(1)});
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mixed.status().message()), HasSubstr("element 1 of type int8"));
  EXPECT_FALSE(GgufValue::Array(static_cast<GgufValueType>(13), {}).ok());
}

TEST(GgufWriterTest, SettingAKeyAgainReplacesItInPlace) {
  GgufWriter writer;
  writer.SetUint32("first", 1);
  writer.SetString("second", "two");
  writer.SetString("first", "replaced");
  std::unique_ptr<GgufFile> file = WriteAndOpen(writer, TempPath("replace.gguf"));
  ASSERT_NE(file, nullptr);
  EXPECT_THAT(file->keys(), ElementsAre("first", "second"));
  EXPECT_EQ(*file->GetString("first"), "replaced");
}

TEST(GgufWriterTest, TensorTypesRoundTrip) {
  const std::vector<float> f32 = {1.0f, -2.5f, 3.0f, 0.0f, 1e-3f, -7.0f};
  std::vector<uint16_t> f16, bf16;
  for (float value : f32) {
    f16.push_back(FloatToFloat16(value));
    bf16.push_back(FloatToBFloat16(value));
  }
  std::vector<uint8_t> q8_0(2 * 34);
  for (size_t i = 0; i < q8_0.size(); ++i) q8_0[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> q4_k(144, 0x5a);
  const std::vector<int32_t> i32 = {1, -2, 3};

  GgufWriter writer;
  writer.SetString("general.architecture", "test");
  ASSERT_TRUE(writer.AddTensor("f32", GgmlType::kF32, {3, 2}, ToBytes(f32)).ok());
  ASSERT_TRUE(writer.AddTensor("f16", GgmlType::kF16, {6}, ToBytes(f16)).ok());
  ASSERT_TRUE(writer.AddTensor("bf16", GgmlType::kBF16, {2, 1, 3}, ToBytes(bf16)).ok());
  ASSERT_TRUE(writer.AddTensor("q8_0", GgmlType::kQ8_0, {32, 2}, q8_0).ok());
  ASSERT_TRUE(writer.AddTensor("q4_k", GgmlType::kQ4_K, {256}, q4_k).ok());
  ASSERT_TRUE(writer.AddTensor("i32", GgmlType::kI32, {1, 1, 1, 3}, ToBytes(i32)).ok());
  std::unique_ptr<GgufFile> file = WriteAndOpen(writer, TempPath("tensors.gguf"));
  ASSERT_NE(file, nullptr);

  ASSERT_EQ(file->tensors().size(), 6u);
  EXPECT_EQ(file->tensors()[0].name, "f32");
  EXPECT_EQ(file->tensors()[5].name, "i32");
  for (const TensorInfo& tensor : file->tensors()) {
    EXPECT_EQ(tensor.offset % 32, 0u) << tensor.name;
  }
  const TensorInfo* tensor = file->FindTensor("f32");
  ASSERT_NE(tensor, nullptr);
  EXPECT_THAT(tensor->dims, ElementsAre(3u, 2u));
  EXPECT_EQ(*file->TensorToF32(*tensor), f32);
  EXPECT_EQ(*file->TensorToF32(*file->FindTensor("f16")),
            std::vector<float>({1.0f, -2.5f, 3.0f, 0.0f, Float16ToFloat(FloatToFloat16(1e-3f)), -7.0f}));
  EXPECT_EQ(*file->TensorToF32(*file->FindTensor("bf16")),
            std::vector<float>({1.0f, -2.5f, 3.0f, 0.0f, BFloat16ToFloat(FloatToBFloat16(1e-3f)), -7.0f}));
  EXPECT_THAT(file->FindTensor("bf16")->dims, ElementsAre(2u, 1u, 3u));

  const TensorInfo* q8 = file->FindTensor("q8_0");
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ(q8->type, GgmlType::kQ8_0);
  EXPECT_EQ(q8->bytes, 68u);
  absl::Span<const uint8_t> q8_data = file->TensorData(*q8);
  EXPECT_EQ(std::vector<uint8_t>(q8_data.begin(), q8_data.end()), q8_0);
  absl::StatusOr<std::vector<float>> q8_f32 = file->TensorToF32(*q8);
  ASSERT_TRUE(q8_f32.ok()) << q8_f32.status();
  std::vector<float> q8_expected(64);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, q8_0, absl::MakeSpan(q8_expected)).ok());
  EXPECT_EQ(*q8_f32, q8_expected);
  EXPECT_EQ(file->FindTensor("q4_k")->bytes, 144u);
  absl::Span<const uint8_t> i32_data = file->TensorData(*file->FindTensor("i32"));
  EXPECT_EQ(std::vector<uint8_t>(i32_data.begin(), i32_data.end()), ToBytes(i32));
  absl::StatusOr<std::vector<float>> unconverted = file->TensorToF32(*file->FindTensor("i32"));
  EXPECT_EQ(unconverted.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(unconverted.status().message()), HasSubstr("I32"));

  // A TensorInfo that does not describe this file's data.
  TensorInfo foreign = *tensor;
  foreign.offset = uint64_t{1} << 40;
  EXPECT_TRUE(file->TensorData(foreign).empty());
  EXPECT_EQ(file->TensorToF32(foreign).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GgufWriterTest, CustomAlignment) {
  GgufWriter writer;
  writer.SetUint32("general.alignment", 64);
  ASSERT_TRUE(writer.AddTensor("a", GgmlType::kF32, {3}, std::vector<uint8_t>(12, 1)).ok());
  ASSERT_TRUE(writer.AddTensor("b", GgmlType::kF32, {5}, std::vector<uint8_t>(20, 2)).ok());
  std::unique_ptr<GgufFile> file = WriteAndOpen(writer, TempPath("aligned.gguf"));
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->FindTensor("a")->offset, 0u);
  EXPECT_EQ(file->FindTensor("b")->offset, 64u);
  EXPECT_EQ(file->TensorData(*file->FindTensor("b"))[0], 2);

  GgufWriter bad;
  bad.SetUint32("general.alignment", 48);
  absl::StatusOr<std::vector<uint8_t>> bytes = bad.Serialize();
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bytes.status().message()), HasSubstr("power of two"));
  bad.SetString("general.alignment", "32");
  EXPECT_FALSE(bad.Serialize().ok());
}

TEST(GgufWriterTest, AddTensorValidates) {
  GgufWriter writer;
  ASSERT_TRUE(writer.AddTensor("t", GgmlType::kF32, {2}, std::vector<uint8_t>(8)).ok());
  struct Case {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    size_t bytes;
    std::string message;
  };
  const Case cases[] = {
      {"t", GgmlType::kF32, {2}, 8, "already added"},
      {"", GgmlType::kF32, {2}, 8, "name is empty"},
      {"no_dims", GgmlType::kF32, {}, 4, "0 dimensions"},
      {"five_dims", GgmlType::kF32, {1, 1, 1, 1, 1}, 4, "5 dimensions"},
      {"zero_dim", GgmlType::kF32, {4, 0}, 0, "must be positive"},
      {"overflow", GgmlType::kF32, {uint64_t{1} << 32, uint64_t{1} << 32}, 0, "fit int64"},
      {"unknown", static_cast<GgmlType>(99), {4}, 16, "unknown ggml tensor type 99"},
      {"block", GgmlType::kQ8_0, {16}, 17, "not a multiple of the type's block size 32"},
      {"size", GgmlType::kF16, {4}, 4, "needs 4 blocks of 2 bytes but got 4 bytes"},
  };
  for (const Case& c : cases) {
    absl::Status status = writer.AddTensor(c.name, c.type, c.dims, std::vector<uint8_t>(c.bytes));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message)) << c.name;
  }
}

// A streamed tensor gives the same file as the same bytes added whole; its
// source runs once per Serialize / Write and may hand over any pieces.
TEST(GgufWriterTest, StreamedTensorMatchesAddedTensor) {
  std::vector<uint8_t> data(3 * 34);  // 3 Q8_0 blocks
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  GgufWriter whole;
  whole.SetUint32("x", 1);
  ASSERT_TRUE(whole.AddTensor("a", GgmlType::kF32, {3}, std::vector<uint8_t>(12, 1)).ok());
  ASSERT_TRUE(whole.AddTensor("q", GgmlType::kQ8_0, {32, 3}, data).ok());
  GgufWriter streamed;
  streamed.SetUint32("x", 1);
  ASSERT_TRUE(streamed.AddTensor("a", GgmlType::kF32, {3}, std::vector<uint8_t>(12, 1)).ok());
  int calls = 0;
  ASSERT_TRUE(streamed
                  .AddStreamedTensor("q", GgmlType::kQ8_0, {32, 3},
                                     [&](GgufWriter::DataSink sink) {
                                       ++calls;
                                       const absl::Span<const uint8_t> all(data);
                                       if (absl::Status s = sink(all.first(5)); !s.ok()) return s;
                                       if (absl::Status s = sink({}); !s.ok()) return s;
                                       return sink(all.subspan(5));
                                     })
                  .ok());
  EXPECT_EQ(*streamed.Serialize(), *whole.Serialize());
  EXPECT_EQ(calls, 1);
  const std::string path = TempPath("streamed.gguf");
  ASSERT_TRUE(streamed.Write(path).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(testing::ReadBytes(path), *whole.Serialize());
}

TEST(GgufWriterTest, StreamedTensorOfTheWrongSizeOrFailingIsAnError) {
  for (const size_t produced : {size_t{7}, size_t{9}}) {
    GgufWriter writer;
    ASSERT_TRUE(writer
                    .AddStreamedTensor("t", GgmlType::kF32, {2},
                                       [produced](GgufWriter::DataSink sink) {
                                         return sink(std::vector<uint8_t>(produced));
                                       })
                    .ok());
    absl::StatusOr<std::vector<uint8_t>> bytes = writer.Serialize();
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument) << produced;
    EXPECT_THAT(std::string(bytes.status().message()),
                HasSubstr(absl::StrCat("'t' produced ", produced, " bytes; the tensor has 8")));
    const std::string path = TempPath("wrong_size.gguf");
    EXPECT_FALSE(writer.Write(path).ok());
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  GgufWriter failing;
  ASSERT_TRUE(failing
                  .AddStreamedTensor("t", GgmlType::kF32, {2},
                                     [](GgufWriter::DataSink) {
                                       return absl::DataLossError("generator broke");
                                     })
                  .ok());
  EXPECT_EQ(failing.Serialize().status(), absl::DataLossError("generator broke"));
  // The same checks as AddTensor, and a source is required.
  GgufWriter checks;
  EXPECT_THAT(std::string(checks
                              .AddStreamedTensor("b", GgmlType::kQ8_0, {16},
                                                 [](GgufWriter::DataSink) {
                                                   return absl::OkStatus();
                                                 })
                              .message()),
              HasSubstr("not a multiple of the type's block size 32"));
  EXPECT_THAT(std::string(checks.AddStreamedTensor("n", GgmlType::kF32, {2}, nullptr).message()),
              HasSubstr("'n' has no data source"));
}

TEST(GgufWriterTest, WriteIsAtomicAndReportsErrors) {
  GgufWriter writer;
  writer.SetUint32("x", 1);
  const std::string path = TempPath("atomic.gguf");
  ASSERT_TRUE(writer.Write(path).ok());
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(testing::ReadBytes(path), *writer.Serialize());

  absl::Status missing_dir = writer.Write("/nonexistent/dir/model.gguf");
  EXPECT_FALSE(missing_dir.ok());
  EXPECT_THAT(std::string(missing_dir.message()), HasSubstr("/nonexistent/dir"));

  GgufWriter empty_key;
  empty_key.SetUint32("", 1);
  absl::Status status = empty_key.Write(TempPath("empty_key.gguf"));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("key is empty"));
  EXPECT_FALSE(std::filesystem::exists(TempPath("empty_key.gguf")));
  EXPECT_FALSE(std::filesystem::exists(TempPath("empty_key.gguf") + ".tmp"));
}

}  // namespace
}  // namespace lnpu::gguf
