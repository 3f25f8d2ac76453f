// The register-tile loop of the aarch64 quantized-matmul paths, included by
// quant_matmul_arm.cc once per path inside that path's namespace and
// `#pragma GCC target` region (so the loop and the path's Kernel::Tile,
// which it inlines, share one instruction set). No include guard: each
// inclusion defines Tiles anew. The namespace supplies
//   Kernel::Tile<W, kRows>(w, x, dx, blocks, acc): acc[i] lane j += the
//   scaled dot product of activation row x[i] and weight column w[j] over
//   `blocks` blocks (quant_matmul_arm.cc, DotTile).

// dst rows [row_begin, row_end) x columns [col_begin, col_end) in tiles of
// kRows x kTileCols. Column groups are the outer loop, so a group's weights
// stay in L1 while the rows pass over them. Rows and columns past the end
// repeat the last one; their sums are discarded.
template <class W, size_t kRows>
void Tiles(const MatmulArgs& a, const QuantizedActivations& x,
           size_t row_begin, size_t row_end, size_t col_begin,
           size_t col_end) {
  const size_t blocks = a.k / kQuantBlock;
  const size_t row_bytes = blocks * W::kBlockBytes;
  const auto* weight = static_cast<const uint8_t*>(a.weight);
  for (size_t c = col_begin; c < col_end; c += kTileCols) {
    const uint8_t* w[kTileCols];
    for (size_t j = 0; j < kTileCols; ++j) {
      w[j] = weight + std::min(c + j, col_end - 1) * row_bytes;
    }
    const size_t cols = std::min(kTileCols, col_end - c);
    for (size_t r = row_begin; r < row_end; r += kRows) {
      const int8_t* xq[kRows];
      const float* xs[kRows];
      float32x4_t acc[kRows];
      for (size_t i = 0; i < kRows; ++i) {
        const size_t row = std::min(r + i, row_end - 1);
        xq[i] = x.q + row * a.k;
        xs[i] = x.scales + row * blocks;
        acc[i] = vdupq_n_f32(0.0f);
      }
      Kernel::template Tile<W, kRows>(w, xq, xs, blocks, acc);
      const size_t rows = std::min(kRows, row_end - r);
      for (size_t i = 0; i < rows; ++i) {
        float sums[kTileCols];
        vst1q_f32(sums, acc[i]);
        for (size_t j = 0; j < cols; ++j) {
          a.dst[(r + i) * a.n + c + j] = MatmulOutputBase(a, r + i, c + j) + sums[j];
        }
      }
    }
  }
}

void Gemm(const MatmulArgs& a, const QuantizedActivations& x, size_t row_begin,
          size_t row_end, size_t col_begin, size_t col_end) {
  if (IsPanelType(a.weight_type)) {
    PortableP16Matmul(a, x, row_begin, row_end, col_begin, col_end);
  } else if (a.weight_type == WeightType::kQ8_0) {
    Tiles<Q8_0, 4>(a, x, row_begin, row_end, col_begin, col_end);
  } else {
    Tiles<Q4_0, 4>(a, x, row_begin, row_end, col_begin, col_end);
  }
}
