#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_QUANTIZE_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_QUANTIZE_H_

// Row conversions between f32 and the GGML block formats that GGUF files
// store and the NPU executes (LNPU_DTYPE_Q8_0 / LNPU_DTYPE_Q4_0 have exactly
// the GGUF Q8_0 / Q4_0 layouts).
//
// Block layouts (little-endian, no padding):
//   Q8_0: 32 elements in 34 bytes: f16 d, int8 q[32];          w = d * q
//   Q4_0: 32 elements in 18 bytes: f16 d, uint8 qs[16]; byte j holds element
//         j in its low nibble and element j + 16 in its high nibble;
//                                                           w = d * (nibble - 8)
//   Q4_K: 256 elements in 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit
//         packed (scale, min) pairs for 8 sub-blocks of 32, 128 bytes of
//         nibbles;                               w = d * scale * q - dmin * min
//   Q6_K: 256 elements in 210 bytes: 128 bytes low nibbles, 64 bytes high
//         2-bit pairs, 16 int8 scales (sub-blocks of 16), f16 d;
//                                                   w = d * scale * (q - 32)
// The arithmetic follows llama.cpp's reference implementations
// (quantize_row_q8_0_ref, quantize_row_q4_0_ref, dequantize_row_*) operation
// for operation, so results are bit-exact with them.
//
// Pure functions, thread-safe.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compiler_artifacts/gguf/ggml_type.h"

namespace lnpu::gguf {

// Elements per block of Q8_0 and Q4_0.
inline constexpr uint32_t kQuantBlockElements = 32;
inline constexpr uint32_t kQ8_0BlockBytes = 34;
inline constexpr uint32_t kQ4_0BlockBytes = 18;

// Quantizes `src` (a multiple of 32 finite values) into
// src.size() / 32 * 34 bytes of Q8_0 at `dst`: per block d = max|x| / 127,
// q = round(x / d) (0 for an all-zero block). InvalidArgument on a size
// mismatch or a non-finite input.
absl::Status QuantizeRowQ8_0(absl::Span<const float> src,
                             absl::Span<uint8_t> dst);

// Quantizes `src` (a multiple of 32 finite values) into
// src.size() / 32 * 18 bytes of Q4_0 at `dst`: per block d = m / -8 where m
// is the value of largest magnitude (sign kept), q = min(15, trunc(x / d +
// 8.5)). InvalidArgument on a size mismatch or a non-finite input.
absl::Status QuantizeRowQ4_0(absl::Span<const float> src,
                             absl::Span<uint8_t> dst);

// Converts dst.size() elements of `type` stored at `src` to f32. Supported
// types: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K; `src` must hold exactly
// the bytes of dst.size() elements (a whole number of blocks).
// InvalidArgument on a size mismatch, Unimplemented (naming the type and
// the supported ones) for other types.
absl::Status DequantizeRow(GgmlType type, absl::Span<const uint8_t> src,
                           absl::Span<float> dst);

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_QUANTIZE_H_
