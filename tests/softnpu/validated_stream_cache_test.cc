// ValidatedStreamCache: a lookup hits only on the same engine, bytes and
// buffers; entries are bounded and the least recently used is replaced.
#include "kernel_iface/softnpu/validated_stream_cache.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lnpu::softnpu {
namespace {

using ::testing::ElementsAre;

std::vector<uint8_t> Stream(uint8_t seed, size_t bytes = 64) {
  std::vector<uint8_t> stream(bytes);
  for (size_t i = 0; i < bytes; ++i) stream[i] = static_cast<uint8_t>(seed + i);
  return stream;
}

const std::vector<ValidatedBuffer> kBuffers = {{.device_addr = 0x10000, .size = 4096},
                                               {.device_addr = 0x20000, .size = 8192}};

TEST(ValidatedStreamCacheTest, HitsOnlyTheSameEngineBytesAndBuffers) {
  ValidatedStreamCache cache;
  const std::vector<uint8_t> stream = Stream(1);
  cache.Insert(1, stream, kBuffers, 3, std::vector<uint32_t>{2, 0, 1});
  StreamVerdict verdict;
  ASSERT_TRUE(cache.Lookup(1, stream, kBuffers, &verdict));
  EXPECT_EQ(verdict.command_count, 3u);
  EXPECT_THAT(verdict.group_sizes, ElementsAre(2, 0, 1));

  EXPECT_FALSE(cache.Lookup(0, stream, kBuffers, &verdict)) << "other engine";
  std::vector<uint8_t> changed = stream;
  changed.back() ^= 1;
  EXPECT_FALSE(cache.Lookup(1, changed, kBuffers, &verdict)) << "last byte";
  EXPECT_FALSE(cache.Lookup(1, Stream(1, 56), kBuffers, &verdict)) << "shorter";
  std::vector<ValidatedBuffer> buffers = kBuffers;
  buffers[1].read_only = true;
  EXPECT_FALSE(cache.Lookup(1, stream, buffers, &verdict)) << "read-only";
  buffers = kBuffers;
  buffers[0].size = 2048;
  EXPECT_FALSE(cache.Lookup(1, stream, buffers, &verdict)) << "size";
  buffers = kBuffers;
  buffers[0].device_addr += 4096;
  EXPECT_FALSE(cache.Lookup(1, stream, buffers, &verdict)) << "address";
  buffers.pop_back();
  EXPECT_FALSE(cache.Lookup(1, stream, buffers, &verdict)) << "fewer buffers";
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 7u);
}

TEST(ValidatedStreamCacheTest, ReplacesTheLeastRecentlyUsedEntry) {
  ValidatedStreamCache cache;
  StreamVerdict verdict;
  for (size_t i = 0; i < ValidatedStreamCache::kEntries; ++i) {
    cache.Insert(0, Stream(static_cast<uint8_t>(i)), kBuffers, static_cast<uint32_t>(i), {});
  }
  ASSERT_TRUE(cache.Lookup(0, Stream(0), kBuffers, &verdict));  // 0 is now the newest
  cache.Insert(0, Stream(100), kBuffers, 100, {});              // replaces 1
  EXPECT_TRUE(cache.Lookup(0, Stream(0), kBuffers, &verdict));
  EXPECT_EQ(verdict.command_count, 0u);
  EXPECT_FALSE(cache.Lookup(0, Stream(1), kBuffers, &verdict));
  for (size_t i = 2; i < ValidatedStreamCache::kEntries; ++i) {
    EXPECT_TRUE(cache.Lookup(0, Stream(static_cast<uint8_t>(i)), kBuffers, &verdict)) << i;
  }
  EXPECT_TRUE(cache.Lookup(0, Stream(100), kBuffers, &verdict));
  EXPECT_EQ(verdict.command_count, 100u);
}

TEST(ValidatedStreamCacheTest, DoesNotKeepStreamsOverTheLimit) {
  ValidatedStreamCache cache;
  const std::vector<uint8_t> big = Stream(7, ValidatedStreamCache::kMaxStreamBytes + 8);
  cache.Insert(0, big, kBuffers, 1, {});
  StreamVerdict verdict;
  EXPECT_FALSE(cache.Lookup(0, big, kBuffers, &verdict));
}

}  // namespace
}  // namespace lnpu::softnpu
