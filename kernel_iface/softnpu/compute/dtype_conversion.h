// Element-type conversions of the software NPU: weights and gather-table
// rows to f32 (GATHER_ROWS), f32 to f16 (SCATTER_ROWS into an F16 cache)
// and the int8 KV-cache groups (LNPU_DTYPE_I8). Single-threaded; the
// preconditions of kernel_types.h apply.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_DTYPE_CONVERSION_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_DTYPE_CONVERSION_H_

#include <cstddef>
#include <cstdint>

#include "kernel_iface/softnpu/compute/kernel_types.h"

namespace lnpu::softnpu::compute {

// dst[i] = f32(src[i]) for `count` weights of `type` (for Q8_0 / Q4_0 a
// whole number of blocks starting at a block boundary); no overlap. Not for
// Q6_K, a MATMUL weight type only, nor for the panel types, whose rows are
// not contiguous (both abort): for a panel row, gather its blocks with
// P16RowToBlocks (base/quant_blocks.h) and convert them as their block type
// (BlockTypeOf).
void ConvertToF32(WeightType type, const void* src, float* dst, size_t count);

// dst[i] = binary16(src[i]) rounded to nearest even, for `count` values; no
// overlap.
void ConvertF32ToF16(const float* src, uint16_t* dst, size_t count);

// LNPU_DTYPE_I8 groups, the int8 KV cache: each of `groups` groups of
// `group_len` values is stored as an f32 scale d = max|x| / 127 followed by
// group_len int8 q = round_to_nearest_even(x / d), clamped to [-127, 127]
// (all 0 when d = 0); x ~ d * q. dst holds groups * I8GroupBytes(group_len)
// bytes, src and dst do not overlap. Scalar and exact: one row per layer and
// token goes through it.
constexpr size_t I8GroupBytes(size_t group_len) {
  return sizeof(float) + group_len;
}
void QuantizeToI8Groups(const float* src, uint8_t* dst, size_t groups,
                        size_t group_len);
// dst[g * group_len + i] = d_g * q_gi, the inverse of QuantizeToI8Groups up
// to its rounding; no overlap.
void DequantizeI8Groups(const uint8_t* src, float* dst, size_t groups,
                        size_t group_len);

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_DTYPE_CONVERSION_H_
