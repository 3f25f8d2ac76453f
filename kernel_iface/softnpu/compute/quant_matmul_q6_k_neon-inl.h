// The NEON loop of MATMUL with Q6_K weights (quant_matmul_q6_k.h), included
// by quant_matmul_q6_k.cc once per way of forming the 4-product int32 lanes
// (a namespace with `int32x4_t Dot4(int8x16_t q, int8x16_t x)`, lane j the
// sum of products 4j .. 4j + 3), each time under that way's target. Both
// ways give the same exact lanes, so the same bits. Not a standalone
// header: the includer provides <arm_neon.h>, the constants, BlockScale,
// PrefetchAhead and ForRows.

// The q - 32 (-32 .. 31) of a block's activation blocks b = 0 .. 7, 32
// each as two vectors of 16.
inline void UnpackCenteredQuants(const uint8_t* block, int8x16_t (&q)[kActBlocks][2]) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const uint8x16_t three = vdupq_n_u8(3);
  const int8x16_t center = vdupq_n_s8(32);
  for (size_t h = 0; h < 2; ++h) {
    for (size_t half = 0; half < 2; ++half) {
      const uint8_t* ql = block + 64 * h + 16 * half;
      const uint8x16_t l0 = vld1q_u8(ql);
      const uint8x16_t l1 = vld1q_u8(ql + 32);
      const uint8x16_t qh = vld1q_u8(block + kQ6_KBlock / 2 + 32 * h + 16 * half);
      const uint8x16_t u[4] = {
          vorrq_u8(vandq_u8(l0, low4), vshlq_n_u8(vandq_u8(qh, three), 4)),
          vorrq_u8(vandq_u8(l1, low4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), three), 4)),
          vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), three), 4)),
          vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4))};
      for (size_t m = 0; m < 4; ++m) {
        q[4 * h + m][half] = vsubq_s8(vreinterpretq_s8_u8(u[m]), center);
      }
    }
  }
}

// The order's 16 lanes as part[b % 2][0 | 1] (lanes 0-3 | 4-7 of an
// activation block).
template <size_t kRows>
inline void NeonColumn(const MatmulArgs& a, const QuantizedActivations& x, size_t c) {
  const size_t blocks = a.k / kQ6_KBlock;
  const size_t row_bytes = blocks * kQ6_KBlockBytes;
  const uint8_t* column = static_cast<const uint8_t*>(a.weight) + c * row_bytes;
  float32x4_t acc[kRows][2][2];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t e = 0; e < 2; ++e) acc[r][e][0] = acc[r][e][1] = vdupq_n_f32(0.0f);
  }
  for (size_t s = 0; s < blocks; ++s) {
    const uint8_t* block = column + s * kQ6_KBlockBytes;
    PrefetchAhead(block);
    int8x16_t q[kActBlocks][2];
    UnpackCenteredQuants(block, q);
    const auto* sc = reinterpret_cast<const int8_t*>(block + kQ6_KScalesOffset);
    const float32x4_t d = vdupq_n_f32(BlockScale(block));
    for (size_t r = 0; r < kRows; ++r) {
      const int8_t* xq = x.q + r * a.k + s * kQ6_KBlock;
      const float* xs = x.scales + r * (a.k / kQuantBlock) + s * kActBlocks;
      float32x4_t part[2][2];
      for (size_t e = 0; e < 2; ++e) part[e][0] = part[e][1] = vdupq_n_f32(0.0f);
      for (size_t b = 0; b < kActBlocks; ++b) {
        const float32x4_t scale = vdupq_n_f32(xs[b]);
        for (size_t half = 0; half < 2; ++half) {
          const int32x4_t dot =
              Dot4(q[b][half], vld1q_s8(xq + b * kQuantBlock + 16 * half));
          const int32x4_t v = vmulq_n_s32(dot, sc[2 * b + half]);
          part[b % 2][half] = vfmaq_f32(part[b % 2][half], vcvtq_f32_s32(v), scale);
        }
      }
      for (size_t e = 0; e < 2; ++e) {
        for (size_t half = 0; half < 2; ++half) {
          acc[r][e][half] = vfmaq_f32(acc[r][e][half], part[e][half], d);
        }
      }
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    // t[0..3] and t[4..7] (t[i] = acc[i] + acc[i + 8]), then the tree.
    const float32x4_t t_lo = vaddq_f32(acc[r][0][0], acc[r][1][0]);
    const float32x4_t t_hi = vaddq_f32(acc[r][0][1], acc[r][1][1]);
    const float32x4_t h = vaddq_f32(t_lo, t_hi);  // t[j] + t[j + 4]
    const float u0 = vgetq_lane_f32(h, 0) + vgetq_lane_f32(h, 2);
    const float u1 = vgetq_lane_f32(h, 1) + vgetq_lane_f32(h, 3);
    a.dst[r * a.n + c] = MatmulOutputBase(a, r, c) + (u0 + u1);
  }
}

void Gemv(const MatmulArgs& a, const QuantizedActivations& x, size_t col_begin,
          size_t col_end) {
  ForRows(a.rows, [&]<size_t kRows>() {
    for (size_t c = col_begin; c < col_end; ++c) NeonColumn<kRows>(a, x, c);
  });
}
