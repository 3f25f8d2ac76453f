// Dequantization of every imported GGML type against blocks built field by
// field from the format definitions (ggml-common.h's block structs and
// ggml-quants.c's dequantize_row_* semantics), with expected values from
// the formulas: scales are powers of two and quants small integers, so
// every expected value is exact and compared bit for bit. Also the round
// trip through our Q8_0 / Q4_0 quantizers (the compiler's conversion path),
// and the rejection of types we do not import.
#include "compiler_artifacts/gguf/dequantize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "compiler_artifacts/gguf/quantize.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/gguf_test_util.h"

namespace lnpu::gguf {
namespace {

using ::testing::HasSubstr;

void PutF16(float value, uint8_t* p) {
  const uint16_t bits = FloatToFloat16(value);
  std::memcpy(p, &bits, 2);
}

// ggml's kvalues_iq4nl, the IQ4_NL / IQ4_XS code book.
constexpr int kIq4Table[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                               1,    13,   25,  38,  53,  69,  89,  113};

std::vector<float> Dequantize(GgmlType type, const std::vector<uint8_t>& block) {
  std::vector<float> y(GgmlBlockElements(type));
  const absl::Status s = DequantizeRow(type, block, absl::MakeSpan(y));
  EXPECT_TRUE(s.ok()) << s;
  return y;
}

// Packs 32 4-bit values of a simple block: byte j holds element j in its low
// nibble and element j + 16 in its high nibble.
void PackNibbles32(const int* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
}

TEST(DequantizeTest, Q4_1HandBuiltBlock) {
  std::vector<uint8_t> block(20);
  PutF16(0.5f, &block[0]);
  PutF16(-3.25f, &block[2]);
  int q[32];
  for (int i = 0; i < 32; ++i) q[i] = (7 * i) % 16;
  PackNibbles32(q, &block[4]);
  const std::vector<float> y = Dequantize(GgmlType::kQ4_1, block);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * q[i] - 3.25f) << i;
}

// Q5_0 / Q5_1: nibbles as Q4_*, bit 4 of element i in bit i of the
// little-endian u32 qh.
void Pack5Bit(const int* q, uint8_t* qh, uint8_t* qs) {
  uint32_t high = 0;
  for (int i = 0; i < 32; ++i) high |= static_cast<uint32_t>((q[i] >> 4) & 1) << i;
  std::memcpy(qh, &high, 4);
  PackNibbles32(q, qs);
}

TEST(DequantizeTest, Q5_0HandBuiltBlock) {
  std::vector<uint8_t> block(22);
  PutF16(0.25f, &block[0]);
  int q[32];
  for (int i = 0; i < 32; ++i) q[i] = (11 * i + 3) % 32;
  Pack5Bit(q, &block[2], &block[6]);
  const std::vector<float> y = Dequantize(GgmlType::kQ5_0, block);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.25f * (q[i] - 16)) << i;
}

TEST(DequantizeTest, Q5_1HandBuiltBlock) {
  std::vector<uint8_t> block(24);
  PutF16(0.5f, &block[0]);
  PutF16(1.5f, &block[2]);
  int q[32];
  for (int i = 0; i < 32; ++i) q[i] = (13 * i + 5) % 32;
  Pack5Bit(q, &block[4], &block[8]);
  const std::vector<float> y = Dequantize(GgmlType::kQ5_1, block);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * q[i] + 1.5f) << i;
}

TEST(DequantizeTest, Q8_0HandBuiltBlock) {
  std::vector<uint8_t> block(34);
  PutF16(0.125f, &block[0]);
  for (int i = 0; i < 32; ++i) block[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(8 * i - 128));
  const std::vector<float> y = Dequantize(GgmlType::kQ8_0, block);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.125f * (8 * i - 128)) << i;
}

TEST(DequantizeTest, IQ4_NLHandBuiltBlock) {
  std::vector<uint8_t> block(18);
  PutF16(0.5f, &block[0]);
  int q[32];
  for (int i = 0; i < 32; ++i) q[i] = (5 * i + 2) % 16;
  PackNibbles32(q, &block[2]);
  const std::vector<float> y = Dequantize(GgmlType::kIQ4_NL, block);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * kIq4Table[q[i]]) << i;
}

// The 2-bit fields shared by Q2_K and Q3_K: element e of a 256 block sits in
// byte 32 * (e / 128) + e % 32 of the 64 quant bytes, at bit 2 * ((e % 128) / 32).
void Pack2Bit(const int* q, uint8_t* qs) {
  for (int e = 0; e < 256; ++e) {
    qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((q[e] & 3) << (2 * ((e % 128) / 32)));
  }
}

// block_q2_K {scales[16], qs[64], d, dmin}: sub-block s (16 elements) has
// scale (low nibble of scales[s]) s % 16 and min (high nibble) 15 - s.
TEST(DequantizeTest, Q2_KHandBuiltBlock) {
  std::vector<uint8_t> block(84, 0);
  for (int s = 0; s < 16; ++s) block[s] = static_cast<uint8_t>((s % 16) | ((15 - s) << 4));
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 3 + e / 7) % 4;
  Pack2Bit(q, &block[16]);
  PutF16(0.5f, &block[80]);
  PutF16(0.25f, &block[82]);
  const std::vector<float> y = Dequantize(GgmlType::kQ2_K, block);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 16;
    EXPECT_EQ(y[e], 0.5f * (s % 16) * q[e] - 0.25f * (15 - s)) << e;
  }
}

// block_q3_K {hmask[32], qs[64], scales[12], d}: value v in [-4, 3] stored
// as u = v + 4: low two bits as Q2_K, bit 2 in hmask[e % 32] at bit e / 32.
// Sub-block s has 6-bit scale S (used as S - 32): low nibble in byte s % 8
// (low half for s < 8, high half otherwise), top two bits in byte
// 8 + s % 4 at bit 2 * (s / 4).
TEST(DequantizeTest, Q3_KHandBuiltBlock) {
  std::vector<uint8_t> block(110, 0);
  int value[256], u[256], scale[16];
  for (int e = 0; e < 256; ++e) {
    value[e] = (e * 5 + e / 9) % 8 - 4;
    u[e] = value[e] + 4;
    block[e % 32] |= static_cast<uint8_t>(((u[e] >> 2) & 1) << (e / 32));
  }
  Pack2Bit(u, &block[32]);
  uint8_t* packed = &block[96];
  for (int s = 0; s < 16; ++s) {
    scale[s] = (s * 23 + 7) % 64;
    packed[s % 8] |= static_cast<uint8_t>((scale[s] & 0xF) << (s < 8 ? 0 : 4));
    packed[8 + s % 4] |= static_cast<uint8_t>((scale[s] >> 4) << (2 * (s / 4)));
  }
  PutF16(0.25f, &block[108]);
  const std::vector<float> y = Dequantize(GgmlType::kQ3_K, block);
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(y[e], 0.25f * (scale[e / 16] - 32) * value[e]) << e;
  }
}

// The 12 bytes of 6-bit (scale, min) pairs of Q4_K / Q5_K: sub-blocks
// 0..3 in the low 6 bits of bytes j (scale) and j + 4 (min), whose top two
// bits carry the high bits of sub-block j + 4; sub-blocks 4..7 have their
// low nibbles in byte j + 8 (scale low, min high).
void PackScaleMinK4(const int* scale, const int* min, uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0xF) | ((min[j + 4] & 0xF) << 4));
  }
}

// Nibbles of Q4_K / Q5_K: 4 chunks of 64 elements, 32 bytes each; element
// l of a chunk in the low nibble of byte l, element 32 + l in its high one.
void PackNibbles256(const int* q, uint8_t* qs) {
  for (int e = 0; e < 256; ++e) {
    qs[32 * (e / 64) + e % 32] |= static_cast<uint8_t>((q[e] & 0xF) << (e % 64 < 32 ? 0 : 4));
  }
}

// d = 0.5, dmin = 0.25, sub-block j has scale 3 + 7j and min 60 - j.
TEST(DequantizeTest, Q4_KHandBuiltBlock) {
  std::vector<uint8_t> block(144, 0);
  PutF16(0.5f, &block[0]);
  PutF16(0.25f, &block[2]);
  int scale[8], min[8], q[256];
  for (int j = 0; j < 8; ++j) {
    scale[j] = 3 + 7 * j;
    min[j] = 60 - j;
  }
  PackScaleMinK4(scale, min, &block[4]);
  for (int e = 0; e < 256; ++e) q[e] = (e * 7 + e / 16) % 16;
  PackNibbles256(q, &block[16]);
  const std::vector<float> y = Dequantize(GgmlType::kQ4_K, block);
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(y[e], 0.5f * scale[e / 32] * q[e] - 0.25f * min[e / 32]) << e;
  }
}

// As Q4_K with 5-bit quants: bit 4 of element e in qh[e % 32] at bit
// 2 * (e / 64) + (e % 64) / 32.
TEST(DequantizeTest, Q5_KHandBuiltBlock) {
  std::vector<uint8_t> block(176, 0);
  PutF16(0.25f, &block[0]);
  PutF16(0.5f, &block[2]);
  int scale[8], min[8], q[256];
  for (int j = 0; j < 8; ++j) {
    scale[j] = 63 - 5 * j;
    min[j] = 2 + 8 * j;
  }
  PackScaleMinK4(scale, min, &block[4]);
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 13 + e / 5) % 32;
    block[16 + e % 32] |= static_cast<uint8_t>((q[e] >> 4) << (2 * (e / 64) + (e % 64) / 32));
  }
  PackNibbles256(q, &block[48]);
  const std::vector<float> y = Dequantize(GgmlType::kQ5_K, block);
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(y[e], 0.25f * scale[e / 32] * q[e] - 0.5f * min[e / 32]) << e;
  }
}

// block_q6_K {ql[128], qh[64], scales[16], d}: element n*128 + l + 32g
// (g = 0..3) has its low nibble in ql[64n + l + 32(g % 2)] (low half for
// g < 2) and its high two bits at bit 2g of qh[32n + l]; value q - 32.
TEST(DequantizeTest, Q6_KHandBuiltBlock) {
  std::vector<uint8_t> block(210, 0);
  uint8_t* ql = &block[0];
  uint8_t* qh = &block[128];
  for (int s = 0; s < 16; ++s) block[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(s - 8));
  PutF16(0.125f, &block[208]);
  auto value = [](int i) { return (5 * i) % 64; };
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 32; ++l) {
      for (int g = 0; g < 4; ++g) {
        const int q = value(n * 128 + l + 32 * g);
        ql[64 * n + l + 32 * (g % 2)] |= static_cast<uint8_t>((q & 0xF) << (g < 2 ? 0 : 4));
        qh[32 * n + l] |= static_cast<uint8_t>((q >> 4) << (2 * g));
      }
    }
  }
  const std::vector<float> y = Dequantize(GgmlType::kQ6_K, block);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(y[i], 0.125f * static_cast<float>(i / 16 - 8) * (value(i) - 32)) << i;
  }
}

// block_iq4_xs {d, u16 scales_h, scales_l[4], qs[128]}: sub-block b (32
// elements) has 6-bit scale L (used as L - 32): low nibble in scales_l[b / 2]
// at bit 4 * (b % 2), top two bits at bit 2b of scales_h; its 16 bytes of
// nibbles are packed as IQ4_NL's.
TEST(DequantizeTest, IQ4_XSHandBuiltBlock) {
  std::vector<uint8_t> block(136, 0);
  PutF16(0.25f, &block[0]);
  int scale[8];
  uint16_t scales_h = 0;
  for (int b = 0; b < 8; ++b) {
    scale[b] = (9 * b + 1) % 64;
    block[4 + b / 2] |= static_cast<uint8_t>((scale[b] & 0xF) << (4 * (b % 2)));
    scales_h |= static_cast<uint16_t>((scale[b] >> 4) << (2 * b));
  }
  std::memcpy(&block[2], &scales_h, 2);
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 3 + e / 11) % 16;
  for (int b = 0; b < 8; ++b) PackNibbles32(&q[32 * b], &block[8 + 16 * b]);
  const std::vector<float> y = Dequantize(GgmlType::kIQ4_XS, block);
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(y[e], 0.25f * (scale[e / 32] - 32) * kIq4Table[q[e]]) << e;
  }
}

TEST(DequantizeTest, FloatTypes) {
  const float values[3] = {1.5f, -2.0f, 0.25f};
  std::vector<uint8_t> f32(12), f16(6), bf16(6);
  std::memcpy(f32.data(), values, 12);
  for (int i = 0; i < 3; ++i) {
    const uint16_t h = FloatToFloat16(values[i]);
    const uint16_t b = FloatToBFloat16(values[i]);
    std::memcpy(f16.data() + 2 * i, &h, 2);
    std::memcpy(bf16.data() + 2 * i, &b, 2);
  }
  const std::vector<float> expected(values, values + 3);
  std::vector<float> y(3);
  for (auto [type, bytes] : {std::pair{GgmlType::kF32, f32}, std::pair{GgmlType::kF16, f16},
                             std::pair{GgmlType::kBF16, bf16}}) {
    ASSERT_TRUE(DequantizeRow(type, bytes, absl::MakeSpan(y)).ok());
    EXPECT_EQ(y, expected);
  }
}

constexpr GgmlType kQuantizedTypes[] = {
    GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
    GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
    GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

// `blocks` random blocks of `type` whose f16 fields are 2^-6 (dmin / m too).
std::vector<uint8_t> RandomBlocks(GgmlType type, size_t blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(blocks * GgmlBlockBytes(type));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (size_t i = 0; i < blocks; ++i) {
    for (uint32_t offset : BlockHalfFieldOffsets(type)) {
      PutF16(1.0f / 64, &bytes[i * GgmlBlockBytes(type) + offset]);
    }
  }
  return bytes;
}

// The compiler's path for every imported type: dequantize exactly, then
// quantize to Q8_0. Each value stays within half a Q8_0 step of its block
// (plus the f16 rounding of the scale); Q8_0 blocks come back bit-exact,
// and so do Q4_0 blocks whose largest magnitude is a -8 quant.
TEST(DequantizeTest, RoundTripsThroughOurQuantizers) {
  for (GgmlType type : kQuantizedTypes) {
    SCOPED_TRACE(std::string(GgmlTypeName(type)));
    EXPECT_TRUE(CanDequantize(type));
    const size_t elements = 8 * 256;
    std::vector<uint8_t> src = RandomBlocks(type, elements / GgmlBlockElements(type), 3);
    if (type == GgmlType::kQ8_0) {
      // As llama.cpp writes Q8_0: quants in [-127, 127], 127 in each block.
      for (size_t at = 0; at < src.size(); at += kQ8_0BlockBytes) {
        for (size_t j = 2; j < kQ8_0BlockBytes; ++j) {
          if (src[at + j] == 0x80) src[at + j] = 0x81;  // -128 -> -127
        }
        src[at + 2] = 127;
      }
    }
    std::vector<float> x(elements);
    ASSERT_TRUE(DequantizeRow(type, src, absl::MakeSpan(x)).ok());
    std::vector<uint8_t> q8(elements / kQuantBlockElements * kQ8_0BlockBytes);
    ASSERT_TRUE(QuantizeRowQ8_0(x, absl::MakeSpan(q8)).ok());
    std::vector<float> y(elements);
    ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, q8, absl::MakeSpan(y)).ok());
    for (size_t b = 0; b < elements / kQuantBlockElements; ++b) {
      float amax = 0;
      for (size_t j = 0; j < kQuantBlockElements; ++j) {
        amax = std::max(amax, std::fabs(x[b * kQuantBlockElements + j]));
      }
      for (size_t j = 0; j < kQuantBlockElements; ++j) {
        const size_t i = b * kQuantBlockElements + j;
        ASSERT_LE(std::fabs(y[i] - x[i]), amax / 127 * (0.5f + 127.0f / 2048) + 1e-9f) << i;
      }
    }
    if (type == GgmlType::kQ8_0) {
      EXPECT_EQ(q8, src);
    }
  }
  // Q4_0 with nibble 0 (value -8 d, the largest magnitude) in every block.
  std::vector<uint8_t> q4 = RandomBlocks(GgmlType::kQ4_0, 16, 5);
  for (size_t b = 0; b < 16; ++b) q4[b * kQ4_0BlockBytes + 2 + b % 16] &= 0xF0;
  std::vector<float> x(16 * kQuantBlockElements);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_0, q4, absl::MakeSpan(x)).ok());
  std::vector<uint8_t> again(q4.size());
  ASSERT_TRUE(QuantizeRowQ4_0(x, absl::MakeSpan(again)).ok());
  EXPECT_EQ(again, q4);
}

// Scaling the f16 fields scales the block (the contract random models use).
TEST(DequantizeTest, ValuesAreLinearInTheHalfFields) {
  for (GgmlType type : kQuantizedTypes) {
    SCOPED_TRACE(std::string(GgmlTypeName(type)));
    std::vector<uint8_t> block = RandomBlocks(type, 1, 11);
    const std::vector<float> base = Dequantize(type, block);
    for (uint32_t offset : BlockHalfFieldOffsets(type)) PutF16(4.0f / 64, &block[offset]);
    const std::vector<float> scaled = Dequantize(type, block);
    for (size_t i = 0; i < base.size(); ++i) ASSERT_EQ(scaled[i], 4 * base[i]) << i;
  }
  EXPECT_TRUE(BlockHalfFieldOffsets(GgmlType::kF16).empty());
}

TEST(DequantizeTest, RejectsBadSizesAndOtherTypes) {
  std::vector<uint8_t> q(34);
  std::vector<float> y(32);
  EXPECT_EQ(DequantizeRow(GgmlType::kQ8_0, absl::MakeSpan(q).subspan(0, 33), absl::MakeSpan(y)).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> y300(300);
  std::vector<uint8_t> k(210 * 2);
  absl::Status s = DequantizeRow(GgmlType::kQ6_K, k, absl::MakeSpan(y300));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("blocks of 256 elements in 210 bytes"));
  for (GgmlType type : {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S,
                        GgmlType::kIQ3_XXS, GgmlType::kIQ3_S, GgmlType::kIQ1_S,
                        GgmlType::kIQ1_M, GgmlType::kTQ1_0, GgmlType::kTQ2_0,
                        GgmlType::kQ8_1, GgmlType::kQ8_K, GgmlType::kI32}) {
    SCOPED_TRACE(std::string(GgmlTypeName(type)));
    EXPECT_FALSE(CanDequantize(type));
    std::vector<uint8_t> bytes(GgmlBlockBytes(type));
    std::vector<float> out(GgmlBlockElements(type));
    s = DequantizeRow(type, bytes, absl::MakeSpan(out));
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(GgmlTypeName(type))));
    EXPECT_THAT(std::string(s.message()), HasSubstr("IQ4_XS"));
  }
  EXPECT_EQ(DequantizableTypeNames(),
            "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, "
            "IQ4_NL, IQ4_XS");
}

// llama.cpp's own dequantization (libggml's to_float) of random blocks of
// every imported type, with random finite f16 scales (subnormals included):
// ours is bit-exact (tests/data/gguf/README.md).
TEST(DequantizeTest, BitExactWithLlamaCppReference) {
  const std::vector<uint8_t> data =
      testing::ReadBytes(testing::TestDataPath("gguf/ggml_dequantize_reference.bin"));
  std::vector<GgmlType> seen;
  size_t at = 0;
  while (at < data.size()) {
    ASSERT_LE(at + 8, data.size());
    uint32_t header[2];
    std::memcpy(header, &data[at], 8);
    at += 8;
    const GgmlType type = static_cast<GgmlType>(header[0]);
    SCOPED_TRACE(std::string(GgmlTypeName(type)));
    const size_t bytes = size_t{header[1]} * GgmlBlockBytes(type);
    const size_t elements = size_t{header[1]} * GgmlBlockElements(type);
    ASSERT_LE(at + bytes + 4 * elements, data.size());
    std::vector<float> expected(elements), y(elements);
    std::memcpy(expected.data(), &data[at + bytes], 4 * elements);
    ASSERT_TRUE(DequantizeRow(type, absl::MakeConstSpan(&data[at], bytes), absl::MakeSpan(y)).ok());
    for (size_t i = 0; i < elements; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(expected[i]))
          << i << ": " << y[i] << " vs " << expected[i];
    }
    at += bytes + 4 * elements;
    seen.push_back(type);
  }
  EXPECT_THAT(seen, ::testing::ElementsAreArray(kQuantizedTypes));
}

// The shared table's block sizes are ggml's (ggml-common.h static_asserts).
TEST(DequantizeTest, BlockSizesAreGgmls) {
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kQ4_1), 20u);
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kQ5_0), 22u);
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kQ5_1), 24u);
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kQ2_K), 84u);
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kQ3_K), 110u);
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kQ5_K), 176u);
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kIQ4_NL), 18u);
  EXPECT_EQ(GgmlBlockBytes(GgmlType::kIQ4_XS), 136u);
  EXPECT_EQ(GgmlBlockElements(GgmlType::kIQ4_XS), 256u);
  EXPECT_EQ(GgmlBlockElements(static_cast<GgmlType>(99)), 0u);
}

}  // namespace
}  // namespace lnpu::gguf
