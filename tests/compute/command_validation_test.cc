// ValidateCommand: one case per rule of every opcode (each bad field gives
// InvalidArgument naming "<opcode>.<field>"), plus the operand ranges that
// valid commands report (and GATHER_ROWS of Q8_0_P16 and Q4_0_P16 tables run).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/quant_blocks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_iface/softnpu/compute/command_set.h"
#include "tests/compute/host_device_memory.h"

namespace lnpu::softnpu {

// Found by argument-dependent lookup from gMock's matchers.
bool operator==(const OperandAccess& a, const OperandAccess& b) {
  return a.addr == b.addr && a.bytes == b.bytes && a.write == b.write;
}
void PrintTo(const OperandAccess& a, std::ostream* os) {
  *os << "{0x" << std::hex << a.addr << std::dec << ", " << a.bytes << ", "
      << (a.write ? "write" : "read") << "}";
}

namespace {

using ::testing::HasSubstr;
using testing::MakeCommand;

// Device addresses of distinct, non-overlapping 1 MiB operand regions.
constexpr uint64_t kA = 1ull << 20, kB = 2ull << 20, kC = 3ull << 20,
                   kD = 4ull << 20, kE = 5ull << 20, kF = 6ull << 20,
                   kG = 7ull << 20;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

template <typename Cmd>
absl::StatusOr<uint32_t> Validate(const Cmd& cmd, uint32_t engine,
                                  std::vector<OperandAccess>* accesses) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&cmd);
  return ValidateCommand(engine, absl::MakeConstSpan(bytes, sizeof(cmd)),
                         accesses);
}

template <typename Cmd>
struct BadField {
  std::string field;  // expected in the message after "<opcode>."
  std::function<void(Cmd&)> mutate;
};

// `valid` must pass; each mutation of it must fail with InvalidArgument
// naming the opcode and field, and must report no accesses.
template <typename Cmd>
void ExpectEachRejected(const Cmd& valid, const std::string& opcode,
                        const std::vector<BadField<Cmd>>& cases,
                        uint32_t engine = DRM_LNPU_ENGINE_COMPUTE) {
  std::vector<OperandAccess> accesses;
  const auto ok = Validate(valid, engine, &accesses);
  ASSERT_TRUE(ok.ok()) << opcode << ": " << ok.status();
  for (const BadField<Cmd>& bad : cases) {
    Cmd cmd = valid;
    bad.mutate(cmd);
    accesses.clear();
    const auto status = Validate(cmd, engine, &accesses).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << opcode << "." << bad.field << ": " << status;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(opcode + "." + bad.field));
    EXPECT_TRUE(accesses.empty()) << opcode << "." << bad.field;
  }
}

// `cmd` must pass, reporting (among others) the access `expected`.
template <typename Cmd>
void ExpectAccessReported(const Cmd& cmd, uint32_t engine,
                          const OperandAccess& expected) {
  std::vector<OperandAccess> accesses;
  const auto ok = Validate(cmd, engine, &accesses);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT(accesses, ::testing::Contains(expected));
}

// ------------------------------------------------------------- header

TEST(CommandValidationTest, HeaderRules) {
  const auto matmul = [] {
    auto c = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL);
    c.src = kA;
    c.weight = kB;
    c.dst = kC;
    c.rows = c.k = c.n = 4;
    return c;
  }();
  std::vector<OperandAccess> accesses;
  const auto* bytes = reinterpret_cast<const uint8_t*>(&matmul);

  EXPECT_EQ(Validate(matmul, DRM_LNPU_ENGINE_COUNT, &accesses).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ValidateCommand(DRM_LNPU_ENGINE_COMPUTE,
                                          absl::MakeConstSpan(bytes, 4),
                                          &accesses)
                              .status()
                              .message()),
              HasSubstr("header truncated"));
  EXPECT_THAT(std::string(ValidateCommand(DRM_LNPU_ENGINE_COMPUTE,
                                          absl::MakeConstSpan(bytes, 16),
                                          &accesses)
                              .status()
                              .message()),
              HasSubstr("LNPU_OP_MATMUL.hdr.size: command truncated"));

  ExpectEachRejected<lnpu_cmd_matmul>(
      matmul, "LNPU_OP_MATMUL",
      {{"hdr.size", [](auto& c) { c.hdr.size = sizeof(c) + 8; }},
       {"hdr.size", [](auto& c) { c.hdr.size = 8; }},
       {"hdr.flags", [](auto& c) { c.hdr.flags = 1u << 2; }}});
  ExpectEachRejected<lnpu_cmd_matmul>(
      matmul, "command",
      {{"hdr.opcode", [](auto& c) { c.hdr.opcode = LNPU_OP_COUNT; }},
       {"hdr.opcode", [](auto& c) { c.hdr.opcode = 0xffff; }}});
  // Opcodes on the wrong engine.
  EXPECT_THAT(std::string(Validate(matmul, DRM_LNPU_ENGINE_DMA, &accesses)
                              .status()
                              .message()),
              HasSubstr("LNPU_OP_MATMUL.hdr.opcode: not served by engine 1"));
  auto scatter = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS);
  EXPECT_THAT(std::string(Validate(scatter, DRM_LNPU_ENGINE_COMPUTE, &accesses)
                              .status()
                              .message()),
              HasSubstr("LNPU_OP_SCATTER_ROWS.hdr.opcode: not served"));
  for (uint16_t op : {LNPU_OP_GATHER_ROWS, LNPU_OP_RMS_NORM, LNPU_OP_ROPE,
                      LNPU_OP_ATTENTION, LNPU_OP_SWIGLU, LNPU_OP_ADD,
                      LNPU_OP_GEGLU, LNPU_OP_SCALE}) {
    lnpu_cmd_header hdr{op, 0, 0};
    hdr.size = 8;  // the engine check comes before the size check
    const auto* h = reinterpret_cast<const uint8_t*>(&hdr);
    EXPECT_THAT(std::string(ValidateCommand(DRM_LNPU_ENGINE_DMA,
                                            absl::MakeConstSpan(h, 8),
                                            &accesses)
                                .status()
                                .message()),
                HasSubstr("not served by engine 1"))
        << op;
  }
  EXPECT_TRUE(accesses.empty());
  // Flags of opcodes without flags.
  ExpectEachRejected<lnpu_cmd_nop>(
      MakeCommand<lnpu_cmd_nop>(LNPU_OP_NOP), "LNPU_OP_NOP",
      {{"hdr.flags", [](auto& c) { c.hdr.flags = 1; }}},
      DRM_LNPU_ENGINE_DMA);
}

TEST(CommandValidationTest, ReturnsSizeOfFirstCommandOfALongerStream) {
  std::vector<uint8_t> stream(sizeof(lnpu_cmd_nop) + sizeof(lnpu_cmd_copy));
  const auto nop = MakeCommand<lnpu_cmd_nop>(LNPU_OP_NOP);
  std::memcpy(stream.data(), &nop, sizeof(nop));
  std::vector<OperandAccess> accesses;
  const auto size =
      ValidateCommand(DRM_LNPU_ENGINE_DMA, stream, &accesses);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, sizeof(lnpu_cmd_nop));
  EXPECT_TRUE(accesses.empty());
}

// ------------------------------------------------------------- per opcode

TEST(CommandValidationTest, GatherRowsRules) {
  auto v = MakeCommand<lnpu_cmd_gather_rows>(LNPU_OP_GATHER_ROWS);
  v.table = kA;
  v.indices = kB;
  v.dst = kC;
  v.table_dtype = LNPU_DTYPE_F16;
  v.row_len = 8;
  v.table_rows = 10;
  v.count = 3;
  ExpectEachRejected<lnpu_cmd_gather_rows>(
      v, "LNPU_OP_GATHER_ROWS",
      {{"row_len", [](auto& c) { c.row_len = 0; }},
       {"table_rows", [](auto& c) { c.table_rows = 0; }},
       {"count", [](auto& c) { c.count = 0; }},
       {"table_dtype", [](auto& c) { c.table_dtype = LNPU_DTYPE_I32; }},
       {"table_dtype", [](auto& c) { c.table_dtype = 77; }},
       {"table", [](auto& c) { c.table_rows = c.row_len = 0xffffffffu; }},
       {"table", [](auto& c) { c.table = kA + 1; }},
       {"table", [](auto& c) {
          c.table_dtype = LNPU_DTYPE_F32;
          c.table = kA + 2;
        }},
       {"table", [](auto& c) { c.table = ~0ull - 15; }},
       {"indices", [](auto& c) { c.indices = kB + 2; }},
       {"dst", [](auto& c) { c.dst = kC + 2; }},
       {"dst", [](auto& c) { c.dst = kA + 16; }},
       {"dst", [](auto& c) { c.dst = kB - 4; }}});
}

TEST(CommandValidationTest, RmsNormRules) {
  auto v = MakeCommand<lnpu_cmd_rms_norm>(LNPU_OP_RMS_NORM);
  v.src = kA;
  v.weight = kB;
  v.dst = kC;
  v.rows = 3;
  v.dim = 16;
  v.eps = 1e-5f;
  ExpectEachRejected<lnpu_cmd_rms_norm>(
      v, "LNPU_OP_RMS_NORM",
      {{"rows", [](auto& c) { c.rows = 0; }},
       {"dim", [](auto& c) { c.dim = 0; }},
       {"eps", [](auto& c) { c.eps = 0.0f; }},
       {"eps", [](auto& c) { c.eps = -1e-5f; }},
       {"eps", [](auto& c) { c.eps = kNaN; }},
       {"eps", [](auto& c) { c.eps = kInf; }},
       {"pad", [](auto& c) { c.pad = 1; }},
       {"src", [](auto& c) { c.rows = c.dim = 0xffffffffu; }},
       {"src", [](auto& c) { c.src = kA + 2; }},
       {"weight", [](auto& c) { c.weight = kB + 1; }},
       {"dst", [](auto& c) { c.dst = kC + 3; }},
       {"dst", [](auto& c) { c.dst = kA + 4; }},  // partial in-place
       {"dst", [](auto& c) { c.dst = kB; }}});
}

TEST(CommandValidationTest, MatmulRules) {
  auto v = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL, LNPU_MATMUL_BIAS);
  v.src = kA;
  v.weight = kB;
  v.bias = kC;
  v.dst = kD;
  v.rows = 2;
  v.k = 8;
  v.n = 4;
  v.weight_dtype = LNPU_DTYPE_F16;
  ExpectEachRejected<lnpu_cmd_matmul>(
      v, "LNPU_OP_MATMUL",
      {{"rows", [](auto& c) { c.rows = 0; }},
       {"k", [](auto& c) { c.k = 0; }},
       {"n", [](auto& c) { c.n = 0; }},
       {"weight_dtype", [](auto& c) { c.weight_dtype = LNPU_DTYPE_U8; }},
       {"bias", [](auto& c) { c.hdr.flags = LNPU_MATMUL_ACCUMULATE; }},
       {"bias", [](auto& c) { c.bias = kC + 2; }},
       {"src", [](auto& c) { c.src = kA + 2; }},
       {"weight", [](auto& c) { c.weight = kB + 1; }},
       {"weight", [](auto& c) {
          c.weight_dtype = LNPU_DTYPE_F32;
          c.weight = kB + 2;
        }},
       {"weight", [](auto& c) { c.n = c.k = 0xffffffffu; }},
       {"dst", [](auto& c) { c.rows = 0x20000; c.n = 0x40000000; }},
       {"dst", [](auto& c) { c.dst = kD + 1; }},
       {"dst", [](auto& c) { c.dst = kA; }},  // no in-place matmul
       {"dst", [](auto& c) { c.dst = kB + 8; }},
       {"dst", [](auto& c) { c.dst = kC; }},
       {"dst", [](auto& c) { c.dst = ~0ull - 31; }}});
}

// A valid ROPE of 2 rows, 4 heads of 16 with rope_dim 8, in `mode`; with
// LNPU_ROPE_FREQ_FACTORS in `flags` the factors are at kD.
lnpu_cmd_rope ValidRope(uint16_t flags, uint32_t mode) {
  auto v = MakeCommand<lnpu_cmd_rope>(LNPU_OP_ROPE, flags);
  v.src = kA;
  v.dst = kB;
  v.positions = kC;
  if ((flags & LNPU_ROPE_FREQ_FACTORS) != 0) v.freq_factors = kD;
  v.rows = 2;
  v.heads = 4;
  v.head_dim = 16;
  v.rope_dim = 8;
  v.theta_base = 10000.0f;
  v.freq_scale = 1.0f;
  v.mode = mode;
  return v;
}

TEST(CommandValidationTest, RopeRules) {
  const auto v = ValidRope(0, LNPU_ROPE_MODE_NEOX);
  ExpectEachRejected<lnpu_cmd_rope>(
      v, "LNPU_OP_ROPE",
      {{"rows", [](auto& c) { c.rows = 0; }},
       {"heads", [](auto& c) { c.heads = 0; }},
       {"head_dim", [](auto& c) { c.head_dim = 0; }},
       {"rope_dim", [](auto& c) { c.rope_dim = 0; }},
       {"rope_dim", [](auto& c) { c.rope_dim = 7; }},
       {"rope_dim", [](auto& c) { c.rope_dim = 18; }},
       {"theta_base", [](auto& c) { c.theta_base = 0.0f; }},
       {"theta_base", [](auto& c) { c.theta_base = kNaN; }},
       {"freq_scale", [](auto& c) { c.freq_scale = kInf; }},
       {"freq_scale", [](auto& c) { c.freq_scale = -1.0f; }},
       {"mode", [](auto& c) { c.mode = 2; }},
       {"pad", [](auto& c) { c.pad = 3; }},
       {"src", [](auto& c) { c.rows = c.heads = 0xffffffffu; }},
       {"src", [](auto& c) { c.src = kA + 2; }},
       {"positions", [](auto& c) { c.positions = kC + 1; }},
       {"dst", [](auto& c) { c.dst = kA + 64; }},  // partial in-place
       {"dst", [](auto& c) { c.dst = kC; }}});
}

// A valid ATTENTION over 64 slots: 2 rows, 8 heads / 2 KV heads of 16,
// the cache of `kv_dtype` at k_cache / v_cache.
lnpu_cmd_attention ValidAttention(uint32_t kv_dtype, uint64_t k_cache,
                                  uint64_t v_cache) {
  auto v = MakeCommand<lnpu_cmd_attention>(LNPU_OP_ATTENTION);
  v.q = kA;
  v.k_new = kB;
  v.v_new = kC;
  v.k_cache = k_cache;
  v.v_cache = v_cache;
  v.mask = kF;
  v.dst = kG;
  v.rows = 2;
  v.capacity = 64;
  v.heads = 8;
  v.kv_heads = 2;
  v.head_dim = 16;
  v.kv_dtype = kv_dtype;
  v.scale = 0.25f;
  return v;
}

TEST(CommandValidationTest, AttentionRules) {
  const auto v = ValidAttention(LNPU_DTYPE_F32, kD, kE);
  ExpectEachRejected<lnpu_cmd_attention>(
      v, "LNPU_OP_ATTENTION",
      {{"rows", [](auto& c) { c.rows = 0; }},
       {"capacity", [](auto& c) { c.capacity = 0; }},
       {"heads", [](auto& c) { c.heads = 0; }},
       {"kv_heads", [](auto& c) { c.kv_heads = 0; }},
       {"head_dim", [](auto& c) { c.head_dim = 0; }},
       {"heads", [](auto& c) { c.heads = 6; c.kv_heads = 4; }},
       {"kv_dtype", [](auto& c) { c.kv_dtype = LNPU_DTYPE_Q8_0; }},
       {"scale", [](auto& c) { c.scale = kNaN; }},
       {"scale", [](auto& c) { c.scale = -kInf; }},
       {"softcap", [](auto& c) { c.softcap = -1.0f; }},
       {"softcap", [](auto& c) { c.softcap = kInf; }},
       {"softcap", [](auto& c) { c.softcap = kNaN; }},
       {"pad", [](auto& c) { c.pad = 1; }},
       {"positions", [](auto& c) { c.positions = kA; }},
       {"slot_positions", [](auto& c) { c.slot_positions = kA; }},
       {"window", [](auto& c) { c.window = 4; }},
       {"hdr.flags", [](auto& c) { c.hdr.flags = 2; }},
       {"q", [](auto& c) { c.q = kA + 2; }},
       {"k_new", [](auto& c) { c.k_new = kB + 1; }},
       {"v_new", [](auto& c) { c.v_new = kC + 3; }},
       {"k_cache", [](auto& c) { c.k_cache = kD + 2; }},
       {"v_cache", [](auto& c) { c.v_cache = kE + 2; }},
       {"k_cache", [](auto& c) { c.capacity = 0xffffffffu; c.head_dim = 0x100000; }},
       {"dst", [](auto& c) { c.dst = kA; }},
       {"dst", [](auto& c) { c.dst = kF - 64; }},  // overlaps mask
       {"dst", [](auto& c) { c.dst = kE + 4; }}});
}

// Since 1.3: a soft cap >= 0 (-0 included) and the sliding window.
TEST(CommandValidationTest, AttentionSoftcapAndWindowRules) {
  auto capped = ValidAttention(LNPU_DTYPE_F16, kD, kE);
  std::vector<OperandAccess> accesses;
  for (float softcap : {50.0f, -0.0f}) {
    capped.softcap = softcap;
    EXPECT_TRUE(Validate(capped, DRM_LNPU_ENGINE_COMPUTE, &accesses).ok()) << softcap;
  }
  auto v = ValidAttention(LNPU_DTYPE_F32, kD, kE);
  v.hdr.flags = LNPU_ATTENTION_WINDOW;
  v.positions = kF + 4096;
  v.slot_positions = kF + 8192;
  v.window = 512;
  v.softcap = 50.0f;
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE, OperandAccess{kF + 4096, 2 * 4, false});
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE, OperandAccess{kF + 8192, 64 * 4, false});
  ExpectEachRejected<lnpu_cmd_attention>(
      v, "LNPU_OP_ATTENTION",
      {{"window", [](auto& c) { c.window = 0; }},
       {"positions", [](auto& c) { c.positions = kF + 4098; }},
       {"slot_positions", [](auto& c) { c.slot_positions = kF + 8193; }},
       {"slot_positions", [](auto& c) { c.slot_positions = ~0ull - 64; }},
       {"dst", [](auto& c) { c.dst = kF + 8192; }},  // overlaps slot_positions
       {"hdr.size", [](auto& c) { c.hdr.size = LNPU_CMD_ATTENTION_SIZE_1_2 + 8; }}});
}

// A UAPI 1.2 ATTENTION (96 bytes, softcap in place of the pad that had to
// be 0) still validates; with the window flag its missing window reads 0.
TEST(CommandValidationTest, AttentionUapi12SizeAccepted) {
  auto v = ValidAttention(LNPU_DTYPE_F32, kD, kE);
  v.hdr.size = LNPU_CMD_ATTENTION_SIZE_1_2;
  v.window = 7;  // beyond hdr.size: never read
  const auto* bytes = reinterpret_cast<const uint8_t*>(&v);
  std::vector<OperandAccess> accesses;
  const auto size = ValidateCommand(DRM_LNPU_ENGINE_COMPUTE,
                                    absl::MakeConstSpan(bytes, LNPU_CMD_ATTENTION_SIZE_1_2),
                                    &accesses);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, uint32_t{LNPU_CMD_ATTENTION_SIZE_1_2});
  v.hdr.flags = LNPU_ATTENTION_WINDOW;
  const auto status =
      ValidateCommand(DRM_LNPU_ENGINE_COMPUTE,
                      absl::MakeConstSpan(bytes, LNPU_CMD_ATTENTION_SIZE_1_2), &accesses)
          .status();
  EXPECT_THAT(std::string(status.message()), HasSubstr("LNPU_OP_ATTENTION.window"));
}


TEST(CommandValidationTest, ScaleRules) {
  auto v = MakeCommand<lnpu_cmd_scale>(LNPU_OP_SCALE);
  v.src = kA;
  v.dst = kA;  // in place
  v.count = 100;
  v.scale = 48.0f;
  v.softcap = 30.0f;
  ExpectEachRejected<lnpu_cmd_scale>(
      v, "LNPU_OP_SCALE",
      {{"count", [](auto& c) { c.count = 0; }},
       {"scale", [](auto& c) { c.scale = kNaN; }},
       {"scale", [](auto& c) { c.scale = kInf; }},
       {"softcap", [](auto& c) { c.softcap = -2.0f; }},
       {"softcap", [](auto& c) { c.softcap = kNaN; }},
       {"pad", [](auto& c) { c.pad = 1; }},
       {"src", [](auto& c) { c.src = kA + 2; }},
       {"dst", [](auto& c) { c.dst = kA + 8; }},  // partial in-place
       {"dst", [](auto& c) { c.dst = ~0ull - 100; }},
       {"hdr.flags", [](auto& c) { c.hdr.flags = 1; }}});
}

// SWIGLU and GEGLU (since 1.3) share their layout and rules.
template <typename Cmd>
void ExpectGatedActivationRules(uint16_t opcode, const std::string& name) {
  auto v = MakeCommand<Cmd>(opcode);
  v.gate = kA;
  v.up = kB;
  v.dst = kC;
  v.count = 100;
  ExpectEachRejected<Cmd>(
      v, name,
      {{"count", [](auto& c) { c.count = 0; }},
       {"pad", [](auto& c) { c.pad = 1; }},
       {"gate", [](auto& c) { c.gate = kA + 2; }},
       {"up", [](auto& c) { c.up = kB + 1; }},
       {"dst", [](auto& c) { c.dst = kC + 2; }},
       {"dst", [](auto& c) { c.dst = kA + 4; }},  // partial in-place
       {"dst", [](auto& c) { c.dst = kB - 4; }},
       {"hdr.flags", [](auto& c) { c.hdr.flags = 1; }}});
  v.dst = kA;  // exactly in place
  std::vector<OperandAccess> accesses;
  EXPECT_TRUE(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses).ok()) << name;
}

TEST(CommandValidationTest, SwigluRules) {
  ExpectGatedActivationRules<lnpu_cmd_swiglu>(LNPU_OP_SWIGLU, "LNPU_OP_SWIGLU");
}

TEST(CommandValidationTest, GegluRules) {
  ExpectGatedActivationRules<lnpu_cmd_geglu>(LNPU_OP_GEGLU, "LNPU_OP_GEGLU");
}

TEST(CommandValidationTest, AddRules) {
  auto v = MakeCommand<lnpu_cmd_add>(LNPU_OP_ADD);
  v.a = kA;
  v.b = kB;
  v.dst = kC;
  v.count = 100;
  ExpectEachRejected<lnpu_cmd_add>(
      v, "LNPU_OP_ADD",
      {{"count", [](auto& c) { c.count = 0; }},
       {"pad", [](auto& c) { c.pad = 5; }},
       {"a", [](auto& c) { c.a = kA + 2; }},
       {"b", [](auto& c) { c.b = ~0ull - 3; }},
       {"dst", [](auto& c) { c.dst = kC + 1; }},
       {"dst", [](auto& c) { c.dst = kB + 4; }}});
}

TEST(CommandValidationTest, CopyRules) {
  auto v = MakeCommand<lnpu_cmd_copy>(LNPU_OP_COPY);
  v.src = kA;
  v.dst = kA + 3;  // overlapping copies are memmove, and bytes unaligned
  v.bytes = 101;
  for (uint32_t engine : {DRM_LNPU_ENGINE_COMPUTE, DRM_LNPU_ENGINE_DMA}) {
    ExpectEachRejected<lnpu_cmd_copy>(
        v, "LNPU_OP_COPY",
        {{"bytes", [](auto& c) { c.bytes = 0; }},
         {"bytes", [](auto& c) { c.bytes = (1ull << 48) + 1; }},
         {"src", [](auto& c) { c.src = ~0ull - 50; }},
         {"dst", [](auto& c) { c.dst = ~0ull; }}},
        engine);
  }
}

TEST(CommandValidationTest, ScatterRowsRules) {
  auto v = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS);
  v.src = kA;
  v.dst = kB;
  v.indices = kC;
  v.row_bytes = 256;
  v.rows = 3;
  v.blocks = 4;
  v.dst_rows = 16;
  v.src_block_stride = 3 * 256;
  v.dst_block_stride = 16 * 256;
  ExpectEachRejected<lnpu_cmd_scatter_rows>(
      v, "LNPU_OP_SCATTER_ROWS",
      {{"row_bytes", [](auto& c) { c.row_bytes = 0; }},
       {"rows", [](auto& c) { c.rows = 0; }},
       {"blocks", [](auto& c) { c.blocks = 0; }},
       {"dst_rows", [](auto& c) { c.dst_rows = 0; }},
       {"src_block_stride", [](auto& c) { c.src_block_stride = 3 * 256 - 1; }},
       {"dst_block_stride", [](auto& c) { c.dst_block_stride = 0; }},
       {"dst", [](auto& c) { c.dst_block_stride = 1ull << 47; }},
       {"src", [](auto& c) { c.src_block_stride = ~0ull; }},
       {"indices", [](auto& c) { c.indices = kC + 2; }},
       {"dst", [](auto& c) { c.dst = kA + 100; }},
       {"dst", [](auto& c) { c.dst = kC - 64; }}},
      DRM_LNPU_ENGINE_DMA);
}

// ------------------------------------- quantized weights, F16 KV, RoPE factors

TEST(CommandValidationTest, MatmulQuantizedWeightRules) {
  for (uint32_t dtype : {LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0}) {
    auto v = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL);
    v.src = kA;
    v.weight = kB + 2;  // blocks start with an f16 scale: 2-byte aligned
    v.dst = kD;
    v.rows = 2;
    v.k = 64;
    v.n = 3;
    v.weight_dtype = dtype;
    ExpectEachRejected<lnpu_cmd_matmul>(
        v, "LNPU_OP_MATMUL",
        {{"k", [](auto& c) { c.k = 48; }},
         {"k", [](auto& c) { c.k = 16; }},
         {"weight", [](auto& c) { c.weight = kB + 1; }},
         {"weight", [](auto& c) { c.n = 0xffffffffu; c.k = 0xffffffe0u; }},
         {"dst", [](auto& c) { c.dst = kB + 64; }}});
    const uint64_t block = dtype == LNPU_DTYPE_Q8_0 ? 34 : 18;
    ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                         OperandAccess{kB + 2, 3 * 2 * block, false});
  }
}

TEST(CommandValidationTest, GatherRowsQuantizedTableRules) {
  for (uint32_t dtype : {LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0}) {
    auto v = MakeCommand<lnpu_cmd_gather_rows>(LNPU_OP_GATHER_ROWS);
    v.table = kA;
    v.indices = kB;
    v.dst = kC;
    v.table_dtype = dtype;
    v.row_len = 96;
    v.table_rows = 10;
    v.count = 3;
    ExpectEachRejected<lnpu_cmd_gather_rows>(
        v, "LNPU_OP_GATHER_ROWS",
        {{"row_len", [](auto& c) { c.row_len = 95; }},
         {"table", [](auto& c) { c.table = kA + 1; }}});
    const uint64_t block = dtype == LNPU_DTYPE_Q8_0 ? 34 : 18;
    ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                         OperandAccess{kA, 10 * 3 * block, false});
  }
}

// Since 1.4: LNPU_DTYPE_Q8_0_P16 weights, stored in whole panels of 16 rows
// (n = 17 takes 32 rows' worth of bytes), 64-byte aligned.
lnpu_cmd_matmul ValidP16Matmul() {
  auto v = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL);
  v.src = kA;
  v.weight = kB;
  v.dst = kD;
  v.rows = 2;
  v.k = 64;
  v.n = 17;
  v.weight_dtype = LNPU_DTYPE_Q8_0_P16;
  return v;
}
constexpr uint64_t kP16WeightBytes = 32 * 2 * 34;  // ValidP16Matmul's

TEST(CommandValidationTest, MatmulQ8_0P16WeightIsWholePanels) {
  auto v = ValidP16Matmul();
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kB, kP16WeightBytes, false});
  v.n = 16;  // exactly one panel
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kB, 16 * 2 * 34, false});
  v.n = 1;  // one row still takes a whole panel
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kB, 16 * 2 * 34, false});
  // Another operand may start right after the last (padded) panel.
  v = ValidP16Matmul();
  v.dst = kB + kP16WeightBytes;
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kB, kP16WeightBytes, false});
  // The highest weight that fits below the top of the address space.
  v = ValidP16Matmul();
  v.weight = 0 - kP16WeightBytes - 64;
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{v.weight, kP16WeightBytes, false});
}

TEST(CommandValidationTest, MatmulQ8_0P16WeightShortOfWholePanelsRejected) {
  // Where 17 rows of Q8_0 (1156 bytes) would fit but 2 panels do not.
  ExpectEachRejected<lnpu_cmd_matmul>(
      ValidP16Matmul(), "LNPU_OP_MATMUL",
      {{"weight", [](auto& c) { c.weight = 0 - kP16WeightBytes; }},
       {"dst", [](auto& c) { c.dst = kB + kP16WeightBytes - 4; }},
       {"dst", [](auto& c) { c.dst = kB + 17 * 2 * 34; }}});
  std::vector<OperandAccess> accesses;
  auto v = ValidP16Matmul();
  v.weight = 0 - kP16WeightBytes;
  EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses)
                              .status()
                              .message()),
              HasSubstr("LNPU_OP_MATMUL.weight: range wraps around"));
  v = ValidP16Matmul();
  v.dst = kB + kP16WeightBytes - 4;
  EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses)
                              .status()
                              .message()),
              HasSubstr("overlaps weight"));
  // Panels beyond 2^48 bytes: the size check says how rows are counted.
  v = ValidP16Matmul();
  v.n = 0xffffffffu;
  v.k = 0xffffffe0u;
  EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses)
                              .status()
                              .message()),
              HasSubstr("whole panels of 16"));
  EXPECT_TRUE(accesses.empty());
}

TEST(CommandValidationTest, MatmulQ8_0P16WeightMisalignedRejected) {
  ExpectEachRejected<lnpu_cmd_matmul>(
      ValidP16Matmul(), "LNPU_OP_MATMUL",
      {{"weight", [](auto& c) { c.weight = kB + 2; }},  // enough for Q8_0
       {"weight", [](auto& c) { c.weight = kB + 32; }},
       {"weight", [](auto& c) { c.weight = kB + 1; }}});
  auto v = ValidP16Matmul();
  v.weight = kB + 32;
  std::vector<OperandAccess> accesses;
  EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses)
                              .status()
                              .message()),
              HasSubstr("LNPU_DTYPE_Q8_0_P16 panel alignment of 64"));
}

TEST(CommandValidationTest, MatmulQ8_0P16KNotWholeBlocksRejected) {
  ExpectEachRejected<lnpu_cmd_matmul>(
      ValidP16Matmul(), "LNPU_OP_MATMUL",
      {{"k", [](auto& c) { c.k = 48; }},
       {"k", [](auto& c) { c.k = 16; }},
       {"k", [](auto& c) { c.k = 65; }}});
  auto v = ValidP16Matmul();
  v.k = 48;
  std::vector<OperandAccess> accesses;
  EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses)
                              .status()
                              .message()),
              HasSubstr("48 is not a multiple of 32"));
}

// A GATHER_ROWS table of 37 rows of 64: 3 panels.
lnpu_cmd_gather_rows ValidP16Gather() {
  auto v = MakeCommand<lnpu_cmd_gather_rows>(LNPU_OP_GATHER_ROWS);
  v.table = kA;
  v.indices = kB;
  v.dst = kC;
  v.table_dtype = LNPU_DTYPE_Q8_0_P16;
  v.row_len = 64;
  v.table_rows = 37;
  v.count = 3;
  return v;
}
constexpr uint64_t kP16TableBytes = 48 * 2 * 34;  // ValidP16Gather's

TEST(CommandValidationTest, GatherRowsQ8_0P16TableIsWholePanels) {
  auto v = ValidP16Gather();
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kA, kP16TableBytes, false});
  v.dst = kA + kP16TableBytes;
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kA, kP16TableBytes, false});
  v = ValidP16Gather();
  v.table = 0 - kP16TableBytes - 64;
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{v.table, kP16TableBytes, false});
}

TEST(CommandValidationTest, GatherRowsQ8_0P16TableRules) {
  ExpectEachRejected<lnpu_cmd_gather_rows>(
      ValidP16Gather(), "LNPU_OP_GATHER_ROWS",
      {{"row_len", [](auto& c) { c.row_len = 48; }},
       {"row_len", [](auto& c) { c.row_len = 95; }},
       {"table", [](auto& c) { c.table = kA + 2; }},
       {"table", [](auto& c) { c.table = kA + 32; }},
       {"table", [](auto& c) { c.table = 0 - kP16TableBytes; }},
       {"table", [](auto& c) {
          c.table_rows = 0xffffffffu;
          c.row_len = 0xffffffe0u;
        }},
       {"dst", [](auto& c) { c.dst = kA + kP16TableBytes - 4; }},
       {"dst", [](auto& c) { c.dst = kA + 37 * 2 * 34; }}});
}

// Weights and tables only: never a KV cache.
TEST(CommandValidationTest, Q8_0P16IsNoKvCacheDtype) {
  ExpectEachRejected<lnpu_cmd_attention>(
      ValidAttention(LNPU_DTYPE_F32, kD, kE), "LNPU_OP_ATTENTION",
      {{"kv_dtype", [](auto& c) { c.kv_dtype = LNPU_DTYPE_Q8_0_P16; }}});
}

// Rows gathered out of a panel table (block_dtype LNPU_DTYPE_Q8_0 or _Q4_0,
// random blocks, 37 rows of 96), among them rows of its last, partial
// panel, are bit for bit those of the same table in block_dtype, and the
// dequantized elements 5 and 21 of the rows asked for.
void ExpectPanelGatherMatchesBlocks(uint32_t block_dtype, uint32_t panel_dtype) {
  constexpr uint32_t kRows = 37, kRowLen = 96, kBlocks = kRowLen / 32;
  const bool q4 = block_dtype == LNPU_DTYPE_Q4_0;
  const size_t block_bytes = q4 ? kQ4_0BlockBytes : kQ8_0BlockBytes;
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> blocks(size_t{kRows} * kBlocks * block_bytes);
  for (size_t b = 0; b < size_t{kRows} * kBlocks; ++b) {
    uint8_t* block = blocks.data() + b * block_bytes;
    const uint16_t d = FloatToFloat16(scale(rng));
    std::memcpy(block, &d, 2);
    for (size_t i = 2; i < block_bytes; ++i) block[i] = static_cast<uint8_t>(byte(rng));
  }
  std::vector<uint8_t> panels(P16MatrixBytes(block_bytes, kRows, kBlocks));
  const P16Scales scales =
      panel_dtype == LNPU_DTYPE_Q8_0_P16S || panel_dtype == LNPU_DTYPE_Q4_0_P16S
          ? P16Scales::kAfterPair
          : P16Scales::kAfterPanel;
  RepackToP16(block_bytes, scales, blocks.data(), kRows, kBlocks, panels.data());
  const std::vector<int32_t> indices = {36, 0, 15, 16, 31, 32, 35, 7, 36};

  testing::HostDeviceMemory memory;
  ComputeContext context(1);
  std::vector<std::vector<float>> gathered;
  for (uint32_t dtype : {block_dtype, panel_dtype}) {
    auto cmd = MakeCommand<lnpu_cmd_gather_rows>(LNPU_OP_GATHER_ROWS);
    // Exactly the bytes each dtype needs (whole panels for the panel dtype).
    cmd.table = memory.Upload(dtype == block_dtype ? blocks : panels);
    cmd.indices = memory.Upload(indices);
    cmd.dst = memory.Allocate(indices.size() * kRowLen * 4);
    cmd.table_dtype = dtype;
    cmd.row_len = kRowLen;
    cmd.table_rows = kRows;
    cmd.count = static_cast<uint32_t>(indices.size());
    ASSERT_TRUE(testing::RunCommand(cmd, memory, context).ok()) << dtype;
    gathered.push_back(memory.Download<float>(cmd.dst, indices.size() * kRowLen));
  }
  ASSERT_EQ(gathered[0].size(), gathered[1].size());
  EXPECT_EQ(0, std::memcmp(gathered[0].data(), gathered[1].data(),
                           gathered[0].size() * sizeof(float)));
  // Elements 5 and 21: Q8_0 d * q; Q4_0 d * (nibble - 8), the low and the
  // high nibble of byte 5.
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint8_t* block = blocks.data() + size_t(indices[i]) * kBlocks * block_bytes;
    uint16_t half;
    std::memcpy(&half, block, 2);
    const float d = Float16ToFloat(half);
    const float want5 = q4 ? d * ((block[2 + 5] & 0xF) - 8) : d * static_cast<int8_t>(block[2 + 5]);
    const float want21 =
        q4 ? d * ((block[2 + 5] >> 4) - 8) : d * static_cast<int8_t>(block[2 + 21]);
    EXPECT_EQ(gathered[1][i * kRowLen + 5], want5) << "index " << indices[i];
    EXPECT_EQ(gathered[1][i * kRowLen + 21], want21) << "index " << indices[i];
  }
}

TEST(CommandValidationTest, GatherRowsQ8_0P16MatchesQ8_0) {
  ExpectPanelGatherMatchesBlocks(LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q8_0_P16);
}

// Since 1.5: LNPU_DTYPE_Q4_0_P16 weights and tables, the Q4_0 blocks in
// whole panels of 16 rows (18 bytes per block and row), 64-byte aligned;
// since 1.7: LNPU_DTYPE_Q8_0_P16S / _Q4_0_P16S, the _P16 panels with their
// scales in the quant stream, with the sizes, alignment and rules of the
// _P16 types. Each case below runs for all three.
struct PanelDtypeCase {
  uint32_t dtype;
  uint32_t block_dtype;
  uint64_t block_bytes;  // per block and row
  const char* name;
};
constexpr PanelDtypeCase kMorePanelDtypes[] = {
    {LNPU_DTYPE_Q4_0_P16, LNPU_DTYPE_Q4_0, 18, "LNPU_DTYPE_Q4_0_P16"},
    {LNPU_DTYPE_Q8_0_P16S, LNPU_DTYPE_Q8_0, 34, "LNPU_DTYPE_Q8_0_P16S"},
    {LNPU_DTYPE_Q4_0_P16S, LNPU_DTYPE_Q4_0, 18, "LNPU_DTYPE_Q4_0_P16S"},
};

TEST(CommandValidationTest, MatmulPanelWeightsAreWholePanels) {
  for (const PanelDtypeCase& t : kMorePanelDtypes) {
    SCOPED_TRACE(t.name);
    auto v = ValidP16Matmul();
    v.weight_dtype = t.dtype;
    ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                         OperandAccess{kB, 32 * 2 * t.block_bytes, false});
    v.n = 1;  // one row still takes a whole panel
    ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                         OperandAccess{kB, 16 * 2 * t.block_bytes, false});
  }
}

TEST(CommandValidationTest, MatmulPanelWeightRules) {
  for (const PanelDtypeCase& t : kMorePanelDtypes) {
    SCOPED_TRACE(t.name);
    const uint64_t bytes = t.block_bytes;
    auto valid = ValidP16Matmul();
    valid.weight_dtype = t.dtype;
    ExpectEachRejected<lnpu_cmd_matmul>(
        valid, "LNPU_OP_MATMUL",
        {{"weight", [](auto& c) { c.weight = kB + 2; }},  // enough for the block dtype
         {"weight", [](auto& c) { c.weight = kB + 32; }},
         {"weight", [bytes](auto& c) { c.weight = 0 - 32 * 2 * bytes; }},
         {"dst", [bytes](auto& c) { c.dst = kB + 32 * 2 * bytes - 4; }},
         {"dst", [bytes](auto& c) { c.dst = kB + 17 * 2 * bytes; }},  // 17 block rows' end
         {"k", [](auto& c) { c.k = 48; }}});
    auto v = valid;
    v.weight = kB + 32;
    std::vector<OperandAccess> accesses;
    EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses).status().message()),
                HasSubstr(std::string(t.name) + " panel alignment of 64"));
    v = valid;
    v.n = 0xffffffffu;
    v.k = 0xffffffe0u;
    v.weight = 64;
    EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses).status().message()),
                HasSubstr("whole panels of 16"));
  }
}

TEST(CommandValidationTest, GatherRowsPanelTableRules) {
  for (const PanelDtypeCase& t : kMorePanelDtypes) {
    SCOPED_TRACE(t.name);
    const uint64_t bytes = t.block_bytes;
    auto valid = ValidP16Gather();
    valid.table_dtype = t.dtype;
    ExpectAccessReported(valid, DRM_LNPU_ENGINE_COMPUTE,
                         OperandAccess{kA, 48 * 2 * bytes, false});
    ExpectEachRejected<lnpu_cmd_gather_rows>(
        valid, "LNPU_OP_GATHER_ROWS",
        {{"row_len", [](auto& c) { c.row_len = 48; }},
         {"table", [](auto& c) { c.table = kA + 2; }},
         {"table", [bytes](auto& c) { c.table = 0 - 48 * 2 * bytes; }},
         {"dst", [bytes](auto& c) { c.dst = kA + 37 * 2 * bytes; }}});
  }
}

TEST(CommandValidationTest, PanelDtypesAreNoKvCacheDtype) {
  for (const PanelDtypeCase& t : kMorePanelDtypes) {
    SCOPED_TRACE(t.name);
    const uint32_t dtype = t.dtype;
    ExpectEachRejected<lnpu_cmd_attention>(
        ValidAttention(LNPU_DTYPE_F32, kD, kE), "LNPU_OP_ATTENTION",
        {{"kv_dtype", [dtype](auto& c) { c.kv_dtype = dtype; }}});
  }
}

TEST(CommandValidationTest, GatherRowsPanelTablesMatchBlocks) {
  for (const PanelDtypeCase& t : kMorePanelDtypes) {
    SCOPED_TRACE(t.name);
    ExpectPanelGatherMatchesBlocks(t.block_dtype, t.dtype);
  }
}

// Since 1.6: LNPU_DTYPE_Q6_K matmul weights, 210 bytes per 256 elements,
// 2-byte aligned; never a table or a KV cache.
lnpu_cmd_matmul ValidQ6_KMatmul() {
  auto v = MakeCommand<lnpu_cmd_matmul>(LNPU_OP_MATMUL);
  v.src = kA;
  v.weight = kB;
  v.dst = kD;
  v.rows = 2;
  v.k = 512;
  v.n = 17;
  v.weight_dtype = LNPU_DTYPE_Q6_K;
  return v;
}

TEST(CommandValidationTest, MatmulQ6_KWeightIsWholeBlocks) {
  ExpectAccessReported(ValidQ6_KMatmul(), DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kB, 17 * 2 * 210, false});
}

TEST(CommandValidationTest, MatmulQ6_KRules) {
  ExpectEachRejected<lnpu_cmd_matmul>(
      ValidQ6_KMatmul(), "LNPU_OP_MATMUL",
      {{"k", [](auto& c) { c.k = 480; }},  // whole 32-blocks, not 256-blocks
       {"k", [](auto& c) { c.k = 32; }},
       {"weight", [](auto& c) { c.weight = kB + 1; }},
       {"weight", [](auto& c) { c.weight = 0 - 17 * 2 * 210 + 2; }},
       {"dst", [](auto& c) { c.dst = kB + 17 * 2 * 210 - 4; }}});
  auto v = ValidQ6_KMatmul();
  v.k = 480;
  std::vector<OperandAccess> accesses;
  EXPECT_THAT(std::string(Validate(v, DRM_LNPU_ENGINE_COMPUTE, &accesses).status().message()),
              HasSubstr("multiple of 256"));
}

TEST(CommandValidationTest, Q6_KIsNoTableOrKvCacheDtype) {
  auto gather = ValidP16Gather();
  gather.table_dtype = LNPU_DTYPE_Q6_K;
  gather.row_len = 256;
  std::vector<OperandAccess> accesses;
  EXPECT_THAT(std::string(Validate(gather, DRM_LNPU_ENGINE_COMPUTE, &accesses).status().message()),
              HasSubstr("MATMUL weight type only"));
  ExpectEachRejected<lnpu_cmd_attention>(
      ValidAttention(LNPU_DTYPE_F32, kD, kE), "LNPU_OP_ATTENTION",
      {{"kv_dtype", [](auto& c) { c.kv_dtype = LNPU_DTYPE_Q6_K; }}});
}

TEST(CommandValidationTest, AttentionF16CacheRules) {
  // F16: 2-byte alignment suffices
  const auto v = ValidAttention(LNPU_DTYPE_F16, kD + 2, kE + 6);
  ExpectEachRejected<lnpu_cmd_attention>(
      v, "LNPU_OP_ATTENTION",
      {{"k_cache", [](auto& c) { c.k_cache = kD + 1; }},
       {"v_cache", [](auto& c) { c.v_cache = kE + 3; }},
       {"kv_dtype", [](auto& c) { c.kv_dtype = LNPU_DTYPE_Q4_0; }}});
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kD + 2, 64 * 2 * 16 * 2, false});
}

TEST(CommandValidationTest, ScatterRowsF32ToF16Rules) {
  auto v = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS,
                                              LNPU_SCATTER_F32_TO_F16);
  v.src = kA;
  v.dst = kB + 2;
  v.indices = kC;
  v.row_bytes = 256;  // 64 F32 in, 128 bytes of F16 out
  v.rows = 3;
  v.blocks = 4;
  v.dst_rows = 16;
  v.src_block_stride = 3 * 256;
  v.dst_block_stride = 16 * 128;  // enough for half-size rows
  ExpectEachRejected<lnpu_cmd_scatter_rows>(
      v, "LNPU_OP_SCATTER_ROWS",
      {{"row_bytes", [](auto& c) { c.row_bytes = 258; }},
       {"hdr.flags", [](auto& c) { c.hdr.flags = 1u << 2; }},
       {"group_len", [](auto& c) { c.group_len = 16; }},
       {"dst_block_stride", [](auto& c) { c.dst_block_stride = 16 * 128 - 2; }},
       {"dst_block_stride", [](auto& c) { c.dst_block_stride = 16 * 128 + 1; }},
       {"src_block_stride", [](auto& c) { c.src_block_stride = 3 * 256 + 2; }},
       {"src", [](auto& c) { c.src = kA + 2; }},
       {"dst", [](auto& c) { c.dst = kB + 1; }}},
      DRM_LNPU_ENGINE_DMA);
  ExpectAccessReported(v, DRM_LNPU_ENGINE_DMA,
                       OperandAccess{kB + 2, 3 * 16 * 128 + 16 * 128, true});
}

TEST(CommandValidationTest, AttentionI8CacheRules) {
  // f32 scales: 4-byte alignment
  const auto v = ValidAttention(LNPU_DTYPE_I8, kD + 4, kE + 8);
  ExpectEachRejected<lnpu_cmd_attention>(
      v, "LNPU_OP_ATTENTION",
      {{"head_dim", [](auto& c) { c.head_dim = 18; }},
       {"k_cache", [](auto& c) { c.k_cache = kD + 2; }},
       {"v_cache", [](auto& c) { c.v_cache = kE + 1; }},
       {"kv_dtype", [](auto& c) { c.kv_dtype = LNPU_DTYPE_I8 + 1; }}});
  // Per slot and kv head: an f32 scale and 16 int8 values.
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kE + 8, 64 * 2 * (4 + 16), false});
}

TEST(CommandValidationTest, ScatterRowsF32ToI8Rules) {
  auto v = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS,
                                              LNPU_SCATTER_F32_TO_I8);
  v.src = kA;
  v.dst = kB + 4;
  v.indices = kC;
  v.row_bytes = 128;  // 32 F32 in: 2 groups of 16, 2 * (4 + 16) bytes out
  v.group_len = 16;
  v.rows = 3;
  v.blocks = 4;
  v.dst_rows = 16;
  v.src_block_stride = 3 * 128;
  v.dst_block_stride = 16 * 40;
  ExpectEachRejected<lnpu_cmd_scatter_rows>(
      v, "LNPU_OP_SCATTER_ROWS",
      {{"hdr.flags", [](auto& c) { c.hdr.flags |= LNPU_SCATTER_F32_TO_F16; }},
       {"group_len", [](auto& c) { c.hdr.flags = 0; }},
       {"group_len", [](auto& c) { c.group_len = 0; }},
       {"group_len", [](auto& c) { c.group_len = 6; }},
       {"group_len", [](auto& c) { c.group_len = 12; }},  // 32 % 12 != 0
       {"row_bytes", [](auto& c) { c.row_bytes = 130; }},
       {"pad", [](auto& c) { c.pad = 1; }},
       {"dst_block_stride", [](auto& c) { c.dst_block_stride = 16 * 40 - 4; }},
       {"dst_block_stride", [](auto& c) { c.dst_block_stride = 16 * 40 + 2; }},
       {"src", [](auto& c) { c.src = kA + 2; }},
       {"dst", [](auto& c) { c.dst = kB + 2; }}},
      DRM_LNPU_ENGINE_DMA);
  ExpectAccessReported(v, DRM_LNPU_ENGINE_DMA,
                       OperandAccess{kB + 4, 3 * 16 * 40 + 16 * 40, true});
}

// A UAPI 1.1 SCATTER_ROWS (64 bytes, before group_len) stays valid and
// reads as group_len 0; other sizes are rejected.
TEST(CommandValidationTest, ScatterRowsUapi11SizeAccepted) {
  auto v = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS);
  v.src = kA;
  v.dst = kB;
  v.indices = kC;
  v.row_bytes = 16;
  v.rows = 2;
  v.blocks = 1;
  v.dst_rows = 4;
  v.hdr.size = LNPU_CMD_SCATTER_ROWS_SIZE_1_1;
  v.group_len = 7;  // beyond hdr.size: never read
  const auto* bytes = reinterpret_cast<const uint8_t*>(&v);
  std::vector<OperandAccess> accesses;
  const auto size = ValidateCommand(
      DRM_LNPU_ENGINE_DMA,
      absl::MakeConstSpan(bytes, LNPU_CMD_SCATTER_ROWS_SIZE_1_1), &accesses);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, uint32_t{LNPU_CMD_SCATTER_ROWS_SIZE_1_1});
  v.hdr.size = sizeof(v) + 8;
  const auto status = Validate(v, DRM_LNPU_ENGINE_DMA, &accesses).status();
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("LNPU_OP_SCATTER_ROWS.hdr.size"));
}

TEST(CommandValidationTest, RopeFreqFactorsRules) {
  const auto v = ValidRope(LNPU_ROPE_FREQ_FACTORS, LNPU_ROPE_MODE_NORM);
  ExpectEachRejected<lnpu_cmd_rope>(
      v, "LNPU_OP_ROPE",
      {{"freq_factors", [](auto& c) { c.hdr.flags = 0; }},
       {"freq_factors", [](auto& c) { c.freq_factors = kD + 2; }},
       {"freq_factors", [](auto& c) { c.freq_factors = ~0ull - 7; }},
       {"hdr.flags", [](auto& c) { c.hdr.flags = 1u << 1; }},
       {"dst", [](auto& c) { c.dst = kD; }}});
  ExpectAccessReported(v, DRM_LNPU_ENGINE_COMPUTE,
                       OperandAccess{kD, 4 * 4, false});
}

// ------------------------------------------------------------- accesses

TEST(CommandValidationTest, ReportsEveryOperandRange) {
  using ::testing::ElementsAre;
  using ::testing::UnorderedElementsAre;
  std::vector<OperandAccess> accesses;

  auto mm = MakeCommand<lnpu_cmd_matmul>(
      LNPU_OP_MATMUL, LNPU_MATMUL_BIAS | LNPU_MATMUL_ACCUMULATE);
  mm.src = kA;
  mm.weight = kB;
  mm.bias = kC;
  mm.dst = kD;
  mm.rows = 3;
  mm.k = 5;
  mm.n = 7;
  mm.weight_dtype = LNPU_DTYPE_F16;
  ASSERT_TRUE(Validate(mm, DRM_LNPU_ENGINE_COMPUTE, &accesses).ok());
  EXPECT_THAT(accesses, UnorderedElementsAre(
                            OperandAccess{kA, 3 * 5 * 4, false},
                            OperandAccess{kB, 7 * 5 * 2, false},
                            OperandAccess{kC, 7 * 4, false},
                            OperandAccess{kD, 3 * 7 * 4, true}));

  accesses.clear();
  auto sc = MakeCommand<lnpu_cmd_scatter_rows>(LNPU_OP_SCATTER_ROWS);
  sc.src = kA;
  sc.dst = kB;
  sc.indices = kC;
  sc.row_bytes = 10;
  sc.rows = 2;
  sc.blocks = 3;
  sc.dst_rows = 5;
  sc.src_block_stride = 32;
  sc.dst_block_stride = 50;
  ASSERT_TRUE(Validate(sc, DRM_LNPU_ENGINE_DMA, &accesses).ok());
  EXPECT_THAT(accesses, UnorderedElementsAre(
                            OperandAccess{kA, 2 * 32 + 20, false},
                            OperandAccess{kC, 2 * 4, false},
                            OperandAccess{kB, 2 * 50 + 50, true}));

  accesses.clear();
  auto at = MakeCommand<lnpu_cmd_attention>(LNPU_OP_ATTENTION);
  at.q = kA;
  at.k_new = kB;
  at.v_new = kC;
  at.k_cache = kD;
  at.v_cache = kE;
  at.mask = kF;
  at.dst = kG;
  at.rows = 2;
  at.capacity = 9;
  at.heads = 4;
  at.kv_heads = 2;
  at.head_dim = 3;
  at.scale = 1.0f;
  ASSERT_TRUE(Validate(at, DRM_LNPU_ENGINE_COMPUTE, &accesses).ok());
  EXPECT_THAT(accesses, UnorderedElementsAre(
                            OperandAccess{kA, 2 * 4 * 3 * 4, false},
                            OperandAccess{kB, 2 * 2 * 3 * 4, false},
                            OperandAccess{kC, 2 * 2 * 3 * 4, false},
                            OperandAccess{kD, 9 * 2 * 3 * 4, false},
                            OperandAccess{kE, 9 * 2 * 3 * 4, false},
                            OperandAccess{kF, 9, false},
                            OperandAccess{kG, 2 * 4 * 3 * 4, true}));

  // In-place variants the spec allows.
  auto rms = MakeCommand<lnpu_cmd_rms_norm>(LNPU_OP_RMS_NORM);
  rms.src = rms.dst = kA;
  rms.weight = kB;
  rms.rows = 1;
  rms.dim = 4;
  rms.eps = 1e-6f;
  EXPECT_TRUE(Validate(rms, DRM_LNPU_ENGINE_COMPUTE, &accesses).ok());
  auto add = MakeCommand<lnpu_cmd_add>(LNPU_OP_ADD);
  add.a = add.dst = kA;
  add.b = kB;
  add.count = 4;
  EXPECT_TRUE(Validate(add, DRM_LNPU_ENGINE_COMPUTE, &accesses).ok());
  auto no_bias = mm;
  no_bias.hdr.flags = 0;
  no_bias.bias = 0;
  accesses.clear();
  ASSERT_TRUE(Validate(no_bias, DRM_LNPU_ENGINE_COMPUTE, &accesses).ok());
  EXPECT_EQ(accesses.size(), 3u);  // no bias range without the flag
}

}  // namespace
}  // namespace lnpu::softnpu
