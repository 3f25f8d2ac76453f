#include "compiler_artifacts/gguf/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/half.h"
#include "base/status_macros.h"
#include "compiler_artifacts/gguf/string_view_compat.h"

namespace lnpu::gguf {
namespace {

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

}  // namespace

absl::Status QuantizeRowQ8_0(absl::Span<const float> src,
                             absl::Span<uint8_t> dst) {
  LNPU_RETURN_IF_ERROR(CheckQuantizeSizes("Q8_0", kQ8_0BlockBytes, src, dst));
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
  LNPU_RETURN_IF_ERROR(CheckQuantizeSizes("Q4_0", kQ4_0BlockBytes, src, dst));
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

}  // namespace lnpu::gguf
