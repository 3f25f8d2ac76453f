#include "compiler_artifacts/gguf/dequantize.h"

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/half.h"
#include "base/quant_blocks.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::gguf {
namespace {

constexpr size_t kQK = 32;    // elements of the simple block types
constexpr size_t kQK_K = 256;  // elements of a K / IQ4_XS super-block

// Each layout's fields add up to the block size of the shared table.
static_assert(GgmlBlockBytes(GgmlType::kQ4_0) == 2 + kQK / 2);
static_assert(GgmlBlockBytes(GgmlType::kQ4_1) == 2 + 2 + kQK / 2);
static_assert(GgmlBlockBytes(GgmlType::kQ5_0) == 2 + 4 + kQK / 2);
static_assert(GgmlBlockBytes(GgmlType::kQ5_1) == 2 + 2 + 4 + kQK / 2);
static_assert(GgmlBlockBytes(GgmlType::kQ8_0) == 2 + kQK);
static_assert(GgmlBlockBytes(GgmlType::kQ2_K) == kQK_K / 16 + kQK_K / 4 + 2 + 2);
static_assert(GgmlBlockBytes(GgmlType::kQ3_K) == kQK_K / 8 + kQK_K / 4 + 12 + 2);
static_assert(GgmlBlockBytes(GgmlType::kQ4_K) == 2 + 2 + 12 + kQK_K / 2);
static_assert(GgmlBlockBytes(GgmlType::kQ5_K) == 2 + 2 + 12 + kQK_K / 8 + kQK_K / 2);
static_assert(GgmlBlockBytes(GgmlType::kQ6_K) == kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2);
static_assert(GgmlBlockBytes(GgmlType::kIQ4_NL) == 2 + kQK / 2);
static_assert(GgmlBlockBytes(GgmlType::kIQ4_XS) == 2 + 2 + kQK_K / 64 + kQK_K / 2);

// The non-linear 4-bit code book of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl).
constexpr std::array<int8_t, 16> kIq4Values = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

float LoadHalf(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return Float16ToFloat(bits);
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t value;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

// Each function below decodes one block at `b` into the block's elements at
// `y`.

void DequantizeQ4_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const uint8_t* qs = b + 2;
  for (size_t j = 0; j < kQK / 2; ++j) {
    y[j] = ((qs[j] & 0x0F) - 8) * d;
    y[j + kQK / 2] = ((qs[j] >> 4) - 8) * d;
  }
}

void DequantizeQ4_1(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float m = LoadHalf(b + 2);
  const uint8_t* qs = b + 4;
  for (size_t j = 0; j < kQK / 2; ++j) {
    y[j] = (qs[j] & 0x0F) * d + m;
    y[j + kQK / 2] = (qs[j] >> 4) * d + m;
  }
}

// The 5-bit quants of a Q5_0 / Q5_1 block: nibbles `qs` with bit 4 from `qh`.
void Unpack5Bit(uint32_t qh, const uint8_t* qs, int* q) {
  for (size_t j = 0; j < kQK / 2; ++j) {
    q[j] = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
    q[j + kQK / 2] = (qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
  }
}

void DequantizeQ5_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  int q[kQK];
  Unpack5Bit(LoadU32(b + 2), b + 6, q);
  for (size_t j = 0; j < kQK; ++j) y[j] = (q[j] - 16) * d;
}

void DequantizeQ5_1(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float m = LoadHalf(b + 2);
  int q[kQK];
  Unpack5Bit(LoadU32(b + 4), b + 8, q);
  for (size_t j = 0; j < kQK; ++j) y[j] = q[j] * d + m;
}

void DequantizeQ8_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  for (size_t j = 0; j < kQK; ++j) y[j] = static_cast<int8_t>(b[2 + j]) * d;
}

void DequantizeQ2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = LoadHalf(b + 80);
  const float dmin = LoadHalf(b + 82);
  size_t is = 0;
  for (size_t n = 0; n < kQK_K; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      // Two sub-blocks of 16: quants from q[0..15] and q[16..31].
      for (size_t half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const float dl = d * (sc & 0xF);
        const float ml = dmin * (sc >> 4);
        for (size_t l = 0; l < 16; ++l) {
          *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
        }
      }
    }
    q += 32;
  }
}

// The 16 signed 6-bit scales of a Q3_K block (minus their offset 32) from
// its 12 packed bytes: scale i has its low nibble in byte i % 8 (low nibble
// for i < 8, high nibble otherwise) and its top two bits in byte 8 + i % 4
// at bit position 2 * (i / 4).
void UnpackQ3_KScales(const uint8_t* packed, int* scales) {
  for (int i = 0; i < 16; ++i) {
    const int low = (packed[i % 8] >> (i < 8 ? 0 : 4)) & 0xF;
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = (low | (high << 4)) - 32;
  }
}

void DequantizeQ3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* q = b + 32;
  int scales[16];
  UnpackQ3_KScales(b + 96, scales);
  const float d_all = LoadHalf(b + 108);
  size_t is = 0;
  uint8_t m = 1;
  for (size_t n = 0; n < kQK_K; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (size_t half = 0; half < 2; ++half) {
        const float dl = d_all * scales[is++];
        for (size_t l = 16 * half; l < 16 * half + 16; ++l) {
          const int quant = ((q[l] >> shift) & 3) - ((hmask[l] & m) ? 0 : 4);
          *y++ = dl * quant;
        }
      }
      m = static_cast<uint8_t>(m << 1);
    }
    q += 32;
  }
}

// Scale and min of sub-block j (0..7) from the 12 packed bytes of a Q4_K /
// Q5_K block: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 split into
// a low nibble in byte j + 4 and two high bits on top of bytes j - 4 / j.
void ScaleMinK4(size_t j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q4_K (`qh` null) and Q5_K (`qh` = bit 4 of each quant: bit 2k of qh[l]
// for element l of group k's low half, bit 2k + 1 for its high half).
void DequantizeQ4_KOrQ5_K(const uint8_t* b, const uint8_t* qh,
                          const uint8_t* ql, float* y) {
  const float d = LoadHalf(b);
  const float dmin = LoadHalf(b + 2);
  const uint8_t* packed = b + 4;
  uint8_t u1 = 1;
  uint8_t u2 = 2;
  for (size_t j = 0, sub = 0; j < kQK_K; j += 64, sub += 2) {
    uint8_t scale, min;
    ScaleMinK4(sub, packed, &scale, &min);
    const float d1 = d * scale;
    const float m1 = dmin * min;
    ScaleMinK4(sub + 1, packed, &scale, &min);
    const float d2 = d * scale;
    const float m2 = dmin * min;
    for (size_t l = 0; l < 32; ++l) {
      const int high = qh != nullptr && (qh[l] & u1) ? 16 : 0;
      *y++ = d1 * ((ql[l] & 0xF) + high) - m1;
    }
    for (size_t l = 0; l < 32; ++l) {
      const int high = qh != nullptr && (qh[l] & u2) ? 16 : 0;
      *y++ = d2 * ((ql[l] >> 4) + high) - m2;
    }
    ql += 32;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

void DequantizeQ4_K(const uint8_t* b, float* y) {
  DequantizeQ4_KOrQ5_K(b, nullptr, b + 16, y);
}

void DequantizeQ5_K(const uint8_t* b, float* y) {
  DequantizeQ4_KOrQ5_K(b, b + 16, b + 48, y);
}

void DequantizeQ6_K(const uint8_t* b, float* y) { DequantizeQ6_KBlock(b, y); }

// 32 elements from 16 bytes of IQ4 code-book nibbles, times `scale`.
void DecodeIq4Group(float scale, const uint8_t* qs, float* y) {
  for (size_t j = 0; j < kQK / 2; ++j) {
    y[j] = scale * kIq4Values[qs[j] & 0xF];
    y[j + kQK / 2] = scale * kIq4Values[qs[j] >> 4];
  }
}

void DequantizeIQ4_NL(const uint8_t* b, float* y) {
  DecodeIq4Group(LoadHalf(b), b + 2, y);
}

void DequantizeIQ4_XS(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const uint16_t scales_h = static_cast<uint16_t>(b[2] | (b[3] << 8));
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  for (size_t ib = 0; ib < kQK_K / kQK; ++ib) {
    const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                   (((scales_h >> (2 * ib)) & 3) << 4);
    DecodeIq4Group(d * (ls - 32), qs, y);
    y += kQK;
    qs += kQK / 2;
  }
}

void DecodeF32(const uint8_t* b, float* y) { std::memcpy(y, b, sizeof(float)); }
void DecodeF16(const uint8_t* b, float* y) { *y = LoadHalf(b); }
void DecodeBF16(const uint8_t* b, float* y) {
  uint16_t bits;
  std::memcpy(&bits, b, sizeof(bits));
  *y = BFloat16ToFloat(bits);
}

using BlockDecoder = void (*)(const uint8_t* block, float* y);

struct Dequantizer {
  GgmlType type;
  BlockDecoder decode;
  std::array<uint32_t, 2> half_fields;  // f16 field offsets in the block
  uint32_t half_field_count;
};

constexpr std::array kDequantizers = {
    Dequantizer{GgmlType::kF32, DecodeF32, {}, 0},
    Dequantizer{GgmlType::kF16, DecodeF16, {}, 0},
    Dequantizer{GgmlType::kBF16, DecodeBF16, {}, 0},
    Dequantizer{GgmlType::kQ4_0, DequantizeQ4_0, {0}, 1},
    Dequantizer{GgmlType::kQ4_1, DequantizeQ4_1, {0, 2}, 2},
    Dequantizer{GgmlType::kQ5_0, DequantizeQ5_0, {0}, 1},
    Dequantizer{GgmlType::kQ5_1, DequantizeQ5_1, {0, 2}, 2},
    Dequantizer{GgmlType::kQ8_0, DequantizeQ8_0, {0}, 1},
    Dequantizer{GgmlType::kQ2_K, DequantizeQ2_K, {80, 82}, 2},
    Dequantizer{GgmlType::kQ3_K, DequantizeQ3_K, {108}, 1},
    Dequantizer{GgmlType::kQ4_K, DequantizeQ4_K, {0, 2}, 2},
    Dequantizer{GgmlType::kQ5_K, DequantizeQ5_K, {0, 2}, 2},
    Dequantizer{GgmlType::kQ6_K, DequantizeQ6_K, {208}, 1},
    Dequantizer{GgmlType::kIQ4_NL, DequantizeIQ4_NL, {0}, 1},
    Dequantizer{GgmlType::kIQ4_XS, DequantizeIQ4_XS, {0}, 1},
};

const Dequantizer* FindDequantizer(GgmlType type) {
  for (const Dequantizer& dequantizer : kDequantizers) {
    if (dequantizer.type == type) return &dequantizer;
  }
  return nullptr;
}

}  // namespace

bool CanDequantize(GgmlType type) { return FindDequantizer(type) != nullptr; }

std::string_view DequantizableTypeNames() {
  static const std::string* names = [] {
    auto* joined = new std::string;
    for (const Dequantizer& dequantizer : kDequantizers) {
      if (!joined->empty()) joined->append(", ");
      joined->append(GgmlTypeName(dequantizer.type));
    }
    return joined;
  }();
  return *names;
}

absl::Status DequantizeRow(GgmlType type, absl::Span<const uint8_t> src,
                           absl::Span<float> dst) {
  const Dequantizer* dequantizer = FindDequantizer(type);
  if (dequantizer == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "DequantizeRow: type ", ToAbsl(GgmlTypeName(type)),
        " is not supported; supported: ", ToAbsl(DequantizableTypeNames())));
  }
  const size_t block_elements = GgmlBlockElements(type);
  const size_t block_bytes = GgmlBlockBytes(type);
  if (dst.size() % block_elements != 0 ||
      src.size() != dst.size() / block_elements * block_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DequantizeRow ", ToAbsl(GgmlTypeName(type)), ": ", src.size(),
        " bytes do not hold exactly ", dst.size(), " elements (blocks of ",
        block_elements, " elements in ", block_bytes, " bytes)"));
  }
  const size_t blocks = dst.size() / block_elements;
  for (size_t i = 0; i < blocks; ++i) {
    dequantizer->decode(src.data() + i * block_bytes,
                        dst.data() + i * block_elements);
  }
  return absl::OkStatus();
}

absl::Span<const uint32_t> BlockHalfFieldOffsets(GgmlType type) {
  const Dequantizer* dequantizer = FindDequantizer(type);
  if (dequantizer == nullptr) return {};
  return absl::MakeConstSpan(dequantizer->half_fields.data(),
                             dequantizer->half_field_count);
}

}  // namespace lnpu::gguf
