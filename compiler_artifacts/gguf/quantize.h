#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_QUANTIZE_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_QUANTIZE_H_

// Quantization of f32 rows into the GGML block formats the NPU executes
// (LNPU_DTYPE_Q8_0 / LNPU_DTYPE_Q4_0 have exactly the GGUF Q8_0 / Q4_0
// layouts; see dequantize.h for them and for the way back). The arithmetic
// follows llama.cpp's reference quantizers (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref) operation for operation, so results are bit-exact
// with them.
//
// Pure functions, thread-safe.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "compiler_artifacts/gguf/ggml_type.h"

namespace lnpu::gguf {

// Elements per block of Q8_0 and Q4_0, and their block sizes.
inline constexpr uint32_t kQuantBlockElements = GgmlBlockElements(GgmlType::kQ8_0);
inline constexpr uint32_t kQ8_0BlockBytes = GgmlBlockBytes(GgmlType::kQ8_0);
inline constexpr uint32_t kQ4_0BlockBytes = GgmlBlockBytes(GgmlType::kQ4_0);
static_assert(GgmlBlockElements(GgmlType::kQ4_0) == kQuantBlockElements);

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

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_QUANTIZE_H_
