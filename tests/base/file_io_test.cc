#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu {
namespace {

using ::testing::HasSubstr;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lnpu_file_io_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(absl::StrCat("rm -rf ", dir_).c_str()); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static void WriteText(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string ReadText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static absl::Span<const uint8_t> Bytes(const std::string& text) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  }
  std::string dir_;
};

TEST_F(FileIoTest, ReadsARegularFile) {
  WriteText(Path("a"), "hello");
  absl::StatusOr<std::string> text = ReadRegularFile(Path("a"), 100, "prompt file");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "hello");
}

TEST_F(FileIoTest, RefusesADirectory) {
  absl::StatusOr<std::string> text = ReadRegularFile(dir_, 100, "prompt file");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("is a directory"));
}

TEST_F(FileIoTest, RefusesADeviceSoAnEndlessFileCannotBeRead) {
  absl::StatusOr<std::string> text = ReadRegularFile("/dev/zero", 100, "prompt file");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("character device"));
}

TEST_F(FileIoTest, RefusesAFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  absl::StatusOr<std::string> text = ReadRegularFile(Path("fifo"), 100, "prompt file");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("FIFO"));
}

TEST_F(FileIoTest, RefusesAFileOverTheLimitNamingBoth) {
  WriteText(Path("big"), std::string(101, 'x'));
  absl::StatusOr<std::string> text = ReadRegularFile(Path("big"), 100, "prompt file");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(text.status().message(), HasSubstr("101 bytes"));
  EXPECT_THAT(text.status().message(), HasSubstr("limit of 100"));
}

TEST_F(FileIoTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadRegularFile(Path("none"), 100, "x").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(FileIoTest, OutputPathRules) {
  WriteText(Path("model"), "weights");
  EXPECT_TRUE(CheckOutputPath(Path("new"), {Path("model")}, "session file").ok());
  EXPECT_TRUE(CheckOutputPath(Path("model"), {}, "session file").ok());
  // The input under another spelling and through a hard link.
  for (const std::string& same : {Path("model"), dir_ + "/./model"}) {
    absl::Status s = CheckOutputPath(same, {Path("model")}, "session file");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << same;
    EXPECT_THAT(s.message(), HasSubstr("destroy the input"));
  }
  ASSERT_EQ(::link(Path("model").c_str(), Path("link").c_str()), 0);
  EXPECT_EQ(CheckOutputPath(Path("link"), {Path("model")}, "x").code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  absl::Status fifo = CheckOutputPath(Path("fifo"), {}, "artifact");
  EXPECT_EQ(fifo.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fifo.message(), HasSubstr("refusing to replace"));
  EXPECT_EQ(CheckOutputPath("/dev/full", {}, "artifact").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckOutputPath(dir_, {}, "artifact").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(CheckOutputPath(Path("no/such/dir/out"), {}, "artifact").ok());
  EXPECT_EQ(CheckOutputPath("", {}, "artifact").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(FileIoTest, AtomicWriterCommitsCompleteFile) {
  WriteText(Path("out"), "old");
  auto writer = AtomicFileWriter::Create(Path("out"), "test file");
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Append(Bytes("hello ")).ok());
  ASSERT_TRUE((*writer)->WriteAt(10, Bytes("!")).ok());
  ASSERT_TRUE((*writer)->Append(Bytes("x")).ok());  // after the furthest byte
  EXPECT_EQ(ReadText(Path("out")), "old");          // untouched until Commit
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_EQ(ReadText(Path("out")), std::string("hello \0\0\0\0!x", 12));
  EXPECT_NE(::access(Path("out.tmp").c_str(), F_OK), 0);
  EXPECT_EQ((*writer)->Commit().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(FileIoTest, AtomicWriterDestroyedUncommittedLeavesNothing) {
  WriteText(Path("out"), "old");
  {
    auto writer = AtomicFileWriter::Create(Path("out"), "test file");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(Bytes("partial")).ok());
    EXPECT_EQ(::access(Path("out.tmp").c_str(), F_OK), 0);
  }
  EXPECT_NE(::access(Path("out.tmp").c_str(), F_OK), 0);
  EXPECT_EQ(ReadText(Path("out")), "old");
}

TEST_F(FileIoTest, AtomicWriterRefusesNonRegularOutputAndInputs) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(AtomicFileWriter::Create(Path("fifo"), "artifact").status().code(),
            absl::StatusCode::kInvalidArgument);
  struct stat st;
  ASSERT_EQ(::stat(Path("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));  // still the FIFO
  WriteText(Path("in"), "input");
  EXPECT_EQ(AtomicFileWriter::Create(Path("in"), "x", {Path("in")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadText(Path("in")), "input");
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}
absl::StatusOr<int> Quarter(int x) {
  LNPU_ASSIGN_OR_RETURN(const int half, Half(x));
  LNPU_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}
absl::Status CheckQuarter(int x, int* out) {
  LNPU_RETURN_IF_ERROR(Quarter(x).status());
  LNPU_ASSIGN_OR_RETURN(*out, Quarter(x));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, PropagateErrorsAndValues) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");  // 6 -> 3 -> odd
  int out = 0;
  EXPECT_TRUE(CheckQuarter(12, &out).ok());
  EXPECT_EQ(out, 3);
  EXPECT_EQ(CheckQuarter(5, &out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out, 3);
}

}  // namespace
}  // namespace lnpu
