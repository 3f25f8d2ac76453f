// Types every compute kernel of the software NPU shares: the scratch memory
// kernels reuse across commands and the element types of weights and KV
// caches. The kernels themselves, one header per op family, are listed in
// kernels.h.
//
// Preconditions common to every kernel: arguments describe a command that
// ValidateCommand accepted (counts > 0, operands inside host memory, no
// overlap other than the in-place aliasing each kernel allows) and
// data-dependent checks (indices, positions) have already passed.
// Thread-safety: a kernel uses the given pool and scratch exclusively; one
// kernel runs at a time per pool.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_KERNEL_TYPES_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_KERNEL_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/quant_blocks.h"

namespace lnpu::softnpu::compute {

using ::lnpu::P16Scales;

// Memory a kernel reuses across calls instead of allocating per command;
// kernels resize the vectors as needed.
struct KernelScratch {
  std::vector<float> f32;
  std::vector<uint32_t> u32;
  std::vector<uint16_t> u16;
  // Matmul with block-quantized weights: src quantized to int8 per block of
  // 32 and the blocks' scales (QuantizedActivations in quant_matmul.h).
  std::vector<int8_t> quantized_src;
  std::vector<float> quantized_src_scales;
  // The quantized GEMV's parallel tasks (Matmul, MatmulGroup): columns
  // [begin, end) of matrix `matrix` of the group each.
  struct ColumnChunk {
    uint32_t matrix;
    size_t begin;
    size_t end;
  };
  std::vector<ColumnChunk> column_chunks;
  // ROPE (rope.cc): the inverse frequencies of the last command's
  // parameters, and the cos / sin table of the last position rotated by a
  // one-row command, kept while the parameters and the position stay the
  // same (every RoPE of a decode step's layers).
  struct RopeTables {
    size_t rope_dim = 0;
    float theta_base = 0.0f;
    float freq_scale = 0.0f;
    std::vector<float> freq_factors;  // empty: none
    std::vector<double> inv_freq;
    bool has_position = false;
    int32_t position = 0;
    bool neox = false;
    std::vector<float> table;  // rope_dim cos, then rope_dim sin (RopeRows)
  };
  RopeTables rope;
};

// Element type of matmul weights, gather tables and (F32/F16 only) the
// attention KV cache. Q8_0 / Q4_0 are the LNPU_DTYPE_Q8_0 / LNPU_DTYPE_Q4_0
// block formats (rows of whole 32-element blocks: f16 scale + 32 int8, or
// f16 scale + 16 bytes of nibbles); Q8_0P16 / Q4_0P16 are
// LNPU_DTYPE_Q8_0_P16 / _Q4_0_P16, the Q8_0 / Q4_0 blocks of each 16 rows
// rearranged into a panel, and Q8_0P16S / Q4_0P16S the LNPU_DTYPE_*_P16S
// panels with their scales in the quant stream (base/quant_blocks.h;
// weights and tables only, never a KV cache); Q6_K is LNPU_DTYPE_Q6_K
// (256-element blocks; matmul weights only).
enum class WeightType {
  kF32,
  kF16,
  kQ8_0,
  kQ4_0,
  kQ8_0P16,
  kQ4_0P16,
  kQ8_0P16S,
  kQ4_0P16S,
  kQ6_K
};

// Whether `type` stores its rows in panels (Q8_0P16, Q4_0P16, Q8_0P16S,
// Q4_0P16S).
constexpr bool IsPanelType(WeightType type) {
  return type == WeightType::kQ8_0P16 || type == WeightType::kQ4_0P16 ||
         type == WeightType::kQ8_0P16S || type == WeightType::kQ4_0P16S;
}

// The block format of a panel type's blocks (Q8_0 or Q4_0); other types
// are their own.
constexpr WeightType BlockTypeOf(WeightType type) {
  if (type == WeightType::kQ8_0P16 || type == WeightType::kQ8_0P16S) return WeightType::kQ8_0;
  if (type == WeightType::kQ4_0P16 || type == WeightType::kQ4_0P16S) return WeightType::kQ4_0;
  return type;
}

// Where a panel type keeps its scales.
constexpr P16Scales PanelScalesOf(WeightType type) {
  return type == WeightType::kQ8_0P16S || type == WeightType::kQ4_0P16S ? P16Scales::kAfterPair
                                                                        : P16Scales::kAfterPanel;
}

// Bytes of `elements` weights of `type` (a multiple of 32 for the quantized
// types, of 256 for Q6_K). Panel types: a row's share of its panel (whole panels only).
size_t WeightBytes(WeightType type, size_t elements);

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_KERNEL_TYPES_H_
