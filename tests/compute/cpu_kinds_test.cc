// CpusAreOneKind on sysfs trees written into a temporary directory.
#include "kernel_iface/softnpu/compute/cpu_kinds.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace lnpu::softnpu::compute {
namespace {

class CpuKindsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/cpu_kinds_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    const std::filesystem::path file = root_ + "/" + path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  void WriteCapacity(int cpu, const std::string& text) {
    Write("devices/system/cpu/cpu" + std::to_string(cpu) + "/cpu_capacity", text);
  }

  std::string root_;
};

TEST_F(CpuKindsTest, NothingReportedIsOneKind) {
  EXPECT_TRUE(CpusAreOneKind(root_, {0, 1, 2, 3}));
}

TEST_F(CpuKindsTest, EqualCapacitiesAreOneKind) {
  for (int cpu = 0; cpu < 4; ++cpu) WriteCapacity(cpu, "1024\n");
  EXPECT_TRUE(CpusAreOneKind(root_, {0, 1, 2, 3}));
}

TEST_F(CpuKindsTest, BigAndLittleCapacitiesAreMixed) {
  // RK3588-like: four Cortex-A55 then four Cortex-A76.
  for (int cpu = 0; cpu < 4; ++cpu) WriteCapacity(cpu, "414\n");
  for (int cpu = 4; cpu < 8; ++cpu) WriteCapacity(cpu, "1024\n");
  EXPECT_FALSE(CpusAreOneKind(root_, {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(CpusAreOneKind(root_, {3, 4}));
  // A process confined to the big cores (taskset) runs on one kind.
  EXPECT_TRUE(CpusAreOneKind(root_, {4, 5, 6, 7}));
}

TEST_F(CpuKindsTest, UnreadableCapacitiesAreNotReported) {
  WriteCapacity(0, "1024\n");
  WriteCapacity(1, "fast\n");
  WriteCapacity(2, "");
  EXPECT_TRUE(CpusAreOneKind(root_, {0, 1, 2, 3}));
}

TEST_F(CpuKindsTest, IntelHybridEfficiencyCoresAreMixedWithPerformanceCores) {
  Write("devices/cpu_atom/cpus", "16-23\n");
  EXPECT_FALSE(CpusAreOneKind(root_, {0, 1, 16, 17}));
  EXPECT_TRUE(CpusAreOneKind(root_, {0, 1, 2, 3}));
  EXPECT_TRUE(CpusAreOneKind(root_, {16, 20, 23}));
}

TEST_F(CpuKindsTest, EfficiencyCoreListsWithSeveralRanges) {
  Write("devices/cpu_atom/cpus", "4-5,8,10-11\n");
  EXPECT_FALSE(CpusAreOneKind(root_, {7, 8}));
  EXPECT_FALSE(CpusAreOneKind(root_, {3, 11}));
  EXPECT_TRUE(CpusAreOneKind(root_, {4, 5, 8, 10, 11}));
  EXPECT_TRUE(CpusAreOneKind(root_, {6, 7, 9}));
}

TEST_F(CpuKindsTest, MalformedEfficiencyCoreListIsNotReported) {
  Write("devices/cpu_atom/cpus", "4-x\n");
  EXPECT_TRUE(CpusAreOneKind(root_, {0, 4}));
  Write("devices/cpu_atom/cpus", "5-4\n");
  EXPECT_TRUE(CpusAreOneKind(root_, {0, 4}));
}

}  // namespace
}  // namespace lnpu::softnpu::compute
