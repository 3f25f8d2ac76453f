// Element-type conversions (dtype_conversion.h) and WeightBytes
// (kernel_types.h).
//
// Highway re-includes this file once per enabled SIMD target (see
// foreach_target.h); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target, the HWY_ONCE part once.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel_iface/softnpu/compute/dtype_conversion.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/half.h"
#include "base/quant_blocks.h"
#include "hwy/highway.h"
#include "kernel_iface/softnpu/compute/dtype_conversion.h"
#include "kernel_iface/softnpu/compute/kernel_types.h"
#include "kernel_iface/softnpu/compute/quant_matmul.h"
#include "kernel_iface/softnpu/compute/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lnpu::softnpu::compute {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void ConvertF16Range(const uint16_t* src, float* dst, size_t count) {
  const auto* half = reinterpret_cast<const hwy::float16_t*>(src);
  ForEachVector(count, [&](auto d, size_t i) {
    hn::StoreU(LoadWeights(d, half + i), d, dst + i);
  });
}

// Round to nearest even on every target: hardware conversions (F16C on
// x86, fcvt on Arm) where Highway uses them, else the exact scalar one
// (Highway's emulated DemoteTo truncates).
void ConvertF32ToF16Range(const float* src, uint16_t* dst, size_t count) {
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)) || \
    (HWY_ARCH_ARM && HWY_TARGET != HWY_EMU128)
  auto* half = reinterpret_cast<hwy::float16_t*>(dst);
  ForEachVector(count, [&](auto d, size_t i) {
    const hn::Rebind<hwy::float16_t, decltype(d)> dh;
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(d, src + i)), dh, half + i);
  });
#else
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToFloat16(src[i]);
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::softnpu::compute
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lnpu::softnpu::compute {

HWY_EXPORT(ConvertF32ToF16Range);
HWY_EXPORT(ConvertF16Range);

size_t WeightBytes(WeightType type, size_t elements) {
  switch (type) {
    case WeightType::kF32: return elements * sizeof(float);
    case WeightType::kF16: return elements * sizeof(uint16_t);
    case WeightType::kQ8_0: return elements / kQuantBlock * kQ8_0BlockBytes;
    case WeightType::kQ4_0: return elements / kQuantBlock * kQ4_0BlockBytes;
    case WeightType::kQ8_0P16:
    case WeightType::kQ8_0P16S: return elements / kQuantBlock * kQ8_0BlockBytes;
    case WeightType::kQ4_0P16:
    case WeightType::kQ4_0P16S: return elements / kQuantBlock * kQ4_0BlockBytes;
    case WeightType::kQ6_K: return elements / kQ6_KBlock * kQ6_KBlockBytes;
  }
  return 0;
}

void ConvertToF32(WeightType type, const void* src, float* dst,
                  size_t count) {
  switch (type) {
    case WeightType::kF32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case WeightType::kF16:
      HWY_DYNAMIC_DISPATCH(ConvertF16Range)
      (static_cast<const uint16_t*>(src), dst, count);
      return;
    case WeightType::kQ8_0:
    case WeightType::kQ4_0: {
      // Embedding rows: a few per command, so plain scalar code.
      const bool q8 = type == WeightType::kQ8_0;
      const size_t block_bytes = q8 ? kQ8_0BlockBytes : kQ4_0BlockBytes;
      const auto* bytes = static_cast<const uint8_t*>(src);
      for (size_t b = 0; b < count / kQuantBlock; ++b) {
        const uint8_t* block = bytes + b * block_bytes;
        uint16_t half;
        std::memcpy(&half, block, sizeof(half));
        const float d = Float16ToFloat(half);
        float* out = dst + b * kQuantBlock;
        for (size_t j = 0; j < kQuantBlock; ++j) {
          const int q = q8 ? static_cast<int8_t>(block[2 + j])
                           : (j < kQuantBlock / 2
                                  ? block[2 + j] & 0xF
                                  : block[2 + j - kQuantBlock / 2] >> 4) - 8;
          out[j] = static_cast<float>(q) * d;
        }
      }
      return;
    }
    case WeightType::kQ6_K:
      // Validation admits Q6_K as a MATMUL weight only (no table, no KV
      // cache), and matmuls read it through their own loops.
      std::fprintf(stderr,
                   "softnpu: ConvertToF32 called with Q6_K (a MATMUL weight "
                   "type only)\n");
      std::abort();
    case WeightType::kQ8_0P16:
    case WeightType::kQ4_0P16:
    case WeightType::kQ8_0P16S:
    case WeightType::kQ4_0P16S:
      // A row's blocks are spread over its panel, not contiguous: callers
      // gather them first (P16RowToBlocks) and convert those as the block
      // type (BlockTypeOf).
      std::fprintf(stderr,
                   "softnpu: ConvertToF32 called with a panel type (rows are "
                   "not contiguous; convert P16RowToBlocks's blocks)\n");
      std::abort();
  }
}

void ConvertF32ToF16(const float* src, uint16_t* dst, size_t count) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToF16Range)(src, dst, count);
}

void QuantizeToI8Groups(const float* src, uint8_t* dst, size_t groups,
                        size_t group_len) {
  for (size_t g = 0; g < groups; ++g) {
    const float* x = src + g * group_len;
    uint8_t* out = dst + g * I8GroupBytes(group_len);
    float amax = 0.0f;
    for (size_t i = 0; i < group_len; ++i) {
      amax = std::max(amax, std::fabs(x[i]));  // ignores NaN
    }
    const float d = amax / 127.0f;
    std::memcpy(out, &d, sizeof(d));
    for (size_t i = 0; i < group_len; ++i) {
      // Non-finite quotients (d = 0, infinite d) become 0.
      const float r = d > 0.0f ? std::nearbyint(x[i] / d) : 0.0f;
      const int q = r >= 127.0f    ? 127
                    : r <= -127.0f ? -127
                    : r == r       ? static_cast<int>(r)
                                   : 0;
      out[sizeof(d) + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

void DequantizeI8Groups(const uint8_t* src, float* dst, size_t groups,
                        size_t group_len) {
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t* in = src + g * I8GroupBytes(group_len);
    float d;
    std::memcpy(&d, in, sizeof(d));
    for (size_t i = 0; i < group_len; ++i) {
      dst[g * group_len + i] =
          d * static_cast<float>(static_cast<int8_t>(in[sizeof(d) + i]));
    }
  }
}

}  // namespace lnpu::softnpu::compute
#endif  // HWY_ONCE
