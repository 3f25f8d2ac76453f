// Q6_K matrices converted to Q8_0 as a copy of the weights is written
// (runtime::Model::Load on a device without DRM_LNPU_CAP_Q6_K_PREFERRED):
// where each converted matrix goes in the weights buffer, and the
// conversion of its rows.
//
// Thread-safety: plain functions and values.
#ifndef RUNTIME_Q6_K_CONVERSION_H_
#define RUNTIME_Q6_K_CONVERSION_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/program.h"

namespace lnpu::runtime {

// A Q6_K matrix of the artifact that the copy writes as Q8_0 at
// `q8_0_offset` of the weights buffer (Program::UseQ8_0For).
struct Q8_0Conversion {
  WeightMatrix q6_k;
  uint64_t q8_0_offset = 0;
};

// The weights buffer of a copy with conversions: the data section's first
// copied_bytes copied as they are, the conversions' Q8_0 matrices at their
// offsets, buffer_bytes in all.
struct Q8_0Layout {
  std::vector<Q8_0Conversion> conversions = {};
  uint64_t copied_bytes = 0;
  uint64_t buffer_bytes = 0;
};

// One weight of the artifact's table: the bytes [offset, offset + size)
// of the data section.
struct WeightExtent {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Where a copy of a data section of `data_bytes`, holding `weights`, puts
// the Q8_0 form of each of `q6_k` (Program::Q6_KMatrices: sorted by offset,
// disjoint): the last of them in place when it is the last weight of the
// section and 64-byte aligned (its Q6_K bytes are then not copied, and the
// buffer grows by the difference), the others one after another from the
// first 64-byte boundary after the section. Each starts 64-byte aligned,
// as panels need. No `q6_k`: the section copied whole.
Q8_0Layout PlanQ8_0Conversions(uint64_t data_bytes, absl::Span<const WeightExtent> weights,
                               absl::Span<const WeightMatrix> q6_k);

// Converts `rows` rows of `row_len` weights (a multiple of 256) from Q6_K
// at `q6_k` to Q8_0 at `q8_0` (exactly the sizes of those rows): each row
// dequantized exactly and quantized to Q8_0 (compiler_artifacts/gguf), as
// npu-compile converts a Q6_K tensor for --weights q8, so the result is
// the same bytes. `row` is scratch of at least row_len floats.
// InvalidArgument when a row holds a non-finite weight (a damaged file).
absl::Status ConvertQ6_KRowsToQ8_0(absl::Span<const uint8_t> q6_k, size_t rows, size_t row_len,
                                   absl::Span<float> row, absl::Span<uint8_t> q8_0);

}  // namespace lnpu::runtime

#endif  // RUNTIME_Q6_K_CONVERSION_H_
