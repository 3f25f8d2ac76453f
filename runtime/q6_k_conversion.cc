#include "runtime/q6_k_conversion.h"

#include <algorithm>

#include "base/status_macros.h"
#include "compiler_artifacts/format/artifact_verifier.h"
#include "compiler_artifacts/gguf/dequantize.h"
#include "compiler_artifacts/gguf/quantize.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::runtime {

namespace {

// Bytes of `m` converted (m.row_len a multiple of 256).
uint64_t Q8_0Bytes(const WeightMatrix& m) {
  return artifact::WeightBytes(LNPU_DTYPE_Q8_0, m.row_len, m.rows);
}

}  // namespace

Q8_0Layout PlanQ8_0Conversions(uint64_t data_bytes, absl::Span<const WeightExtent> weights,
                               absl::Span<const WeightMatrix> q6_k) {
  const auto align64 = [](uint64_t n) { return (n + 63) / 64 * 64; };
  Q8_0Layout layout{.copied_bytes = data_bytes, .buffer_bytes = data_bytes};
  if (q6_k.empty()) return layout;
  const WeightMatrix& last = q6_k.back();
  const bool in_place =
      last.offset % 64 == 0 && std::all_of(weights.begin(), weights.end(), [&](WeightExtent w) {
        return w.offset == last.offset || w.offset + w.size <= last.offset;
      });
  uint64_t next = align64(data_bytes);
  if (in_place) {
    layout.copied_bytes = last.offset;
    next = align64(last.offset + Q8_0Bytes(last));
  }
  for (size_t i = 0; i < q6_k.size(); ++i) {
    if (in_place && i + 1 == q6_k.size()) {
      layout.conversions.push_back({q6_k[i], q6_k[i].offset});
    } else {
      layout.conversions.push_back({q6_k[i], next});
      next = align64(next + Q8_0Bytes(q6_k[i]));
    }
  }
  layout.buffer_bytes = std::max(next, layout.copied_bytes);
  return layout;
}

absl::Status ConvertQ6_KRowsToQ8_0(absl::Span<const uint8_t> q6_k, size_t rows, size_t row_len,
                                   absl::Span<float> row, absl::Span<uint8_t> q8_0) {
  const size_t q6_k_row_bytes = artifact::WeightBytes(LNPU_DTYPE_Q6_K, row_len, 1);
  const size_t q8_0_row_bytes = artifact::WeightBytes(LNPU_DTYPE_Q8_0, row_len, 1);
  for (size_t r = 0; r < rows; ++r) {
    const absl::Span<float> values = row.first(row_len);
    LNPU_RETURN_IF_ERROR(gguf::DequantizeRow(
        gguf::GgmlType::kQ6_K, q6_k.subspan(r * q6_k_row_bytes, q6_k_row_bytes), values));
    LNPU_RETURN_IF_ERROR(
        gguf::QuantizeRowQ8_0(values, q8_0.subspan(r * q8_0_row_bytes, q8_0_row_bytes)));
  }
  return absl::OkStatus();
}

}  // namespace lnpu::runtime
