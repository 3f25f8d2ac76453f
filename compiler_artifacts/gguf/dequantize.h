#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_DEQUANTIZE_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_DEQUANTIZE_H_

// Conversion to f32 of the GGML tensor types the compiler imports: every
// type llama.cpp's llama-quantize writes for its common presets (Q4_0 ..
// Q6_K, IQ4_NL, IQ4_XS) and the float types. Block sizes come from
// kGgmlTypeTraits (ggml_type.h).
//
// Block layouts (little-endian, no padding; f16 = IEEE binary16; "nibble"
// means the low nibble of byte j holds element j and the high one element
// j + 16 of a 32-element group, unless said otherwise):
//   Q4_0   (32 in 18):  f16 d, 16 B nibbles;               w = d * (q - 8)
//   Q4_1   (32 in 20):  f16 d, f16 m, 16 B nibbles;        w = d * q + m
//   Q5_0   (32 in 22):  f16 d, u32 qh (bit j = bit 4 of element j),
//                       16 B nibbles;                      w = d * (q - 16)
//   Q5_1   (32 in 24):  f16 d, f16 m, u32 qh, 16 B nibbles; w = d * q + m
//   Q8_0   (32 in 34):  f16 d, int8 q[32];                 w = d * q
//   Q2_K  (256 in 84):  16 B scales (low nibble scale, high nibble min of
//                       16-element sub-blocks), 64 B of 2-bit quants, f16 d,
//                       f16 dmin;           w = d * scale * q - dmin * min
//   Q3_K (256 in 110):  32 B hmask (bit 2 of each quant, inverted), 64 B of
//                       2-bit low quants, 12 B of 6-bit scales (16
//                       sub-blocks of 16), f16 d;  w = d * (scale - 32) * q,
//                       q in [-4, 3]
//   Q4_K (256 in 144):  f16 d, f16 dmin, 12 B of 6-bit (scale, min) pairs
//                       for 8 sub-blocks of 32, 128 B nibbles (groups of 64);
//                                           w = d * scale * q - dmin * min
//   Q5_K (256 in 176):  as Q4_K plus 32 B qh (bit 4 of each quant) before
//                       the nibbles
//   Q6_K (256 in 210):  128 B low nibbles, 64 B high 2-bit pairs, 16 int8
//                       scales (sub-blocks of 16), f16 d;
//                                                    w = d * scale * (q - 32)
//   IQ4_NL (32 in 18):  f16 d, 16 B nibbles indexing a fixed non-linear
//                       table of 16 int8 values;       w = d * table[q]
//   IQ4_XS (256 in 136): f16 d, u16 scales_h, 4 B scales_l (6-bit scales of
//                       8 sub-blocks of 32), 128 B nibbles as IQ4_NL;
//                                             w = d * (scale - 32) * table[q]
// The arithmetic follows llama.cpp's reference dequantizers (dequantize_row_*
// in ggml-quants.c) operation for operation, in float, so results are
// bit-exact with them. The library is built with -ffp-contract=off so that
// no multiply-add is fused on targets with FMA (which would change roundings).
//
// Pure functions, thread-safe.

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compiler_artifacts/gguf/ggml_type.h"

namespace lnpu::gguf {

// Whether DequantizeRow converts `type`.
bool CanDequantize(GgmlType type);

// The types CanDequantize accepts, for messages: "F32, F16, BF16, Q4_0, ...".
std::string_view DequantizableTypeNames();

// Converts dst.size() elements of `type` stored at `src` to f32; `src` must
// hold exactly the bytes of dst.size() elements (a whole number of blocks).
// InvalidArgument on a size mismatch, Unimplemented (naming the type and the
// supported ones) for types CanDequantize rejects.
absl::Status DequantizeRow(GgmlType type, absl::Span<const uint8_t> src,
                           absl::Span<float> dst);

// Byte offsets, within one block of a block-quantized `type` that
// CanDequantize accepts, of its f16 fields (d; and dmin or m where the type
// has one). Every dequantized element is a linear combination of these
// fields' values, the rest of the block fixed: scaling all of them scales
// the block. Empty for F32, F16, BF16.
absl::Span<const uint32_t> BlockHalfFieldOffsets(GgmlType type);

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_DEQUANTIZE_H_
