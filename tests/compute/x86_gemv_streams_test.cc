// The x86 panel GEMVs' walk per CPU class (x86_gemv_streams.h): the table,
// the environment override's parsing, and which walk the process uses.
// (That every walk gives the same bits: quant_matmul_test, run again by
// meson with each walk forced through the environment.)
#include "kernel_iface/softnpu/compute/x86_gemv_streams.h"

#include <cstdlib>
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

TEST(X86GemvStreamsForTest, ZenFourReadsOneStreamPrefetchedShortly) {
  EXPECT_EQ(X86GemvStreamsFor(Cpu(X86Vendor::kAmd, 0x19, 0x11)),
            (X86GemvStreams{.streams = 1, .prefetch_bytes = 256}));
}

TEST(X86GemvStreamsForTest, OtherCpusReadFourStreamsPrefetchedTwoKiBAhead) {
  const X86GemvStreams four{.streams = 4, .prefetch_bytes = 2048};
  EXPECT_EQ(X86GemvStreamsFor(Cpu(X86Vendor::kAmd, 0x1A, 0x02)), four);   // Zen 5
  EXPECT_EQ(X86GemvStreamsFor(Cpu(X86Vendor::kAmd, 0x17, 0x31)), four);   // Zen 2
  EXPECT_EQ(X86GemvStreamsFor(Cpu(X86Vendor::kIntel, 6, 0x8F)), four);    // Sapphire Rapids
  EXPECT_EQ(X86GemvStreamsFor(Cpu(X86Vendor::kIntel, 0x19, 0x11)), four); // family, not vendor
  EXPECT_EQ(X86GemvStreamsFor(Cpu(X86Vendor::kOther, 0, 0)), four);
}

TEST(ParseX86GemvStreamsTest, AcceptsStreamsAndDistance) {
  EXPECT_EQ(*ParseX86GemvStreams("1:256"), (X86GemvStreams{.streams = 1, .prefetch_bytes = 256}));
  EXPECT_EQ(*ParseX86GemvStreams("2:64"), (X86GemvStreams{.streams = 2, .prefetch_bytes = 64}));
  EXPECT_EQ(*ParseX86GemvStreams("4:16384"),
            (X86GemvStreams{.streams = 4, .prefetch_bytes = 16384}));
}

TEST(ParseX86GemvStreamsTest, RejectsWhatIsNotStreamsColonBytes) {
  for (const char* text : {"", "4", "4:", ":2048", "four:2048", "4:2k", "4:2048:1", "-1:256"}) {
    const absl::StatusOr<X86GemvStreams> parsed = ParseX86GemvStreams(text);
    ASSERT_FALSE(parsed.ok()) << '"' << text << '"';
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("STREAMS:PREFETCH_BYTES")) << text;
  }
}

TEST(ParseX86GemvStreamsTest, RejectsStreamCountsTheKernelDoesNotWalk) {
  for (const char* text : {"0:256", "3:256", "8:256"}) {
    const absl::StatusOr<X86GemvStreams> parsed = ParseX86GemvStreams(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr("use 1, 2 or 4")) << text;
  }
}

TEST(ParseX86GemvStreamsTest, RejectsDistancesOutsideWholeLinesUpTo16KiB) {
  for (const char* text : {"1:0", "1:32", "1:100", "1:16448", "4:65536"}) {
    const absl::StatusOr<X86GemvStreams> parsed = ParseX86GemvStreams(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr("multiple of 64 from 64 to 16384")) << text;
  }
}

// The process's walk: the environment's when meson sets it (the
// quant_matmul_test runs with forced walks rely on this), else the CPU's.
TEST(GetX86GemvStreamsTest, IsTheEnvironmentsWalkElseTheCpus) {
  const char* text = std::getenv(kX86GemvStreamsVariable);
  if (text != nullptr && ParseX86GemvStreams(text).ok()) {
    EXPECT_EQ(GetX86GemvStreams(), *ParseX86GemvStreams(text));
  } else {
    EXPECT_EQ(GetX86GemvStreams(), X86GemvStreamsFor(GetX86CpuFeatures()));
  }
}

TEST(X86CpuFeaturesTest, NamesTheCpusMakerAndFamily) {
  const X86CpuFeatures& cpu = GetX86CpuFeatures();
  if (cpu.vendor == X86Vendor::kOther) GTEST_SKIP() << "neither Intel nor AMD";
  // Every x86-64 CPU of either maker reports family 6 or more.
  EXPECT_GE(cpu.family, 6u);
}

}  // namespace
}  // namespace lnpu::softnpu::compute
