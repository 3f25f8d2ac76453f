// The x86 GEMVs' walk per CPU class (x86_gemv_walk.h): the table,
// the environment override's parsing, which walk the process uses, and
// the activation reuse limit.
// (That every walk gives the same bits: quant_matmul_test, run again by
// meson with each walk forced through the environment.)
#include "kernel_iface/softnpu/compute/x86_gemv_walk.h"

#include <unistd.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::softnpu::compute {
namespace {

using ::testing::HasSubstr;

X86CpuFeatures Cpu(X86Vendor vendor, unsigned family, unsigned model) {
  X86CpuFeatures cpu;
  cpu.vendor = vendor;
  cpu.family = family;
  cpu.model = model;
  return cpu;
}

TEST(X86GemvWalkForTest, ZenFourReadsOneStreamPrefetchedShortlyInTwoChunksPerThread) {
  const X86GemvWalk one{.streams = 1, .prefetch_bytes = 256, .chunks_per_thread = 2};
  for (unsigned model : {0x10u, 0x11u, 0x1Fu, 0x61u, 0x74u, 0x78u, 0x7Fu, 0xA0u, 0xAFu}) {
    EXPECT_EQ(X86GemvWalkFor(Cpu(X86Vendor::kAmd, 0x19, model)), one) << model;
  }
}

TEST(X86GemvWalkForTest, ZenThreeReadsTwoStreamsOneKiBAheadInTwoChunksPerThread) {
  const X86GemvWalk two{.streams = 2, .prefetch_bytes = 1024, .chunks_per_thread = 2};
  // Milan, Vermeer, Rembrandt, Cezanne; and the models next to Zen 4's.
  for (unsigned model : {0x00u, 0x01u, 0x08u, 0x0Fu, 0x21u, 0x44u, 0x50u, 0x5Fu, 0x80u, 0xB0u}) {
    EXPECT_EQ(X86GemvWalkFor(Cpu(X86Vendor::kAmd, 0x19, model)), two) << model;
  }
}

TEST(X86GemvWalkForTest, OtherCpusReadFourStreamsTwoKiBAheadInOneChunkPerThread) {
  const X86GemvWalk four{.streams = 4, .prefetch_bytes = 2048, .chunks_per_thread = 1};
  EXPECT_EQ(X86GemvWalkFor(Cpu(X86Vendor::kAmd, 0x1A, 0x02)), four);    // Zen 5
  EXPECT_EQ(X86GemvWalkFor(Cpu(X86Vendor::kAmd, 0x17, 0x31)), four);    // Zen 2
  EXPECT_EQ(X86GemvWalkFor(Cpu(X86Vendor::kIntel, 6, 0x8F)), four);     // Sapphire Rapids
  EXPECT_EQ(X86GemvWalkFor(Cpu(X86Vendor::kIntel, 0x19, 0x11)), four);  // family, not vendor
  EXPECT_EQ(X86GemvWalkFor(Cpu(X86Vendor::kOther, 0, 0)), four);
}

TEST(ParseX86GemvWalkTest, AcceptsStreamsDistanceAndChunks) {
  EXPECT_EQ(*ParseX86GemvWalk("1:256:4"),
            (X86GemvWalk{.streams = 1, .prefetch_bytes = 256, .chunks_per_thread = 4}));
  EXPECT_EQ(*ParseX86GemvWalk("2:64:1"),
            (X86GemvWalk{.streams = 2, .prefetch_bytes = 64, .chunks_per_thread = 1}));
  EXPECT_EQ(*ParseX86GemvWalk("4:16384:16"),
            (X86GemvWalk{.streams = 4, .prefetch_bytes = 16384, .chunks_per_thread = 16}));
}

// Each of `texts` rejected as InvalidArgument with a message holding `why`.
void ExpectRejected(std::initializer_list<const char*> texts, const std::string& why) {
  for (const char* text : texts) {
    const absl::StatusOr<X86GemvWalk> parsed = ParseX86GemvWalk(text);
    ASSERT_FALSE(parsed.ok()) << '"' << text << '"';
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(why)) << text;
  }
}

TEST(ParseX86GemvWalkTest, RejectsWhatIsNotThreeNumbers) {
  ExpectRejected({"", "4", "4:2048", "4:2048:", ":2048:1", "four:2048:1", "4:2k:1", "4:2048:1:1",
                  "-1:256:1", "4:2048:one"},
                 "STREAMS:PREFETCH_BYTES:CHUNKS_PER_THREAD");
}

TEST(ParseX86GemvWalkTest, RejectsStreamCountsTheKernelDoesNotWalk) {
  ExpectRejected({"0:256:1", "3:256:1", "8:256:1"}, "use 1, 2 or 4");
}

TEST(ParseX86GemvWalkTest, RejectsDistancesOutsideWholeLinesUpTo16KiB) {
  ExpectRejected({"1:0:1", "1:32:1", "1:100:1", "1:16448:1", "4:65536:1"},
                 "multiple of 64 from 64 to 16384");
}

TEST(ParseX86GemvWalkTest, RejectsChunkCountsOutsideOneToSixteen) {
  ExpectRejected({"1:256:0", "1:256:17", "4:2048:64"}, "chunks per thread; use 1 to 16");
}

// The process's walk: the environment's when meson sets it (the
// quant_matmul_test runs with forced walks rely on this), else the CPU's.
TEST(GetX86GemvWalkTest, IsTheEnvironmentsWalkElseTheCpus) {
  const char* text = std::getenv(kX86GemvWalkVariable);
  if (text != nullptr && ParseX86GemvWalk(text).ok()) {
    EXPECT_EQ(GetX86GemvWalk(), *ParseX86GemvWalk(text));
  } else {
    EXPECT_EQ(GetX86GemvWalk(), X86GemvWalkFor(GetX86CpuFeatures()));
  }
}

TEST(ActivationReuseLimitTest, IsHalfTheL1DataCache) {
  const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  EXPECT_EQ(ActivationReuseLimitBytes(), (l1d > 0 ? static_cast<size_t>(l1d) : 32768) / 2);
  // Every x86-64 L1 data cache so far holds 16 KiB to 64 KiB.
  EXPECT_GE(ActivationReuseLimitBytes(), 8192u);
  EXPECT_LE(ActivationReuseLimitBytes(), 32768u);
}

TEST(X86CpuFeaturesTest, NamesTheCpusMakerAndFamily) {
  const X86CpuFeatures& cpu = GetX86CpuFeatures();
  if (cpu.vendor == X86Vendor::kOther) GTEST_SKIP() << "neither Intel nor AMD";
  // Every x86-64 CPU of either maker reports family 6 or more.
  EXPECT_GE(cpu.family, 6u);
}

}  // namespace
}  // namespace lnpu::softnpu::compute
