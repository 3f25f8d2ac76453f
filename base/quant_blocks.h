// Block layouts of the two int8/int4 weight formats the device computes on
// directly (LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q4_0), which are also GGUF's Q8_0
// and Q4_0: 32 elements per block, one f16 scale d first.
//   Q8_0: d, then 32 int8 q;             x = d * q.
//   Q4_0: d, then 16 bytes of 4-bit q (element i in the low nibble of byte
//         i, element 16 + i in its high nibble);  x = d * (q - 8).
#ifndef LNPU_BASE_QUANT_BLOCKS_H_
#define LNPU_BASE_QUANT_BLOCKS_H_

#include <cstddef>

namespace lnpu {

inline constexpr size_t kQuantBlock = 32;  // elements per Q8_0 / Q4_0 block
inline constexpr size_t kQ8_0BlockBytes = 2 + kQuantBlock;
inline constexpr size_t kQ4_0BlockBytes = 2 + kQuantBlock / 2;

}  // namespace lnpu

#endif  // LNPU_BASE_QUANT_BLOCKS_H_
