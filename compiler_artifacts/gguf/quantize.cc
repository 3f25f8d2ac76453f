#include "compiler_artifacts/gguf/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/half.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::gguf {
namespace {

// K-quant super-blocks (ggml's QK_K) and their sizes.
constexpr size_t kSuperBlockElements = 256;
constexpr size_t kQ4_KBlockBytes = 2 + 2 + 12 + 128;
constexpr size_t kQ6_KBlockBytes = 128 + 64 + 16 + 2;

uint16_t LoadU16(const uint8_t* p) {
  uint16_t value;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

void StoreU16(uint16_t value, uint8_t* p) {
  std::memcpy(p, &value, sizeof(value));
}

// Checks that `src` holds whole 32-element blocks of finite values and
// that `dst` has exactly the bytes of those blocks.
absl::Status CheckQuantizeSizes(absl::string_view format, size_t block_bytes,
                                absl::Span<const float> src,
                                absl::Span<uint8_t> dst) {
  if (src.size() % kQuantBlockElements != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Quantize ", format, ": ", src.size(),
        " values are not a multiple of the 32-element block; pad the row"));
  }
  const size_t needed = src.size() / kQuantBlockElements * block_bytes;
  if (dst.size() != needed) {
    return absl::InvalidArgumentError(
        absl::StrCat("Quantize ", format, ": destination has ", dst.size(),
                     " bytes, ", src.size(), " values need ", needed));
  }
  for (size_t i = 0; i < src.size(); ++i) {
    if (!std::isfinite(src[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("Quantize ", format, ": value ", i, " is ", src[i],
                       "; only finite values can be quantized"));
    }
  }
  return absl::OkStatus();
}

void DequantizeQ8_0(const uint8_t* block, float* y) {
  const float d = Float16ToFloat(LoadU16(block));
  const auto* q = reinterpret_cast<const int8_t*>(block + 2);
  for (size_t j = 0; j < kQuantBlockElements; ++j) y[j] = q[j] * d;
}

void DequantizeQ4_0(const uint8_t* block, float* y) {
  const float d = Float16ToFloat(LoadU16(block));
  const uint8_t* qs = block + 2;
  for (size_t j = 0; j < kQuantBlockElements / 2; ++j) {
    const int x0 = (qs[j] & 0x0F) - 8;
    const int x1 = (qs[j] >> 4) - 8;
    y[j] = x0 * d;
    y[j + kQuantBlockElements / 2] = x1 * d;
  }
}

// Scale and min of sub-block j (0..7) from the 12 packed bytes of a Q4_K
// block: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 split into a
// low nibble in byte j + 4 and two high bits on top of bytes j - 4 / j.
void ScaleMinQ4_K(size_t j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void DequantizeQ4_K(const uint8_t* block, float* y) {
  const float d = Float16ToFloat(LoadU16(block));
  const float dmin = Float16ToFloat(LoadU16(block + 2));
  const uint8_t* scales = block + 4;
  const uint8_t* q = block + 16;
  for (size_t j = 0, sub = 0; j < kSuperBlockElements; j += 64, sub += 2) {
    uint8_t scale, min;
    ScaleMinQ4_K(sub, scales, &scale, &min);
    const float d1 = d * scale;
    const float m1 = dmin * min;
    ScaleMinQ4_K(sub + 1, scales, &scale, &min);
    const float d2 = d * scale;
    const float m2 = dmin * min;
    for (size_t l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
    for (size_t l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    q += 32;
  }
}

void DequantizeQ6_K(const uint8_t* block, float* y) {
  const uint8_t* ql = block;
  const uint8_t* qh = block + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
  const float d = Float16ToFloat(LoadU16(block + 208));
  for (size_t n = 0; n < kSuperBlockElements; n += 128) {
    for (size_t l = 0; l < 32; ++l) {
      const size_t is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * sc[is + 0] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// Applies `block_fn(block_bytes_ptr, out_ptr)` to every block of a row.
template <class BlockFn>
void ForEachBlock(absl::Span<const uint8_t> src, absl::Span<float> dst,
                  size_t block_elements, size_t block_bytes,
                  const BlockFn& block_fn) {
  const size_t blocks = dst.size() / block_elements;
  for (size_t b = 0; b < blocks; ++b) {
    block_fn(src.data() + b * block_bytes, dst.data() + b * block_elements);
  }
}

}  // namespace

absl::Status QuantizeRowQ8_0(absl::Span<const float> src,
                             absl::Span<uint8_t> dst) {
  if (absl::Status s = CheckQuantizeSizes("Q8_0", kQ8_0BlockBytes, src, dst);
      !s.ok()) {
    return s;
  }
  for (size_t b = 0; b < src.size() / kQuantBlockElements; ++b) {
    const float* x = src.data() + b * kQuantBlockElements;
    uint8_t* block = dst.data() + b * kQ8_0BlockBytes;
    float amax = 0.0f;
    for (size_t j = 0; j < kQuantBlockElements; ++j) {
      amax = std::max(amax, std::fabs(x[j]));
    }
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreU16(FloatToFloat16(d), block);
    for (size_t j = 0; j < kQuantBlockElements; ++j) {
      // |x * id| <= 127 (plus rounding), so the int8 conversion is exact.
      block[2 + j] = static_cast<uint8_t>(
          static_cast<int8_t>(std::round(x[j] * id)));
    }
  }
  return absl::OkStatus();
}

absl::Status QuantizeRowQ4_0(absl::Span<const float> src,
                             absl::Span<uint8_t> dst) {
  if (absl::Status s = CheckQuantizeSizes("Q4_0", kQ4_0BlockBytes, src, dst);
      !s.ok()) {
    return s;
  }
  constexpr size_t kHalf = kQuantBlockElements / 2;
  for (size_t b = 0; b < src.size() / kQuantBlockElements; ++b) {
    const float* x = src.data() + b * kQuantBlockElements;
    uint8_t* block = dst.data() + b * kQ4_0BlockBytes;
    float amax = 0.0f;
    float max = 0.0f;
    for (size_t j = 0; j < kQuantBlockElements; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreU16(FloatToFloat16(d), block);
    for (size_t j = 0; j < kHalf; ++j) {
      // x * id lies in [-8, 8] (plus rounding): the truncation is in range.
      const int x0 = std::min(15, int{static_cast<int8_t>(x[j] * id + 8.5f)});
      const int x1 =
          std::min(15, int{static_cast<int8_t>(x[kHalf + j] * id + 8.5f)});
      block[2 + j] = static_cast<uint8_t>(x0 | (x1 << 4));
    }
  }
  return absl::OkStatus();
}

absl::Status DequantizeRow(GgmlType type, absl::Span<const uint8_t> src,
                           absl::Span<float> dst) {
  size_t block_elements = 0;
  size_t block_bytes = 0;
  switch (type) {
    case GgmlType::kF32: block_elements = 1; block_bytes = 4; break;
    case GgmlType::kF16:
    case GgmlType::kBF16: block_elements = 1; block_bytes = 2; break;
    case GgmlType::kQ8_0:
      block_elements = kQuantBlockElements;
      block_bytes = kQ8_0BlockBytes;
      break;
    case GgmlType::kQ4_0:
      block_elements = kQuantBlockElements;
      block_bytes = kQ4_0BlockBytes;
      break;
    case GgmlType::kQ4_K:
      block_elements = kSuperBlockElements;
      block_bytes = kQ4_KBlockBytes;
      break;
    case GgmlType::kQ6_K:
      block_elements = kSuperBlockElements;
      block_bytes = kQ6_KBlockBytes;
      break;
    default:
      return absl::UnimplementedError(absl::StrCat(
          "DequantizeRow: type ", ToAbsl(GgmlTypeName(type)),
          " is not supported; supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, "
          "Q6_K"));
  }
  if (dst.size() % block_elements != 0 ||
      src.size() != dst.size() / block_elements * block_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DequantizeRow ", ToAbsl(GgmlTypeName(type)), ": ", src.size(),
        " bytes do not hold exactly ", dst.size(), " elements (blocks of ",
        block_elements, " elements in ", block_bytes, " bytes)"));
  }
  switch (type) {
    case GgmlType::kF32:
      if (!dst.empty()) std::memcpy(dst.data(), src.data(), src.size());
      break;
    case GgmlType::kF16:
      for (size_t i = 0; i < dst.size(); ++i) {
        dst[i] = Float16ToFloat(LoadU16(src.data() + 2 * i));
      }
      break;
    case GgmlType::kBF16:
      for (size_t i = 0; i < dst.size(); ++i) {
        dst[i] = BFloat16ToFloat(LoadU16(src.data() + 2 * i));
      }
      break;
    case GgmlType::kQ8_0:
      ForEachBlock(src, dst, block_elements, block_bytes, DequantizeQ8_0);
      break;
    case GgmlType::kQ4_0:
      ForEachBlock(src, dst, block_elements, block_bytes, DequantizeQ4_0);
      break;
    case GgmlType::kQ4_K:
      ForEachBlock(src, dst, block_elements, block_bytes, DequantizeQ4_K);
      break;
    default:  // kQ6_K, the last type accepted above
      ForEachBlock(src, dst, block_elements, block_bytes, DequantizeQ6_K);
      break;
  }
  return absl::OkStatus();
}

}  // namespace lnpu::gguf
