// ROPE (rope.h).
//
// Highway re-includes this file once per enabled SIMD target (see
// foreach_target.h); the code between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled for each target, the HWY_ONCE part once.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernel_iface/softnpu/compute/rope.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cmath>
#include <cstring>
#include <vector>

#include "hwy/highway.h"
#include "kernel_iface/softnpu/compute/kernel_scheduling.h"
#include "kernel_iface/softnpu/compute/rope.h"
#include "kernel_iface/softnpu/compute/simd-inl.h"

// Target-independent code, defined on the first inclusion only.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_ROPE_TABLE_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_ROPE_TABLE_
namespace lnpu::softnpu::compute {

// The rotation table of `position`: NORM cos_t[2i] = cos_t[2i+1] =
// cos(theta_i) and sin_t (-sin, +sin), so that out = x * cos_t +
// swap_pairs(x) * sin_t; NEOX cos_t[i], sin_t[i] for i < rope_dim / 2.
// `table` holds 2 * rope_dim floats: cos_t, then sin_t.
inline void RopeTable(const RopeArgs& a, const double* inv_freq, int32_t position, float* table) {
  const size_t half = a.rope_dim / 2;
  float* cos_t = table;
  float* sin_t = table + a.rope_dim;
  const double pos = static_cast<double>(position);
  for (size_t i = 0; i < half; ++i) {
    const double theta = pos * inv_freq[i];
    const float c = static_cast<float>(std::cos(theta));
    const float s = static_cast<float>(std::sin(theta));
    if (a.neox) {
      cos_t[i] = c;
      sin_t[i] = s;
    } else {
      cos_t[2 * i] = cos_t[2 * i + 1] = c;
      sin_t[2 * i] = -s;
      sin_t[2 * i + 1] = s;
    }
  }
}

}  // namespace lnpu::softnpu::compute
#endif

HWY_BEFORE_NAMESPACE();
namespace lnpu::softnpu::compute {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Every head of row r rotated by `table` (RopeTable of its position).
void RotateRow(const RopeArgs& a, size_t r, const float* table) {
  const size_t half = a.rope_dim / 2;
  const float* cos_t = table;
  const float* sin_t = table + a.rope_dim;
  for (size_t h = 0; h < a.heads; ++h) {
    const size_t offset = (r * a.heads + h) * a.head_dim;
    const float* x = a.src + offset;
    float* y = a.dst + offset;
    if (a.neox) {
      ForEachVector(half, [&](auto d, size_t i) {
        const auto x0 = hn::LoadU(d, x + i);
        const auto x1 = hn::LoadU(d, x + half + i);
        const auto c = hn::LoadU(d, cos_t + i);
        const auto s = hn::LoadU(d, sin_t + i);
        hn::StoreU(hn::NegMulAdd(x1, s, hn::Mul(x0, c)), d, y + i);
        hn::StoreU(hn::MulAdd(x0, s, hn::Mul(x1, c)), d, y + half + i);
      });
    } else {
      const DF df;
      const size_t lanes = hn::Lanes(df);
      size_t i = 0;
      if (lanes >= 2) {  // pairs never straddle an even lane count
        for (; i + lanes <= a.rope_dim; i += lanes) {
          const auto v = hn::LoadU(df, x + i);
          const auto rotated = hn::MulAdd(hn::Reverse2(df, v), hn::LoadU(df, sin_t + i),
                                          hn::Mul(v, hn::LoadU(df, cos_t + i)));
          hn::StoreU(rotated, df, y + i);
        }
      }
      for (; i < a.rope_dim; i += 2) {
        const float x0 = x[i];
        const float x1 = x[i + 1];
        y[i] = x0 * cos_t[i] + x1 * sin_t[i];
        y[i + 1] = x1 * cos_t[i + 1] + x0 * sin_t[i + 1];
      }
    }
    if (y != x && a.rope_dim < a.head_dim) {
      std::memcpy(y + a.rope_dim, x + a.rope_dim, (a.head_dim - a.rope_dim) * sizeof(float));
    }
  }
}

// Rows [row_begin, row_end), each with its own table in `table` (the
// worker's 2 * rope_dim floats).
void RopeRows(const RopeArgs& a, const double* inv_freq, size_t row_begin, size_t row_end,
              float* table) {
  for (size_t r = row_begin; r < row_end; ++r) {
    RopeTable(a, inv_freq, a.positions[r], table);
    RotateRow(a, r, table);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::softnpu::compute
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lnpu::softnpu::compute {

HWY_EXPORT(RopeRows);
HWY_EXPORT(RotateRow);

namespace {

// Whether `t` holds the inverse frequencies of a's parameters.
bool SameFrequencies(const KernelScratch::RopeTables& t, const RopeArgs& a) {
  const size_t half = a.rope_dim / 2;
  if (t.rope_dim != a.rope_dim || t.theta_base != a.theta_base || t.freq_scale != a.freq_scale ||
      t.freq_factors.size() != (a.freq_factors != nullptr ? half : 0)) {
    return false;
  }
  return a.freq_factors == nullptr ||
         std::memcmp(t.freq_factors.data(), a.freq_factors, half * sizeof(float)) == 0;
}

}  // namespace

void Rope(const RopeArgs& args, WorkerPool& pool, KernelScratch* scratch) {
  const size_t half = args.rope_dim / 2;
  KernelScratch::RopeTables& t = scratch->rope;
  if (!SameFrequencies(t, args)) {
    t.rope_dim = args.rope_dim;
    t.theta_base = args.theta_base;
    t.freq_scale = args.freq_scale;
    if (args.freq_factors != nullptr) {
      t.freq_factors.assign(args.freq_factors, args.freq_factors + half);
    } else {
      t.freq_factors.clear();
    }
    t.inv_freq.resize(half);
    for (size_t i = 0; i < half; ++i) {
      t.inv_freq[i] = static_cast<double>(args.freq_scale) *
                      std::pow(static_cast<double>(args.theta_base),
                               -2.0 * static_cast<double>(i) / static_cast<double>(args.rope_dim));
      if (args.freq_factors != nullptr) t.inv_freq[i] /= args.freq_factors[i];
    }
    t.has_position = false;
  }
  if (args.rows == 1) {
    // A decode step rotates one position in every layer: its table once.
    if (!t.has_position || t.position != args.positions[0] || t.neox != args.neox) {
      t.table.resize(2 * args.rope_dim);
      RopeTable(args, t.inv_freq.data(), args.positions[0], t.table.data());
      t.has_position = true;
      t.position = args.positions[0];
      t.neox = args.neox;
    }
    HWY_DYNAMIC_DISPATCH(RotateRow)(args, 0, t.table.data());
    return;
  }
  size_t stride = 0;
  float* tables = WorkerScratch(scratch->f32, 2 * args.rope_dim, pool.threads(), &stride);
  RunTasks(pool, args.rows, uint64_t{args.rows} * args.heads * args.head_dim,
           [&](size_t row, int worker) {
             HWY_DYNAMIC_DISPATCH(RopeRows)
             (args, t.inv_freq.data(), row, row + 1, tables + worker * stride);
           });
}

}  // namespace lnpu::softnpu::compute
#endif  // HWY_ONCE
