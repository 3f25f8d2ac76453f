// Command groups (command_set.h): which consecutive commands may run as one
// (JoinsCommandGroup, one test per rule that keeps a command out), and that
// a group leaves memory exactly as its commands run one after another
// (ExecuteCommandGroup against ExecuteCommand in turn).
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "base/quant_blocks.h"
#include "gtest/gtest.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "tests/compute/host_device_memory.h"

namespace lnpu::softnpu::testing {
namespace {

// A Q8_0 weight matrix of n x k with pseudo-random int8 values and f16
// scales near 1/64.
std::vector<uint8_t> Q8Weights(std::mt19937& rng, uint32_t n, uint32_t k) {
  std::vector<uint8_t> weights(size_t{n} * k / kQuantBlock * kQ8_0BlockBytes);
  std::uniform_int_distribution<int> value(-127, 127);
  for (size_t b = 0; b < weights.size(); b += kQ8_0BlockBytes) {
    weights[b] = 0x00;
    weights[b + 1] = 0x24;  // f16 2^-6
    for (size_t i = 2; i < kQ8_0BlockBytes; ++i) {
      weights[b + i] = static_cast<uint8_t>(value(rng));
    }
  }
  return weights;
}

// The Q, K and V projections of a grouped-query attention layer of one
// decode step (or of `rows` batched ones): one src, three weights and dsts.
class CommandGroupTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kK = 256;
  static constexpr uint32_t kN[3] = {256, 64, 64};

  void SetUp() override { Allocate(1); }

  void Allocate(uint32_t rows) {
    rows_ = rows;
    std::uniform_real_distribution<float> dist(-2, 2);
    std::vector<float> src(size_t{rows} * kK);
    for (float& v : src) v = dist(rng_);
    src_ = memory_.Upload(src);
    for (int m = 0; m < 3; ++m) {
      weight_[m] = memory_.Upload(Q8Weights(rng_, kN[m], kK));
      std::vector<float> bias(kN[m]);
      for (float& v : bias) v = dist(rng_);
      bias_[m] = memory_.Upload(bias);
      std::vector<float> old_dst(size_t{rows} * kN[m]);
      for (float& v : old_dst) v = dist(rng_);
      dst_[m] = memory_.Upload(old_dst);
    }
  }

  lnpu_cmd_matmul Projection(int m, uint16_t flags = 0) const {
    auto c = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL, flags);
    c.src = src_;
    c.weight = weight_[m];
    c.bias = (flags & LNPU_MATMUL_BIAS) != 0 ? bias_[m] : 0;
    c.dst = dst_[m];
    c.rows = rows_;
    c.k = kK;
    c.n = kN[m];
    c.weight_dtype = LNPU_DTYPE_Q8_0;
    return c;
  }

  // ValidateCommand's ranges of `command`.
  template <typename Cmd>
  std::vector<OperandAccess> Accesses(const Cmd& command) const {
    std::vector<OperandAccess> accesses;
    const absl::StatusOr<uint32_t> size = ValidateCommand(
        DRM_LNPU_ENGINE_COMPUTE,
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&command), sizeof command),
        &accesses);
    EXPECT_TRUE(size.ok()) << size.status();
    return accesses;
  }

  // Whether `next` joins the group of `group` (in stream order).
  template <typename Cmd>
  bool Joins(const std::vector<lnpu_cmd_matmul>& group, const Cmd& next) const {
    std::vector<OperandAccess> group_accesses;
    for (const lnpu_cmd_matmul& member : group) {
      const std::vector<OperandAccess> a = Accesses(member);
      group_accesses.insert(group_accesses.end(), a.begin(), a.end());
    }
    return JoinsCommandGroup(group[0].hdr, group_accesses, next.hdr, Accesses(next));
  }

  std::mt19937 rng_{77};
  HostDeviceMemory memory_;
  uint32_t rows_ = 0;
  uint64_t src_ = 0;
  uint64_t weight_[3] = {}, bias_[3] = {}, dst_[3] = {};
};

TEST_F(CommandGroupTest, ProjectionsOfOneSrcJoin) {
  EXPECT_TRUE(Joins({Projection(0)}, Projection(1)));
  EXPECT_TRUE(Joins({Projection(0), Projection(1, LNPU_MATMUL_BIAS)},
                    Projection(2, LNPU_MATMUL_ACCUMULATE)));
}

TEST_F(CommandGroupTest, OtherSrcDoesNotJoin) {
  lnpu_cmd_matmul next = Projection(1);
  next.src = memory_.Allocate(size_t{kK} * 4);
  EXPECT_FALSE(Joins({Projection(0)}, next));
}

TEST_F(CommandGroupTest, OtherRowsDoNotJoin) {
  Allocate(2);
  lnpu_cmd_matmul next = Projection(1);
  next.rows = 1;  // the first row of the same src
  EXPECT_FALSE(Joins({Projection(0)}, next));
}

TEST_F(CommandGroupTest, PrefillRowsDoNotJoin) {
  // 64 rows take the GEMM on every path: each matmul runs alone anyway.
  Allocate(64);
  EXPECT_FALSE(Joins({Projection(0)}, Projection(1)));
}

TEST_F(CommandGroupTest, UnquantizedWeightsDoNotJoin) {
  lnpu_cmd_matmul first = Projection(0);
  lnpu_cmd_matmul next = Projection(1);
  first.weight_dtype = next.weight_dtype = LNPU_DTYPE_F32;
  EXPECT_FALSE(Joins({first}, next));
}

TEST_F(CommandGroupTest, OtherKDoesNotJoin) {
  lnpu_cmd_matmul next = Projection(1);
  next.k = kK / 2;  // the first half of each weight row's blocks: still valid
  EXPECT_FALSE(Joins({Projection(0)}, next));
}

TEST_F(CommandGroupTest, OtherOpcodesDoNotJoin) {
  auto norm = MakeCommand<lnpu_cmd_rms_norm>(LNPU_OP_RMS_NORM);
  norm.src = src_;
  norm.weight = bias_[0];
  norm.dst = dst_[0];
  norm.rows = 1;
  norm.dim = kK;
  norm.eps = 1e-5f;
  EXPECT_FALSE(Joins({Projection(0)}, norm));
}

TEST_F(CommandGroupTest, WriteOverAGroupDstDoesNotJoin) {
  lnpu_cmd_matmul next = Projection(1);
  next.dst = dst_[0] + 4 * (kN[0] - 1);  // its first element is the group's last
  EXPECT_FALSE(Joins({Projection(0)}, next));
}

TEST_F(CommandGroupTest, WriteOverAGroupWeightDoesNotJoin) {
  lnpu_cmd_matmul next = Projection(1);
  next.dst = weight_[0];
  EXPECT_FALSE(Joins({Projection(0)}, next));
}

TEST_F(CommandGroupTest, WriteOverALaterMembersBiasDoesNotJoin) {
  // The group's second member reads a bias that `next` would overwrite.
  lnpu_cmd_matmul next = Projection(2);
  next.dst = bias_[1];
  EXPECT_FALSE(Joins({Projection(0), Projection(1, LNPU_MATMUL_BIAS)}, next));
}

TEST_F(CommandGroupTest, ReadOfAGroupWriteDoesNotJoin) {
  // next's bias is the group's output: it must run after the group.
  lnpu_cmd_matmul next = Projection(1, LNPU_MATMUL_BIAS);
  next.bias = dst_[0];
  EXPECT_FALSE(Joins({Projection(0)}, next));
}

TEST_F(CommandGroupTest, ReadOnlySharingJoins) {
  // Two members reading one weight and one bias write only their own dsts.
  lnpu_cmd_matmul next = Projection(0, LNPU_MATMUL_BIAS);
  next.dst = dst_[1];
  next.n = kN[1];
  EXPECT_TRUE(Joins({Projection(0, LNPU_MATMUL_BIAS)}, next));
}

// Decode (1 row) and batched decode (4 rows): every dst byte of the group
// equals that of its commands run one by one.
TEST_F(CommandGroupTest, GroupEqualsItsCommandsInTurn) {
  ComputeContext context(3);
  for (uint32_t rows : {1u, 4u}) {
    SCOPED_TRACE("rows=" + std::to_string(rows));
    Allocate(rows);
    const lnpu_cmd_matmul commands[3] = {Projection(0, LNPU_MATMUL_BIAS), Projection(1),
                                         Projection(2, LNPU_MATMUL_ACCUMULATE)};
    std::vector<std::vector<float>> old_dst(3), want(3);
    for (int m = 0; m < 3; ++m) old_dst[m] = memory_.Download<float>(dst_[m], rows * kN[m]);
    for (int m = 0; m < 3; ++m) {
      ASSERT_TRUE(RunCommand(commands[m], memory_, context).ok());
      want[m] = memory_.Download<float>(dst_[m], rows * kN[m]);
    }
    for (int m = 0; m < 3; ++m) {
      std::memcpy(memory_.Host(dst_[m]), old_dst[m].data(), old_dst[m].size() * 4);
    }
    std::vector<OperandAccess> accesses;
    for (const lnpu_cmd_matmul& c : commands) {
      const std::vector<OperandAccess> a = Accesses(c);
      accesses.insert(accesses.end(), a.begin(), a.end());
    }
    memory_.SetValidatedAccesses(accesses);
    const lnpu_cmd_header* group[3] = {&commands[0].hdr, &commands[1].hdr, &commands[2].hdr};
    ASSERT_TRUE(ExecuteCommandGroup(group, memory_, context).ok());
    for (int m = 0; m < 3; ++m) {
      const std::vector<float> got = memory_.Download<float>(dst_[m], rows * kN[m]);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[m][i]))
            << "member " << m << " dst[" << i << "] = " << got[i] << ", want " << want[m][i];
      }
      EXPECT_NE(got, old_dst[m]);
    }
  }
}

TEST_F(CommandGroupTest, GroupLargerThanTheMaximumIsRefused) {
  const lnpu_cmd_matmul command = Projection(0);
  std::vector<const lnpu_cmd_header*> group(kMaxCommandGroup + 1, &command.hdr);
  ComputeContext context(1);
  const absl::Status status = ExecuteCommandGroup(group, memory_, context);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CommandGroupTest, EmptyGroupIsRefused) {
  ComputeContext context(1);
  const absl::Status status = ExecuteCommandGroup({}, memory_, context);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CommandGroupTest, GroupWithAnotherOpcodeIsRefused) {
  const lnpu_cmd_matmul matmul = Projection(0);
  const auto nop = MakeCommand<lnpu_cmd_nop>(LNPU_OP_NOP);
  const lnpu_cmd_header* group[2] = {&matmul.hdr, &nop.hdr};
  ComputeContext context(1);
  const absl::Status status = ExecuteCommandGroup(group, memory_, context);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("LNPU_OP_NOP"), std::string::npos) << status;
}

TEST_F(CommandGroupTest, ShareOfAMatmulIsItsWeightBytes) {
  EXPECT_EQ(CommandGroupShare(Projection(0).hdr), uint64_t{kN[0]} * kK / 32 * kQ8_0BlockBytes);
  EXPECT_EQ(CommandGroupShare(Projection(1).hdr), uint64_t{kN[1]} * kK / 32 * kQ8_0BlockBytes);
}

}  // namespace
}  // namespace lnpu::softnpu::testing
