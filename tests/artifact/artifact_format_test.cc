// The .lnpu file format: header codec, writer atomicity, and Artifact::Open
// accepting a compiled model and rejecting corrupt or inconsistent files
// with messages that name the problem.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_file.h"
#include "compiler_artifacts/format/artifact_writer.h"
#include "base/crc32.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/artifact/artifact_test_util.h"
#include "tests/test_temp_dir.h"

namespace lnpu::artifact {
namespace {

using ::testing::HasSubstr;
using testing::FileExists;
using testing::ReadFileBytes;
using testing::RewriteModel;
using testing::TempPath;
using testing::WriteFileBytes;

TEST(ArtifactHeaderTest, RoundTrips) {
  ArtifactHeader header;
  header.metadata_size = 1000;
  header.data_offset = DataOffsetFor(1000);
  header.data_size = 12345;
  header.file_size = header.data_offset + header.data_size;
  header.metadata_crc32 = 0xDEADBEEF;
  EXPECT_EQ(header.data_offset, 4096u);
  const auto bytes = EncodeArtifactHeader(header);
  EXPECT_EQ(std::memcmp(bytes.data(), "LNPUART1", 8), 0);
  absl::StatusOr<ArtifactHeader> decoded = DecodeArtifactHeader(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->version_major, kArtifactVersionMajor);
  EXPECT_EQ(decoded->version_minor, kArtifactVersionMinor);
  EXPECT_EQ(decoded->metadata_size, 1000u);
  EXPECT_EQ(decoded->data_offset, 4096u);
  EXPECT_EQ(decoded->data_size, 12345u);
  EXPECT_EQ(decoded->file_size, 4096u + 12345u);
  EXPECT_EQ(decoded->metadata_crc32, 0xDEADBEEFu);
}

TEST(ArtifactHeaderTest, AcceptsNewerMinorVersions) {
  ArtifactHeader header;
  header.version_minor = kArtifactVersionMinor + 3;
  header.metadata_size = 8;
  header.data_offset = 4096;
  header.file_size = 4096;
  EXPECT_TRUE(DecodeArtifactHeader(EncodeArtifactHeader(header)).ok());
}

TEST(ArtifactHeaderTest, RejectsInconsistentLayouts) {
  ArtifactHeader header;
  header.metadata_size = 8;
  header.data_offset = 100;  // not page-aligned
  header.file_size = 100;
  EXPECT_THAT(DecodeArtifactHeader(EncodeArtifactHeader(header)).status().message(),
              HasSubstr("data_offset 100 must be a multiple of 4096"));
  header.data_offset = 4096;
  header.file_size = 5000;  // != data_offset + data_size
  EXPECT_THAT(DecodeArtifactHeader(EncodeArtifactHeader(header)).status().message(),
              HasSubstr("file_size 5000 != data_offset 4096 + data_size 0"));
  header.file_size = 4096;
  header.metadata_size = 0;
  EXPECT_THAT(DecodeArtifactHeader(EncodeArtifactHeader(header)).status().message(),
              HasSubstr("sizes out of range"));
}

TEST(ArtifactWriterTest, LeavesNothingBehindWithoutCommit) {
  const std::string path = TempPath("out.lnpu");
  const std::vector<uint8_t> metadata(40, 7);
  {
    auto writer = ArtifactWriter::Create(path, metadata, 100);
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_TRUE(FileExists(path + ".tmp"));
    EXPECT_TRUE((*writer)->WriteData(0, std::vector<uint8_t>(10, 1)).ok());
  }
  EXPECT_FALSE(FileExists(path + ".tmp"));
  EXPECT_FALSE(FileExists(path));
}

TEST(ArtifactWriterTest, RejectsWritesOutsideOrBackwards) {
  const std::string path = TempPath("out.lnpu");
  auto writer = ArtifactWriter::Create(path, std::vector<uint8_t>(8, 1), 100);
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_THAT((*writer)->WriteData(90, std::vector<uint8_t>(11, 1)).message(),
              HasSubstr("outside the data section"));
  ASSERT_TRUE((*writer)->WriteData(50, std::vector<uint8_t>(10, 1)).ok());
  EXPECT_FALSE((*writer)->WriteData(40, std::vector<uint8_t>(1, 1)).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_FALSE(FileExists(path + ".tmp"));
  const std::vector<uint8_t> file = ReadFileBytes(path);
  ASSERT_EQ(file.size(), 4096u + 100u);
  EXPECT_EQ(file[4096 + 49], 0);  // gap zero-filled
  EXPECT_EQ(file[4096 + 50], 1);
  EXPECT_EQ(file[4096 + 99], 0);  // tail zero-filled
  EXPECT_FALSE((*writer)->Commit().ok());
}

// One compiled stories260K artifact shared by the tests below.
class ArtifactOpenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(lnpu::testing::TestTempPath("artifact_open_test.lnpu"));
    compiler::CompileOptions options;
    options.max_prompt_len = 64;
    options.min_response_len = 16;
    options.prefill_chunks = {8, 32};
    options.decode_batches = {2};
    const absl::Status status =
        compiler::CompileGguf(testing::Stories260KPath(), *path_, options);
    ASSERT_TRUE(status.ok()) << status;
    bytes_ = new std::vector<uint8_t>(ReadFileBytes(*path_));
  }
  static void TearDownTestSuite() {
    std::remove(path_->c_str());
    delete path_;
    delete bytes_;
  }

  // Writes `bytes` to a fresh file and returns Open's error message.
  static std::string OpenError(const std::vector<uint8_t>& bytes) {
    const std::string path = TempPath("corrupt.lnpu");
    WriteFileBytes(path, bytes);
    absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(path);
    EXPECT_FALSE(artifact.ok()) << "corrupt file accepted";
    return artifact.ok() ? "" : std::string(artifact.status().message());
  }

  // Rewrites the artifact with `mutate` applied and returns Open's error.
  static std::string MutatedOpenError(
      const std::function<void(fb::ModelT&)>& mutate) {
    const std::string path = TempPath("mutated.lnpu");
    RewriteModel(*path_, path, mutate);
    absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(path);
    EXPECT_FALSE(artifact.ok()) << "inconsistent model accepted";
    return artifact.ok() ? "" : std::string(artifact.status().message());
  }

  static ArtifactHeader Header() {
    return *DecodeArtifactHeader(absl::MakeConstSpan(*bytes_).first(64));
  }

  static std::string* path_;
  static std::vector<uint8_t>* bytes_;
};
std::string* ArtifactOpenTest::path_ = nullptr;
std::vector<uint8_t>* ArtifactOpenTest::bytes_ = nullptr;

TEST_F(ArtifactOpenTest, OpensAndMapsTheDataSection) {
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(*path_);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  const Artifact& a = **artifact;
  EXPECT_EQ(a.path(), *path_);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data().data()) % 4096, 0u);
  EXPECT_EQ(a.data().size(), a.model().buffers()->Get(0)->size());
  EXPECT_EQ(a.header().file_size, bytes_->size());
  EXPECT_EQ(std::memcmp(a.data().data(), bytes_->data() + Header().data_offset,
                        a.data().size()),
            0);
}

TEST_F(ArtifactOpenTest, ReadDataGivesTheDataSectionsBytes) {
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(*path_);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  const Artifact& a = **artifact;
  const uint8_t* expected = bytes_->data() + Header().data_offset;
  std::vector<uint8_t> all(a.data().size());
  ASSERT_TRUE(a.ReadData(0, absl::MakeSpan(all)).ok());
  EXPECT_EQ(std::memcmp(all.data(), expected, all.size()), 0);
  std::vector<uint8_t> part(77);
  ASSERT_TRUE(a.ReadData(1000, absl::MakeSpan(part)).ok());
  EXPECT_EQ(std::memcmp(part.data(), expected + 1000, part.size()), 0);
  EXPECT_TRUE(a.ReadData(a.data().size(), {}).ok());
}

TEST_F(ArtifactOpenTest, ReadDataRefusesRangesPastTheSection) {
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(*path_);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  const uint64_t size = (*artifact)->data().size();
  std::vector<uint8_t> out(11);
  const absl::Status past_end = (*artifact)->ReadData(size - 10, absl::MakeSpan(out));
  EXPECT_EQ(past_end.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(past_end.message(), HasSubstr(absl::StrCat("of a data section of ", size, " bytes")));
  EXPECT_EQ((*artifact)->ReadData(size + 1, {}).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*artifact)->ReadData(UINT64_MAX, absl::MakeSpan(out)).code(),
            absl::StatusCode::kOutOfRange);
}

// A file cut short after Open (copied over on a board, say): reads and the
// checksum pass name it, where touching the mapping would raise SIGBUS.
TEST_F(ArtifactOpenTest, ReadDataNamesAFileTruncatedAfterOpen) {
  const std::string path = TempPath("shrinking.lnpu");
  WriteFileBytes(path, *bytes_);
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(path);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  const ArtifactHeader h = Header();
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(h.data_offset + h.data_size / 2)), 0);
  std::vector<uint8_t> all((*artifact)->data().size());
  const absl::Status read = (*artifact)->ReadData(0, absl::MakeSpan(all));
  EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.message(), HasSubstr(path));
  EXPECT_THAT(read.message(), HasSubstr("truncated or replaced after it was opened"));
  const absl::Status verified = (*artifact)->VerifyData();
  EXPECT_EQ(verified.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(verified.message(), HasSubstr("after it was opened"));
  std::remove(path.c_str());
}

TEST_F(ArtifactOpenTest, RewritingWithoutChangesRoundTrips) {
  const std::string path = TempPath("same.lnpu");
  RewriteModel(*path_, path, [](fb::ModelT&) {});
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(path);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  EXPECT_EQ((*artifact)->model().graphs()->size(), 3u);
  EXPECT_EQ(ReadFileBytes(path).size(), bytes_->size());
}

TEST_F(ArtifactOpenTest, RejectsMissingFiles) {
  absl::StatusOr<std::unique_ptr<Artifact>> artifact =
      Artifact::Open(TempPath("does_not_exist.lnpu"));
  EXPECT_TRUE(absl::IsNotFound(artifact.status())) << artifact.status();
}

TEST_F(ArtifactOpenTest, RejectsTruncationAtEveryRegion) {
  const ArtifactHeader h = Header();
  for (uint64_t cut : {uint64_t{0}, uint64_t{1}, uint64_t{40}, uint64_t{63},
                       uint64_t{64}, uint64_t{65}, h.metadata_size / 2,
                       64 + h.metadata_size, h.data_offset - 1, h.data_offset,
                       h.data_offset + 1, h.data_offset + h.data_size / 2,
                       h.file_size - 1}) {
    SCOPED_TRACE(cut);
    std::vector<uint8_t> bytes(bytes_->begin(), bytes_->begin() + cut);
    EXPECT_THAT(OpenError(bytes), HasSubstr("truncated"));
  }
}

TEST_F(ArtifactOpenTest, RejectsTrailingBytes) {
  std::vector<uint8_t> bytes = *bytes_;
  bytes.push_back(0);
  EXPECT_THAT(OpenError(bytes), HasSubstr("has extra bytes"));
}

TEST_F(ArtifactOpenTest, RejectsBadMagic) {
  std::vector<uint8_t> bytes = *bytes_;
  bytes[3] = 'X';
  EXPECT_THAT(OpenError(bytes), HasSubstr("bad magic"));
}

TEST_F(ArtifactOpenTest, RejectsUnsupportedMajorVersion) {
  std::vector<uint8_t> bytes = *bytes_;
  ArtifactHeader h = Header();
  h.version_major = kArtifactVersionMajor + 1;
  const auto header = EncodeArtifactHeader(h);
  std::copy(header.begin(), header.end(), bytes.begin());
  const std::string path = TempPath("v2.lnpu");
  WriteFileBytes(path, bytes);
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(path);
  EXPECT_TRUE(absl::IsFailedPrecondition(artifact.status()));
  EXPECT_THAT(artifact.status().message(),
              HasSubstr("unsupported artifact format version 2.0: this build "
                        "reads versions 1.x"));
}

TEST_F(ArtifactOpenTest, RejectsHeaderCrcMismatch) {
  std::vector<uint8_t> bytes = *bytes_;
  bytes[40] ^= 0x10;  // data_size
  EXPECT_THAT(OpenError(bytes), HasSubstr("header CRC mismatch"));
}

TEST_F(ArtifactOpenTest, RejectsMetadataCrcMismatch) {
  std::vector<uint8_t> bytes = *bytes_;
  bytes[64 + Header().metadata_size / 2] ^= 0x01;
  EXPECT_THAT(OpenError(bytes), HasSubstr("metadata CRC mismatch"));
}

TEST_F(ArtifactOpenTest, RejectsFlatbufferGarbage) {
  std::vector<uint8_t> bytes = *bytes_;
  ArtifactHeader h = Header();
  for (uint64_t i = 0; i < h.metadata_size; ++i) {
    bytes[64 + i] = static_cast<uint8_t>(i * 131 + 7);
  }
  h.metadata_crc32 = Crc32(absl::MakeConstSpan(bytes).subspan(64, h.metadata_size));
  const auto header = EncodeArtifactHeader(h);
  std::copy(header.begin(), header.end(), bytes.begin());
  EXPECT_THAT(OpenError(bytes), HasSubstr("not a valid Model flatbuffer"));
}

TEST_F(ArtifactOpenTest, RejectsRelocationOutsideItsStream) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                auto& stream = *m.graphs[0]->streams[0];
                stream.relocations[0] = fb::Relocation(
                    static_cast<uint32_t>(stream.commands.size()),
                    stream.relocations[0].buffer());
              }),
              HasSubstr("not an 8-byte aligned field inside the"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                auto& r = m.graphs[0]->streams[0]->relocations[0];
                r = fb::Relocation(r.offset() + 4, r.buffer());
              }),
              HasSubstr("not an 8-byte aligned field"));
}

TEST_F(ArtifactOpenTest, RejectsRelocationToUnknownBuffer) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                auto& r = m.graphs[1]->streams[1]->relocations[0];
                r = fb::Relocation(r.offset(), 99);
              }),
              HasSubstr("names buffer 99, there are 4"));
}

TEST_F(ArtifactOpenTest, RejectsRelocatedAddressOutsideItsBuffer) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.buffers[1]->size = 8;  // activations
              }),
              HasSubstr("of buffer 1, which has 8 bytes"));
}

TEST_F(ArtifactOpenTest, RejectsStreamSizeNotMultipleOf8) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.graphs[0]->streams[0]->commands.resize(
                    m.graphs[0]->streams[0]->commands.size() - 4);
              }),
              HasSubstr("must be a positive multiple of 8"));
}

TEST_F(ArtifactOpenTest, RejectsWeightOutsideTheDataSection) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.weights.back()->offset = m.buffers[0]->size;
              }),
              HasSubstr("is outside the data section"));
}

TEST_F(ArtifactOpenTest, RejectsWeightSizeNotMatchingItsShape) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.weights[0]->shape[0] += 1;
              }),
              HasSubstr("size 34816 != 34884 bytes of its shape and dtype"));
}

// FlatBuffers 2.0's Verifier accepts a [uint64] vector whose elements are
// only 4-aligned; the artifact verifier must reject it before reading it.
TEST_F(ArtifactOpenTest, RejectsMisalignedShapeVector) {
  std::vector<uint8_t> bytes = *bytes_;
  ArtifactHeader h = Header();
  uint8_t* const metadata = bytes.data() + h.metadata_offset;
  const fb::Model* model = fb::GetModel(metadata);
  const fb::Weight* weight = model->weights()->Get(0);
  // Point the weight's shape 4 bytes earlier: the vector's length moves
  // to the 4 bytes before the old one and its data to the old length.
  uint8_t* const field = const_cast<uint8_t*>(
      reinterpret_cast<const flatbuffers::Table*>(weight)->GetAddressOf(
          fb::Weight::VT_SHAPE));
  flatbuffers::uoffset_t to_vector;
  std::memcpy(&to_vector, field, sizeof(to_vector));
  ASSERT_EQ((field + to_vector + 4 - metadata) % 8, 0u);
  to_vector -= 4;
  std::memcpy(field, &to_vector, sizeof(to_vector));
  const flatbuffers::uoffset_t one_dimension = 1;
  std::memcpy(field + to_vector, &one_dimension, sizeof(one_dimension));
  h.metadata_crc32 = Crc32(absl::MakeConstSpan(bytes).subspan(
      h.metadata_offset, h.metadata_size));
  const auto header = EncodeArtifactHeader(h);
  std::copy(header.begin(), header.end(), bytes.begin());
  EXPECT_THAT(OpenError(bytes), HasSubstr("has a misaligned shape vector"));
}

TEST_F(ArtifactOpenTest, RejectsWeightsBufferNotMatchingTheDataSection) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.buffers[0]->size -= 1; }),
              HasSubstr("buffers[0] (Weights) has size"));
}

TEST_F(ArtifactOpenTest, RejectsInconsistentKvCapacity) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.kv_cache->capacity += 1; }),
              HasSubstr("kv_cache.capacity 81 != max_prompt_len 64 + "
                        "min_response_len 16"));
}

// The runtime lays the cache out as 2 x 5 layers x 80 slots = 800 rows of
// one size, which saved sessions record in 32 bits.
TEST_F(ArtifactOpenTest, RejectsKvCacheBufferNotOfEqualRows) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.buffers[m.kv_cache->buffer]->size += 1;
              }),
              HasSubstr("not 800 equal rows (5 layers x K/V x their slots) of at most "
                        "2^32-1 bytes"));
}

TEST_F(ArtifactOpenTest, RejectsPartialWindowRings) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.kv_cache->window = 8; }),
              HasSubstr("kv_cache has window ring fields but window_ring_slots 0"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.kv_cache->window_ring_slots = 8; }),
              HasSubstr("must hold the window 0 (> 0)"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.kv_cache->window_ring_slots = 8;
                m.kv_cache->window = 8;
              }),
              HasSubstr("needs slot_positions, window_mask, window_slot_positions and "
                        "layer_slots"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.graphs[0]->io->window_slots = std::make_unique<fb::Operand>(3, 0);
              }),
              HasSubstr("io.window_slots without a window ring"));
}

TEST_F(ArtifactOpenTest, RejectsKvMaskOutsideAnIoBuffer) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.kv_cache->mask = std::make_unique<fb::Operand>(
                    m.kv_cache->buffer, 0);
              }),
              HasSubstr("kv_cache.mask is in buffer 2 of kind KvCache"));
}

TEST_F(ArtifactOpenTest, RejectsTooSmallIoOperands) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                const uint64_t io_size = m.buffers[3]->size;
                m.graphs[2]->io->logits =
                    std::make_unique<fb::Operand>(3, io_size - 64);
              }),
              HasSubstr("io.logits"));
}

TEST_F(ArtifactOpenTest, RejectsBadGraphSets) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.graphs[0]->kind = fb::GraphKind::Decode;
              }),
              HasSubstr("a Decode graph has tokens 8, must be 1"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.graphs.pop_back(); }),
              HasSubstr("0 Decode graphs, there must be exactly one"));
  // A Verify graph's logits hold every row: a one-row operand is too small.
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.graphs[0]->kind = fb::GraphKind::Verify; }),
              HasSubstr("io.logits"));
  // Verify graphs of distinct row counts are fine, two of one count not.
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.graphs[0]->kind = fb::GraphKind::Verify;
                m.graphs[0]->tokens = 1;
                m.graphs[1]->kind = fb::GraphKind::Verify;
                m.graphs[1]->tokens = 1;
              }),
              HasSubstr("another Verify graph also has 1 tokens"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.graphs[1]->tokens = m.graphs[0]->tokens;
              }),
              HasSubstr("another Prefill graph also has 8 tokens"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.graphs[1]->tokens = 65; }),
              HasSubstr("65 tokens exceed max_prompt_len 64"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.graphs[0]->streams[0]->engine = 7;
              }),
              HasSubstr("engine 7 is unknown"));
}

TEST_F(ArtifactOpenTest, RejectsBadDecodeBatches) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                auto& r = m.decode_batches[0]->streams[0]->relocations[0];
                r = fb::Relocation(r.offset(), 2 * 4 + 1);
              }),
              HasSubstr("names buffer 9, there are 4 buffers x 2 lanes"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.decode_batches[0]->tokens = 1; }),
              HasSubstr("1 lanes, must be in [2, 64]"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.decode_batches[0]->tokens = 65; }),
              HasSubstr("65 lanes, must be in [2, 64]"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.decode_batches[0]->kind = fb::GraphKind::Prefill;
              }),
              HasSubstr("must be Decode"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.decode_batches[0]->name = "decode"; }),
              HasSubstr("name repeated"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.decode_batches.push_back(std::make_unique<fb::GraphT>(*m.decode_batches[0]));
                m.decode_batches[1]->name = "again";
              }),
              HasSubstr("another batched decode graph also has 2 lanes"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                m.decode_batches[0]->io->last_row = std::make_unique<fb::Operand>(3, 0);
              }),
              HasSubstr("io.last_row must be absent"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) {
                // Room for one row of logits, not two.
                m.decode_batches[0]->io->logits =
                    std::make_unique<fb::Operand>(3, m.buffers[3]->size - 512 * 4);
              }),
              HasSubstr("decode_batches[0] 'decode_batch_2' io.logits"));
}

TEST_F(ArtifactOpenTest, RejectsInconsistentHParams) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.hparams->n_kv_heads = 3; }),
              HasSubstr("n_heads 8 is not a multiple of n_kv_heads 3"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.hparams->head_dim = 1 << 18; }),
              HasSubstr("head_dim 262144 * n_heads 8 exceeds"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.hparams->head_dim = 4; }),
              HasSubstr("rope_dim 8 must be even and <= head_dim 4"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.hparams->dim = 0; }),
              HasSubstr("hparams.dim is 0"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.hparams->norm_eps = -1; }),
              HasSubstr("norm_eps"));
}

TEST_F(ArtifactOpenTest, RejectsInconsistentTokenizers) {
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.tokenizer->bos_id = 512; }),
              HasSubstr("tokenizer.bos_id 512 is outside [0, 512)"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.tokenizer->scores.pop_back(); }),
              HasSubstr("511 scores for 512 tokens"));
  EXPECT_THAT(MutatedOpenError([](fb::ModelT& m) { m.tokenizer->tokens.pop_back(); }),
              HasSubstr("511 tokens, hparams.vocab_size is 512"));
}

}  // namespace
}  // namespace lnpu::artifact
