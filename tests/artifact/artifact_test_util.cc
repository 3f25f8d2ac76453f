#include "tests/artifact/artifact_test_util.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>

#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/format/artifact_writer.h"
#include "gtest/gtest.h"
#include "tests/test_temp_dir.h"

namespace lnpu::artifact::testing {

std::string Stories260KPath() {
  const char* dir = std::getenv("LNPU_MODELS_DIR");
  return std::string(dir != nullptr ? dir : "models") + "/stories260K.gguf";
}

std::string TempPath(const std::string& name) { return lnpu::testing::TestTempPath(name); }

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteFileBytes(const std::string& path,
                    const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

void RewriteModel(const std::string& src, const std::string& dst,
                  const std::function<void(fb::ModelT&)>& mutate) {
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(src);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  std::unique_ptr<fb::ModelT> model((*artifact)->model().UnPack());
  mutate(*model);
  flatbuffers::FlatBufferBuilder builder;
  fb::FinishModelBuffer(builder, fb::Model::Pack(builder, model.get()));
  absl::StatusOr<std::unique_ptr<ArtifactWriter>> writer =
      ArtifactWriter::Create(
          dst, absl::MakeConstSpan(builder.GetBufferPointer(), builder.GetSize()),
          (*artifact)->data().size());
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->WriteData(0, (*artifact)->data()).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
}

}  // namespace lnpu::artifact::testing
