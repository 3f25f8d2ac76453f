// Running jobs: COPY and SCATTER_ROWS results, faults, in-fence chains,
// job timeouts with file banning, buffer lifetime across queued jobs, and
// MATMUL / GATHER_ROWS on LNPU_DTYPE_Q8_0_P16 buffers (results and the
// SUBMIT checks of the panel operand's size and alignment).
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/quant_blocks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/softnpu/soft_npu_test_util.h"

namespace lnpu::softnpu::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class ExecutionTest : public SoftNpuTest {
 protected:
  void SetUp() override {
    cmd_ = CreateBuffer(*file_, 4096, DRM_LNPU_BO_CMDBUF);
  }

  // Submits `stream` at `offset` of cmd_; returns the fence (0 on failure).
  uint64_t Run(uint32_t engine, const CommandStream& stream,
               std::vector<uint32_t> buffers,
               std::vector<uint64_t> in_fences = {}, uint32_t offset = 0) {
    Submission job;
    job.engine = engine;
    job.cmd_handle = cmd_.handle;
    job.cmd_offset = offset;
    job.cmd_size = stream.WriteTo(cmd_, offset);
    job.bo_handles = std::move(buffers);
    job.in_fences = std::move(in_fences);
    uint64_t fence = 0;
    EXPECT_EQ(Submit(*file_, job, &fence), 0)
        << npu_->last_rejection_message();
    return fence;
  }

  TestBuffer cmd_;
};

TEST_F(ExecutionTest, CopyOnBothEngines) {
  TestBuffer a = CreateBuffer(*file_, 8192);
  TestBuffer b = CreateBuffer(*file_, 8192);
  TestBuffer c = CreateBuffer(*file_, 8192);
  for (int i = 0; i < 8192; ++i) a.data[i] = static_cast<uint8_t>(i * 7);
  const uint64_t on_compute =
      Run(DRM_LNPU_ENGINE_COMPUTE,
          CommandStream().Copy(a.device_addr, b.device_addr, 8192),
          {a.handle, b.handle});
  ASSERT_EQ(WaitJob(*file_, on_compute), 0);
  const uint64_t on_dma =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream().Copy(b.device_addr + 100, c.device_addr + 8, 5000),
          {b.handle, c.handle});
  ASSERT_EQ(WaitJob(*file_, on_dma), 0);
  EXPECT_EQ(std::memcmp(b.data, a.data, 8192), 0);
  EXPECT_EQ(std::memcmp(c.data + 8, a.data + 100, 5000), 0);
  EXPECT_EQ(c.data[0], 0);
  EXPECT_EQ(c.data[5008], 0);
}

TEST_F(ExecutionTest, CommandsOfOneJobRunInOrder) {
  TestBuffer a = CreateBuffer(*file_, 4096);
  TestBuffer b = CreateBuffer(*file_, 4096);
  std::memcpy(a.data, "first", 6);
  const uint64_t fence =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream()
              .Copy(a.device_addr, b.device_addr, 6)
              .Copy(b.device_addr, a.device_addr + 100, 6)
              .Nop(),
          {a.handle, b.handle});
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_STREQ(reinterpret_cast<char*>(a.data + 100), "first");
}

TEST_F(ExecutionTest, ScatterRowsFillsSlotsOfEveryBlock) {
  constexpr uint32_t kRowBytes = 16, kRows = 3, kBlocks = 2, kSlots = 4;
  TestBuffer src = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  for (uint32_t i = 0; i < kBlocks * kRows * kRowBytes; ++i) {
    src.data[i] = static_cast<uint8_t>(i + 1);
  }
  const int32_t slots[kRows] = {2, -1, 0};  // row 1 is padding
  std::memcpy(indices.data, slots, sizeof(slots));
  const uint64_t fence = Run(
      DRM_LNPU_ENGINE_DMA,
      CommandStream().Add(MakeScatterRows(src.device_addr, dst.device_addr,
                                          indices.device_addr, kRowBytes,
                                          kRows, kBlocks, kSlots)),
      {src.handle, dst.handle, indices.handle});
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  for (uint32_t block = 0; block < kBlocks; ++block) {
    const uint8_t* src_block = src.data + block * kRows * kRowBytes;
    const uint8_t* dst_block = dst.data + block * kSlots * kRowBytes;
    SCOPED_TRACE(block);
    EXPECT_EQ(std::memcmp(dst_block + 2 * kRowBytes, src_block, kRowBytes), 0);
    EXPECT_EQ(std::memcmp(dst_block + 0 * kRowBytes,
                          src_block + 2 * kRowBytes, kRowBytes),
              0);
    for (uint32_t slot : {1u, 3u}) {
      for (uint32_t i = 0; i < kRowBytes; ++i) {
        ASSERT_EQ(dst_block[slot * kRowBytes + i], 0) << slot;
      }
    }
  }
}

TEST_F(ExecutionTest, IndexOutOfRangeFaultsTheJobWithEio) {
  TestBuffer src = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  const int32_t slot = 4;  // dst_rows is 4
  std::memcpy(indices.data, &slot, sizeof(slot));
  const uint64_t fence = Run(
      DRM_LNPU_ENGINE_DMA,
      CommandStream().Add(MakeScatterRows(src.device_addr, dst.device_addr,
                                          indices.device_addr, 16, 1, 1, 4)),
      {src.handle, dst.handle, indices.handle});
  EXPECT_EQ(WaitJob(*file_, fence), -EIO);
  EXPECT_FAULT_MESSAGE(npu_, HasSubstr("indices"));
  // A fault does not ban the file.
  const uint64_t next =
      Run(DRM_LNPU_ENGINE_DMA, CommandStream().Nop(), {});
  EXPECT_EQ(WaitJob(*file_, next), 0);
  EXPECT_EQ(npu_->reset_count(), 0u);
}

TEST_F(ExecutionTest, FailedInFenceCancelsTheDependentJob) {
  TestBuffer src = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  const int32_t slot = 100;
  std::memcpy(indices.data, &slot, sizeof(slot));
  src.data[0] = 9;
  const uint64_t faulting = Run(
      DRM_LNPU_ENGINE_DMA,
      CommandStream().Add(MakeScatterRows(src.device_addr, dst.device_addr,
                                          indices.device_addr, 16, 1, 1, 4)),
      {src.handle, dst.handle, indices.handle});
  const uint64_t dependent =
      Run(DRM_LNPU_ENGINE_COMPUTE,
          CommandStream().Copy(src.device_addr, dst.device_addr + 1024, 16),
          {src.handle, dst.handle}, {faulting}, 512);
  EXPECT_EQ(WaitJob(*file_, dependent), -ECANCELED);
  EXPECT_EQ(WaitJob(*file_, faulting), -EIO);
  EXPECT_EQ(dst.data[1024], 0) << "a cancelled job must not run";
}

TEST_F(ExecutionTest, InFenceOrdersJobsAcrossEngines) {
  TestBuffer a = CreateBuffer(*file_, 4096);
  TestBuffer b = CreateBuffer(*file_, 4096);
  TestBuffer c = CreateBuffer(*file_, 4096);
  std::memcpy(a.data, "chained", 8);
  npu_->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  const uint64_t compute =
      Run(DRM_LNPU_ENGINE_COMPUTE,
          CommandStream().Copy(a.device_addr, b.device_addr, 8),
          {a.handle, b.handle});
  const uint64_t dma =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream().Copy(b.device_addr, c.device_addr, 8),
          {b.handle, c.handle}, {compute}, 256);
  // The DMA engine is free but its job waits for the compute fence.
  EXPECT_EQ(Wait(*file_, {dma}, DeadlineInMs(30)), ETIMEDOUT);
  EXPECT_EQ(c.data[0], 0);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_COMPUTE);
  ASSERT_EQ(WaitJob(*file_, dma), 0);
  EXPECT_STREQ(reinterpret_cast<char*>(c.data), "chained");
}

TEST_F(ExecutionTest, ClosedBufferStaysValidUntilItsQueuedJobEnds) {
  TestBuffer src = CreateBuffer(*file_, 64 * 1024);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  for (int i = 0; i < 4096; ++i) src.data[i] = static_cast<uint8_t>(i ^ 0x55);
  std::vector<uint8_t> expected(src.data, src.data + 4096);
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  const uint64_t fence =
      Run(DRM_LNPU_ENGINE_DMA,
          CommandStream().Copy(src.device_addr, dst.device_addr, 4096),
          {src.handle, dst.handle});
  ASSERT_EQ(file_->Munmap(src.data, src.size), 0);
  ASSERT_EQ(CloseHandle(*file_, src.handle), 0);
  EXPECT_EQ(npu_->memory_used(), cmd_.size + src.size + dst.size)
      << "the queued job still holds the closed buffer";
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  ASSERT_EQ(WaitJob(*file_, fence), 0);
  EXPECT_EQ(std::memcmp(dst.data, expected.data(), 4096), 0);
  EXPECT_EQ(npu_->memory_used(), cmd_.size + dst.size);
}

TEST_F(ExecutionTest, JobsOfAClosedFileStillCompleteAndFreeTheirBuffers) {
  auto other = npu_->Open();
  TestBuffer cmd = CreateBuffer(*other, 4096, DRM_LNPU_BO_CMDBUF);
  TestBuffer data = CreateBuffer(*other, 1 << 20);
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  Submission job;
  job.engine = DRM_LNPU_ENGINE_DMA;
  job.cmd_handle = cmd.handle;
  job.cmd_size = CommandStream()
                     .Copy(data.device_addr, data.device_addr + 4096, 4096)
                     .WriteTo(cmd);
  job.bo_handles = {data.handle};
  ASSERT_EQ(Submit(*other, job), 0);
  other.reset();
  EXPECT_EQ(npu_->memory_used(), cmd_.size + data.size);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);
  // A job of this file queued behind it completes after it.
  const uint64_t marker = Run(DRM_LNPU_ENGINE_DMA, CommandStream().Nop(), {});
  ASSERT_EQ(WaitJob(*file_, marker), 0);
  EXPECT_EQ(npu_->memory_used(), cmd_.size);
}

TEST(ExecutionLifetimeTest, DestroyingTheDeviceCancelsQueuedJobs) {
  auto npu = SoftNpu::Create(SmallDeviceOptions());
  auto file = npu->Open();
  TestBuffer cmd = CreateBuffer(*file, 4096, DRM_LNPU_BO_CMDBUF);
  npu->PauseEngine(DRM_LNPU_ENGINE_COMPUTE);
  Submission job;
  job.cmd_handle = cmd.handle;
  job.cmd_size = CommandStream().Nop().WriteTo(cmd);
  ASSERT_EQ(Submit(*file, job), 0);
  file.reset();
  std::weak_ptr<SoftNpu> weak = npu;
  npu.reset();  // joins the engines with a job still queued
  EXPECT_TRUE(weak.expired());
}

// A device with a short job timeout, and a job that surely exceeds it:
// many large copies, with the timeout checked between them.
class JobTimeoutTest : public SoftNpuTest {
 protected:
  static SoftNpuOptions Options() {
    SoftNpuOptions options = SmallDeviceOptions();
    options.job_timeout_ms = 5;
    return options;
  }
  JobTimeoutTest() : SoftNpuTest(Options()) {}

  Submission LongJob(const TestBuffer& cmd, const TestBuffer& a,
                     const TestBuffer& b) {
    CommandStream stream;
    for (int i = 0; i < 100; ++i) {
      stream.Copy(a.device_addr, b.device_addr, a.size);
      stream.Copy(b.device_addr, a.device_addr, a.size);
    }
    Submission job;
    job.engine = DRM_LNPU_ENGINE_DMA;
    job.cmd_handle = cmd.handle;
    job.cmd_size = stream.WriteTo(cmd);
    job.bo_handles = {a.handle, b.handle};
    return job;
  }
};

TEST_F(JobTimeoutTest, LongJobIsAbortedAndItsFileBanned) {
  TestBuffer cmd = CreateBuffer(*file_, 16384, DRM_LNPU_BO_CMDBUF);
  TestBuffer a = CreateBuffer(*file_, 8 << 20);
  TestBuffer b = CreateBuffer(*file_, 8 << 20);
  uint64_t fence = 0, behind = 0;
  // Both jobs are queued before the long one starts: on a slow machine
  // (emulation) its 5 ms timeout would otherwise ban the file before the
  // second submit.
  npu_->PauseEngine(DRM_LNPU_ENGINE_DMA);
  ASSERT_EQ(Submit(*file_, LongJob(cmd, a, b), &fence), 0);
  Submission nop;
  nop.engine = DRM_LNPU_ENGINE_DMA;
  nop.cmd_handle = cmd.handle;
  nop.cmd_offset = 8192;
  nop.cmd_size = CommandStream().Nop().WriteTo(cmd, 8192);
  ASSERT_EQ(Submit(*file_, nop, &behind), 0);
  npu_->ResumeEngine(DRM_LNPU_ENGINE_DMA);

  EXPECT_EQ(WaitJob(*file_, fence), -ECANCELED);
  EXPECT_EQ(WaitJob(*file_, behind), -ECANCELED)
      << "queued jobs of a banned file are cancelled";
  EXPECT_EQ(npu_->reset_count(), 1u);
  EXPECT_FAULT_MESSAGE(npu_, HasSubstr("timeout"));
  EXPECT_EQ(Submit(*file_, nop), ECANCELED);

  // Other files keep working.
  auto other = npu_->Open();
  TestBuffer other_cmd = CreateBuffer(*other, 4096, DRM_LNPU_BO_CMDBUF);
  Submission other_nop;
  other_nop.engine = DRM_LNPU_ENGINE_DMA;
  other_nop.cmd_handle = other_cmd.handle;
  other_nop.cmd_size = CommandStream().Nop().WriteTo(other_cmd);
  uint64_t other_fence = 0;
  ASSERT_EQ(Submit(*other, other_nop, &other_fence), 0);
  EXPECT_EQ(WaitJob(*other, other_fence), 0);
}

// A MATMUL without bias or accumulation.
lnpu_cmd_matmul MatmulCommand(uint64_t src, uint64_t weight, uint64_t dst, uint32_t rows,
                              uint32_t k, uint32_t n, uint32_t dtype) {
  lnpu_cmd_matmul matmul{};
  matmul.hdr = {LNPU_OP_MATMUL, 0, sizeof(matmul)};
  matmul.src = src;
  matmul.weight = weight;
  matmul.dst = dst;
  matmul.rows = rows;
  matmul.k = k;
  matmul.n = n;
  matmul.weight_dtype = dtype;
  return matmul;
}

// The panel dtypes through real buffer objects: panel_dtype(), the test's
// parameter (LNPU_DTYPE_Q8_0_P16 since 1.4, _Q4_0_P16 since 1.5, their
// _P16S forms since 1.7), a weight
// matrix of n = 40 rows (two whole panels and a partial one, padded to 48
// rows) of k = 96 (3 blocks), the same weights in the block dtype (Q8_0,
// Q4_0) for comparison.
class PanelTest : public ExecutionTest, public ::testing::WithParamInterface<uint32_t> {
 protected:
  static constexpr uint32_t kRows = 3, kK = 96, kN = 40;
  static constexpr size_t kBlocks = kK / kQuantBlock;

  bool q4() const {
    return GetParam() == LNPU_DTYPE_Q4_0_P16 || GetParam() == LNPU_DTYPE_Q4_0_P16S;
  }
  bool scales_in_stream() const {
    return GetParam() == LNPU_DTYPE_Q8_0_P16S || GetParam() == LNPU_DTYPE_Q4_0_P16S;
  }
  uint32_t panel_dtype() const { return GetParam(); }
  uint32_t block_dtype() const { return q4() ? LNPU_DTYPE_Q4_0 : LNPU_DTYPE_Q8_0; }
  size_t block_bytes() const { return q4() ? kQ4_0BlockBytes : kQ8_0BlockBytes; }

  void SetUp() override {
    ExecutionTest::SetUp();
    const uint64_t cap = scales_in_stream()
                             ? (q4() ? DRM_LNPU_CAP_DTYPE_Q4_0_P16S : DRM_LNPU_CAP_DTYPE_Q8_0_P16S)
                             : (q4() ? DRM_LNPU_CAP_DTYPE_Q4_0_P16 : DRM_LNPU_CAP_DTYPE_Q8_0_P16);
    if ((::lnpu::softnpu::testing::GetParam(*file_, DRM_LNPU_PARAM_CAPABILITIES) & cap) == 0) {
      GTEST_SKIP() << "the device lacks the capability of dtype " << panel_dtype();
    }
    blocks_bytes_ = uint64_t{kN} * kBlocks * block_bytes();
    p16_bytes_ = P16MatrixBytes(block_bytes(), kN, kBlocks);
    ASSERT_EQ(p16_bytes_, 48 * kBlocks * block_bytes());
    std::mt19937 rng(20240614);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.002f, 0.02f);
    blocks_.resize(blocks_bytes_);
    for (size_t block = 0; block < kN * kBlocks; ++block) {
      uint8_t* b = blocks_.data() + block * block_bytes();
      const uint16_t d = FloatToFloat16(scale(rng));
      std::memcpy(b, &d, 2);
      // Q8_0: int8 -127..127 (the byte 0x80 = -128 left out as before).
      for (size_t i = 2; i < block_bytes(); ++i) {
        int v = byte(rng);
        if (!q4() && v == 0x80) v = 0x81;
        b[i] = static_cast<uint8_t>(v);
      }
    }
    p16_.resize(p16_bytes_);
    RepackToP16(block_bytes(), scales_in_stream() ? P16Scales::kAfterPair : P16Scales::kAfterPanel,
                blocks_.data(), kN, kBlocks, p16_.data());
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    src_.resize(kRows * kK);
    for (float& x : src_) x = value(rng);
  }

  static lnpu_cmd_matmul Matmul(uint64_t src, uint64_t weight, uint64_t dst,
                                uint32_t n, uint32_t dtype) {
    return MatmulCommand(src, weight, dst, kRows, kK, n, dtype);
  }

  static lnpu_cmd_gather_rows Gather(uint64_t table, uint64_t indices,
                                     uint64_t dst, uint32_t count,
                                     uint32_t dtype) {
    lnpu_cmd_gather_rows gather{};
    gather.hdr = {LNPU_OP_GATHER_ROWS, 0, sizeof(gather)};
    gather.table = table;
    gather.indices = indices;
    gather.dst = dst;
    gather.table_dtype = dtype;
    gather.row_len = kK;
    gather.table_rows = kN;
    gather.count = count;
    return gather;
  }

  // Runs `command` on the compute engine with `buffers`; returns the
  // job's error (0: completed).
  template <typename Command>
  int RunOne(const Command& command, std::vector<uint32_t> buffers) {
    const uint64_t fence = Run(DRM_LNPU_ENGINE_COMPUTE,
                               CommandStream().Add(command), std::move(buffers));
    return fence == 0 ? -1 : WaitJob(*file_, fence);
  }

  // Weight element j (0..31) of block b of row c: Q8_0 q, Q4_0 nibble - 8.
  int32_t Weight(size_t c, size_t b, size_t j) const {
    const uint8_t* block = blocks_.data() + (c * kBlocks + b) * block_bytes();
    if (!q4()) return static_cast<int8_t>(block[2 + j]);
    return (j < 16 ? block[2 + j] & 0xF : block[2 + j - 16] >> 4) - 8;
  }
  float Scale(size_t c, size_t b) const {
    uint16_t d;
    std::memcpy(&d, blocks_.data() + (c * kBlocks + b) * block_bytes(), 2);
    return Float16ToFloat(d);
  }

  // dst of the MATMUL in the order of the panel contract
  // (kernel_iface/softnpu/compute/quant_matmul.h), the src rows quantized
  // per block as the device does (QuantizeActivationRows in matmul.cc:
  // d = max|x| / 127, q = nearest-even(x * (1 / d))); *magnitude gets, per
  // element, the sum of the blocks' |products| (for tolerances).
  std::vector<float> Reference(std::vector<float>* magnitude) const {
    std::vector<int8_t> qx(kRows * kK);
    std::vector<float> dx(kRows * kBlocks);
    for (size_t i = 0; i < kRows * kBlocks; ++i) {
      const float* x = src_.data() + i * kQuantBlock;
      float amax = 0.0f;
      for (size_t j = 0; j < kQuantBlock; ++j) {
        amax = std::max(amax, std::fabs(x[j]));
      }
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      for (size_t j = 0; j < kQuantBlock; ++j) {
        qx[i * kQuantBlock + j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
      }
      dx[i] = d;
    }
    std::vector<float> dst(kRows * kN);
    magnitude->assign(kRows * kN, 0.0f);
    for (size_t r = 0; r < kRows; ++r) {
      for (size_t c = 0; c < kN; ++c) {
        float acc = 0.0f;
        for (size_t b = 0; b < kBlocks; ++b) {
          int32_t dot = 0;
          for (size_t j = 0; j < kQuantBlock; ++j) {
            dot += Weight(c, b, j) * qx[(r * kBlocks + b) * kQuantBlock + j];
          }
          const float factor = Scale(c, b) * dx[r * kBlocks + b];
          acc = std::fma(static_cast<float>(dot), factor, acc);
          (*magnitude)[r * kN + c] += std::fabs(static_cast<float>(dot) * factor);
        }
        dst[r * kN + c] = 0.0f + acc;
      }
    }
    return dst;
  }

  uint64_t blocks_bytes_ = 0, p16_bytes_ = 0;
  std::vector<uint8_t> blocks_;  // [kN][kBlocks] blocks of block_dtype()
  std::vector<uint8_t> p16_;     // the same repacked: p16_bytes_
  std::vector<float> src_;       // [kRows][kK]
};

TEST_P(PanelTest, MatmulOfPanelWeightsFollowsThePanelOrderAndMatchesTheBlocks) {
  TestBuffer src = CreateBuffer(*file_, src_.size() * 4);
  TestBuffer plain = CreateBuffer(*file_, blocks_bytes_);
  TestBuffer p16 = CreateBuffer(*file_, p16_bytes_);
  TestBuffer dst = CreateBuffer(*file_, 2 * 4096);
  std::memcpy(src.data, src_.data(), src_.size() * 4);
  std::memcpy(plain.data, blocks_.data(), blocks_bytes_);
  std::memcpy(p16.data, p16_.data(), p16_bytes_);
  const uint64_t out_bytes = uint64_t{kRows} * kN * 4;
  ASSERT_EQ(RunOne(Matmul(src.device_addr, p16.device_addr, dst.device_addr,
                          kN, panel_dtype()),
                   {src.handle, p16.handle, dst.handle}),
            0)
      << npu_->last_fault_message();
  ASSERT_EQ(RunOne(Matmul(src.device_addr, plain.device_addr,
                          dst.device_addr + 4096, kN, block_dtype()),
                   {src.handle, plain.handle, dst.handle}),
            0)
      << npu_->last_fault_message();
  std::vector<float> from_p16(kRows * kN), from_blocks(kRows * kN);
  std::memcpy(from_p16.data(), dst.data, out_bytes);
  std::memcpy(from_blocks.data(), dst.data + 4096, out_bytes);
  // Nothing written past dst (the padding rows of the last panel are not
  // columns).
  for (uint64_t i = out_bytes; i < 4096; ++i) ASSERT_EQ(dst.data[i], 0) << i;

  std::vector<float> magnitude;
  const std::vector<float> expected = Reference(&magnitude);
  for (size_t i = 0; i < kRows * kN; ++i) {
    SCOPED_TRACE(::testing::Message() << "row " << i / kN << " column " << i % kN);
    ASSERT_NE(magnitude[i], 0.0f);
    // Bit for bit: the contract's f32 order on every CPU path.
    EXPECT_EQ(std::bit_cast<uint32_t>(from_p16[i]),
              std::bit_cast<uint32_t>(expected[i]))
        << from_p16[i] << " vs " << expected[i];
    // The block dtype differs only in the order of the f32 scale-and-add
    // steps.
    EXPECT_NEAR(from_p16[i], from_blocks[i], 4e-6f * magnitude[i]);
  }
}

// The operand is whole panels: n = 40 needs 48 rows of storage. A BO sized
// for 32 rows, the weights ending exactly at its end, takes n = 32 but not
// n = 40, nor n = 40 with only the padding of the last panel missing.
TEST_P(PanelTest, WeightOnePanelShortOfItsBufferIsEinvalAndNeverRuns) {
  const uint64_t two_panels = P16MatrixBytes(block_bytes(), 32, kBlocks);
  TestBuffer src = CreateBuffer(*file_, src_.size() * 4);
  TestBuffer weight = CreateBuffer(*file_, two_panels);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  TestBuffer marker = CreateBuffer(*file_, 4096);
  std::memcpy(src.data, src_.data(), src_.size() * 4);
  const uint64_t at = weight.size - two_panels;  // ends at the BO's end
  ASSERT_EQ((weight.device_addr + at) % 64, 0u);
  std::memcpy(weight.data + at, p16_.data(), two_panels);
  const std::vector<uint32_t> buffers = {src.handle, weight.handle,
                                         dst.handle, marker.handle};

  // A COPY first: if any part of the job ran, the marker would show it.
  Submission job;
  job.cmd_handle = cmd_.handle;
  job.bo_handles = buffers;
  job.cmd_size =
      CommandStream()
          .Copy(src.device_addr, marker.device_addr, 64)
          .Add(Matmul(src.device_addr, weight.device_addr + at,
                      dst.device_addr, kN, panel_dtype()))
          .WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  // The MATMUL's weight counted in whole panels: 48 rows of 3 blocks.
  const std::string reads = "reads " + std::to_string(p16_bytes_) + " bytes";
  EXPECT_REJECTION(npu_, AllOf(HasSubstr("command 1"), HasSubstr(reads)));

  // 32 bytes short: every row of n = 40 is there but the last panel's
  // padding is not.
  TestBuffer almost = CreateBuffer(*file_, p16_bytes_);
  const uint64_t almost_at = almost.size - (p16_bytes_ - 32);
  ASSERT_EQ((almost.device_addr + almost_at) % 64, 0u);
  job.bo_handles.push_back(almost.handle);
  job.cmd_size =
      CommandStream()
          .Copy(src.device_addr, marker.device_addr, 64)
          .Add(Matmul(src.device_addr, almost.device_addr + almost_at,
                      dst.device_addr, kN, panel_dtype()))
          .WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, AllOf(HasSubstr("command 1"), HasSubstr(reads)));
  for (int i = 0; i < 4096; ++i) {
    ASSERT_EQ(marker.data[i], 0) << "a rejected job must not run";
    ASSERT_EQ(dst.data[i], 0) << "a rejected job must not run";
  }

  // The two panels it has are enough for n = 32 (and n = 17..32).
  ASSERT_EQ(RunOne(Matmul(src.device_addr, weight.device_addr + at,
                          dst.device_addr, 32, panel_dtype()),
                   buffers),
            0);
  std::vector<float> magnitude;
  const std::vector<float> expected = Reference(&magnitude);
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t c = 0; c < 32; ++c) {
      float got;
      std::memcpy(&got, dst.data + (r * 32 + c) * 4, 4);
      EXPECT_EQ(std::bit_cast<uint32_t>(got),
                std::bit_cast<uint32_t>(expected[r * kN + c]))
          << r << ", " << c;
    }
  }
}

TEST_P(PanelTest, MisalignedWeightIsEinval) {
  TestBuffer src = CreateBuffer(*file_, src_.size() * 4);
  TestBuffer weight = CreateBuffer(*file_, 2 * 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  std::memcpy(src.data, src_.data(), src_.size() * 4);
  std::memcpy(weight.data + 64, p16_.data(), p16_bytes_);
  Submission job;
  job.cmd_handle = cmd_.handle;
  job.bo_handles = {src.handle, weight.handle, dst.handle};
  // 32 bytes in: aligned for the blocks (2) but not for the panels (64).
  job.cmd_size = CommandStream()
                     .Add(Matmul(src.device_addr, weight.device_addr + 32,
                                 dst.device_addr, kN, panel_dtype()))
                     .WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, AllOf(HasSubstr("weight"), HasSubstr("aligned")));
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(dst.data[i], 0) << i;
  // 64 bytes in is aligned.
  ASSERT_EQ(RunOne(Matmul(src.device_addr, weight.device_addr + 64,
                          dst.device_addr, kN, panel_dtype()),
                   job.bo_handles),
            0);
  // A misaligned GATHER_ROWS table likewise.
  TestBuffer indices = CreateBuffer(*file_, 4096);
  job.bo_handles.push_back(indices.handle);
  job.cmd_size = CommandStream()
                     .Add(Gather(weight.device_addr + 32, indices.device_addr,
                                 dst.device_addr, 1, panel_dtype()))
                     .WriteTo(cmd_);
  EXPECT_EQ(Submit(*file_, job), EINVAL);
  EXPECT_REJECTION(npu_, AllOf(HasSubstr("table"), HasSubstr("aligned")));
}

TEST_P(PanelTest, GatherRowsFromAPanelTableEqualsTheBlockTable) {
  TestBuffer plain = CreateBuffer(*file_, blocks_bytes_);
  TestBuffer p16 = CreateBuffer(*file_, p16_bytes_);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4 * 4096);
  std::memcpy(plain.data, blocks_.data(), blocks_bytes_);
  std::memcpy(p16.data, p16_.data(), p16_bytes_);
  // Rows of every panel, both ends of each, the partial last panel's last.
  const int32_t rows[] = {39, 0, 17, 16, 15, 31, 32, 39, 5};
  constexpr uint32_t kCount = sizeof(rows) / sizeof(rows[0]);
  std::memcpy(indices.data, rows, sizeof(rows));
  const uint64_t out_bytes = uint64_t{kCount} * kK * 4;
  ASSERT_EQ(RunOne(Gather(p16.device_addr, indices.device_addr,
                          dst.device_addr, kCount, panel_dtype()),
                   {p16.handle, indices.handle, dst.handle}),
            0)
      << npu_->last_fault_message();
  ASSERT_EQ(RunOne(Gather(plain.device_addr, indices.device_addr,
                          dst.device_addr + 8192, kCount, block_dtype()),
                   {plain.handle, indices.handle, dst.handle}),
            0)
      << npu_->last_fault_message();
  EXPECT_EQ(std::memcmp(dst.data, dst.data + 8192, out_bytes), 0);
  // And both are the weights: d * q (Q4_0: d * (nibble - 8)).
  for (uint32_t i = 0; i < kCount; ++i) {
    for (size_t j = 0; j < kK; ++j) {
      const size_t b = j / kQuantBlock;
      const float want = Scale(rows[i], b) *
                         static_cast<float>(Weight(rows[i], b, j % kQuantBlock));
      float got;
      std::memcpy(&got, dst.data + (i * kK + j) * 4, 4);
      ASSERT_EQ(got, want) << "index " << i << " element " << j;
    }
  }
}

// The padding rows of the last panel are storage, not rows: an index of
// them faults the job like any index past table_rows.
TEST_P(PanelTest, GatherOfAPaddingRowFaults) {
  TestBuffer p16 = CreateBuffer(*file_, p16_bytes_);
  TestBuffer indices = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  std::memcpy(p16.data, p16_.data(), p16_bytes_);
  const int32_t row = kN;  // 40: in the panel, past table_rows
  std::memcpy(indices.data, &row, sizeof(row));
  EXPECT_EQ(RunOne(Gather(p16.device_addr, indices.device_addr,
                          dst.device_addr, 1, panel_dtype()),
                   {p16.handle, indices.handle, dst.handle}),
            -EIO);
  EXPECT_FAULT_MESSAGE(npu_, HasSubstr("ind"));
}

INSTANTIATE_TEST_SUITE_P(PanelDtypes, PanelTest,
                         ::testing::Values(LNPU_DTYPE_Q8_0_P16, LNPU_DTYPE_Q4_0_P16,
                                           LNPU_DTYPE_Q8_0_P16S, LNPU_DTYPE_Q4_0_P16S),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           switch (info.param) {
                             case LNPU_DTYPE_Q4_0_P16: return "Q4_0_P16";
                             case LNPU_DTYPE_Q8_0_P16S: return "Q8_0_P16S";
                             case LNPU_DTYPE_Q4_0_P16S: return "Q4_0_P16S";
                             default: return "Q8_0_P16";
                           }
                         });

// LNPU_DTYPE_Q6_K weights (since 1.6) through real buffer objects: a
// MATMUL of 3 rows, k = 512 (two blocks), n = 5 against double sums of the
// dequantized weights (base/quant_blocks.h) and the device's int8
// activations; weights running past their buffer, a k that is not a
// multiple of 256 and a Q6_K GATHER_ROWS table are EINVAL.
class Q6_KTest : public ExecutionTest {
 protected:
  static constexpr uint32_t kRows = 3, kK = 512, kN = 5;
  static constexpr uint64_t kWeightBytes = uint64_t{kN} * kK / kQ6_KBlock * kQ6_KBlockBytes;

  void SetUp() override {
    ExecutionTest::SetUp();
    if ((::lnpu::softnpu::testing::GetParam(*file_, DRM_LNPU_PARAM_CAPABILITIES) &
         DRM_LNPU_CAP_DTYPE_Q6_K) == 0) {
      GTEST_SKIP() << "the device lacks DRM_LNPU_CAP_DTYPE_Q6_K";
    }
    std::mt19937 rng(1606);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.001f, 0.01f);
    weight_.resize(kWeightBytes);
    for (uint8_t& b : weight_) b = static_cast<uint8_t>(byte(rng));
    for (size_t block = 0; block < kWeightBytes / kQ6_KBlockBytes; ++block) {
      const uint16_t d = FloatToFloat16(scale(rng));
      std::memcpy(weight_.data() + block * kQ6_KBlockBytes + kQ6_KDOffset, &d, 2);
    }
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    src_.resize(kRows * kK);
    for (float& x : src_) x = value(rng);
  }

  static lnpu_cmd_matmul Matmul(uint64_t src, uint64_t weight, uint64_t dst, uint32_t k) {
    return MatmulCommand(src, weight, dst, kRows, k, kN, LNPU_DTYPE_Q6_K);
  }

  // Submits `command` alone on the compute engine: the SUBMIT's result.
  template <typename Command>
  int SubmitOne(const Command& command, std::vector<uint32_t> buffers) {
    Submission job;
    job.cmd_handle = cmd_.handle;
    job.cmd_size = CommandStream().Add(command).WriteTo(cmd_);
    job.bo_handles = std::move(buffers);
    uint64_t fence = 0;
    const int error = Submit(*file_, job, &fence);
    return error != 0 ? error : WaitJob(*file_, fence);
  }

  std::vector<uint8_t> weight_;  // [kN][kK / 256] Q6_K blocks
  std::vector<float> src_;       // [kRows][kK]
};

TEST_F(Q6_KTest, MatmulMatchesTheDequantizedWeights) {
  TestBuffer src = CreateBuffer(*file_, src_.size() * 4);
  TestBuffer weight = CreateBuffer(*file_, kWeightBytes);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  std::memcpy(src.data, src_.data(), src_.size() * 4);
  std::memcpy(weight.data, weight_.data(), kWeightBytes);
  ASSERT_EQ(SubmitOne(Matmul(src.device_addr, weight.device_addr, dst.device_addr, kK),
                      {src.handle, weight.handle, dst.handle}),
            0);
  std::vector<float> w(uint64_t{kN} * kK);
  for (size_t block = 0; block < kWeightBytes / kQ6_KBlockBytes; ++block) {
    DequantizeQ6_KBlock(weight_.data() + block * kQ6_KBlockBytes, w.data() + block * kQ6_KBlock);
  }
  for (size_t r = 0; r < kRows; ++r) {
    // The device's activations: per 32 values d = max|x| / 127, q = round(x / d).
    std::vector<double> x(kK);
    for (size_t b = 0; b < kK / kQuantBlock; ++b) {
      float amax = 0.0f;
      for (size_t j = 0; j < kQuantBlock; ++j) {
        amax = std::max(amax, std::fabs(src_[r * kK + b * kQuantBlock + j]));
      }
      const float d = amax / 127.0f;
      for (size_t j = 0; j < kQuantBlock; ++j) {
        const size_t i = b * kQuantBlock + j;
        x[i] = double(d) * std::nearbyint(src_[r * kK + i] * (1.0f / d));
      }
    }
    for (size_t c = 0; c < kN; ++c) {
      double want = 0, magnitude = 0;
      for (size_t i = 0; i < kK; ++i) {
        want += x[i] * w[c * kK + i];
        magnitude += std::fabs(x[i] * w[c * kK + i]);
      }
      float got;
      std::memcpy(&got, dst.data + (r * kN + c) * 4, 4);
      EXPECT_NEAR(got, want, 1e-5 * magnitude + 1e-6) << "row " << r << " column " << c;
    }
  }
  for (uint64_t i = uint64_t{kRows} * kN * 4; i < 4096; ++i) ASSERT_EQ(dst.data[i], 0) << i;
}

TEST_F(Q6_KTest, ShortWeightBadKAndQ6_KTableAreEinval) {
  TestBuffer src = CreateBuffer(*file_, src_.size() * 4);
  TestBuffer weight = CreateBuffer(*file_, 4096);
  TestBuffer dst = CreateBuffer(*file_, 4096);
  const std::vector<uint32_t> buffers = {src.handle, weight.handle, dst.handle};
  // Weights that end at the buffer's end run; 2 bytes later (still 2-byte
  // aligned) they do not fit.
  const uint64_t at_end = weight.device_addr + weight.size - kWeightBytes;
  EXPECT_EQ(SubmitOne(Matmul(src.device_addr, at_end + 2, dst.device_addr, kK), buffers), EINVAL);
  EXPECT_EQ(SubmitOne(Matmul(src.device_addr, at_end, dst.device_addr, kK), buffers), 0);
  EXPECT_EQ(SubmitOne(Matmul(src.device_addr, weight.device_addr, dst.device_addr, 480), buffers),
            EINVAL);
  lnpu_cmd_gather_rows gather{};
  gather.hdr = {LNPU_OP_GATHER_ROWS, 0, sizeof(gather)};
  gather.table = weight.device_addr;
  gather.indices = src.device_addr;
  gather.dst = dst.device_addr;
  gather.table_dtype = LNPU_DTYPE_Q6_K;
  gather.row_len = 256;
  gather.table_rows = 1;
  gather.count = 1;
  std::memset(src.data, 0, 4);  // index 0
  EXPECT_EQ(SubmitOne(gather, buffers), EINVAL);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
