#ifndef LNPU_BASE_HALF_H_
#define LNPU_BASE_HALF_H_

// Bit-exact conversions between float and the 16-bit float formats stored in
// GGUF files: IEEE 754 binary16 ("F16") and bfloat16 ("BF16"). Narrowing
// rounds to nearest, ties to even; overflow gives infinity; NaNs stay NaNs
// (quiet, sign and upper payload bits kept). Pure functions, thread-safe.

#include <bit>
#include <cstdint>

namespace lnpu {

// binary16 bits -> float. Exact for every input, including subnormals.
constexpr float Float16ToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) {  // Infinity or NaN.
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent != 0) {  // Normal: rebias the exponent from 15 to 127.
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return std::bit_cast<float>(sign);  // Signed zero.
  // Subnormal (mantissa * 2^-24): normalize into a float, which has the range.
  uint32_t float_exponent = 113;  // 127 - 14
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return std::bit_cast<float>(sign | (float_exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

// float -> binary16 bits, round to nearest even.
constexpr uint16_t FloatToFloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: keep it quiet and keep the top payload.
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) {  // Rounds to 65536 or above (or is infinite).
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (magnitude >= 0x38800000u) {  // Normal binary16 (>= 2^-14).
    uint32_t half = (magnitude - 0x38000000u) >> 13;
    const uint32_t remainder = magnitude & 0x1fffu;
    if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u) != 0)) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return static_cast<uint16_t>(sign);  // Below 2^-25: zero.
  // Subnormal binary16: units of 2^-24. A round-up to 0x400 yields the
  // smallest normal, which is the correct encoding.
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t half = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (remainder > halfway || (remainder == halfway && (half & 1u) != 0)) ++half;
  return static_cast<uint16_t>(sign | half);
}

// bfloat16 bits -> float (exact: bfloat16 is the top half of a float).
constexpr float BFloat16ToFloat(uint16_t bfloat) {
  return std::bit_cast<float>(static_cast<uint32_t>(bfloat) << 16);
}

// float -> bfloat16 bits, round to nearest even.
constexpr uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: truncate and force quiet.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace lnpu

#endif  // LNPU_BASE_HALF_H_
