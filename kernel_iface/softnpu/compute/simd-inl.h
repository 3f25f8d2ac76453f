// Highway helpers shared by the kernel sources (matmul.cc, elementwise.cc,
// rope.cc, attention.cc, dtype_conversion.cc). Included after
// hwy/foreach_target.h, so it is compiled once per SIMD target of the
// including file; the guard below toggles with HWY_TARGET_TOGGLE, as
// Highway's -inl.h convention asks.
#if defined(KERNEL_IFACE_SOFTNPU_COMPUTE_SIMD_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef KERNEL_IFACE_SOFTNPU_COMPUTE_SIMD_INL_H_
#undef KERNEL_IFACE_SOFTNPU_COMPUTE_SIMD_INL_H_
#else
#define KERNEL_IFACE_SOFTNPU_COMPUTE_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace lnpu::softnpu::compute {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
// One-lane tag for the ragged end of a loop, so that a body written for
// vectors also serves the last len % Lanes(DF) elements without reading or
// writing past them.
using D1 = hn::CappedTag<float, 1>;

template <class D>
HWY_INLINE float ReduceSum(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// Calls body(d, i) for i stepping through [0, count): full vectors of DF
// first, then single lanes of D1.
template <class Body>
HWY_INLINE void ForEachVector(size_t count, const Body& body) {
  const DF df;
  const D1 d1;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) body(df, i);
  for (; i < count; ++i) body(d1, i);
}

// tanh(x) with x clamped to [-10, 10] first: tanh rounds to +-1 in f32
// beyond about 9.01, and the clamp keeps Tanh within its valid range for
// infinite x. NaN stays NaN (the clamp alone would turn it into a number:
// Min / Max drop NaN on Arm and return the second operand on x86).
template <class D>
HWY_INLINE hn::Vec<D> BoundedTanh(D d, hn::Vec<D> x) {
  const auto tanh = hn::Tanh(d, hn::Min(hn::Max(x, hn::Set(d, -10.0f)), hn::Set(d, 10.0f)));
  return hn::IfThenElse(hn::IsNaN(x), x, tanh);
}

// softcap * tanh(y / softcap), with inverse = 1 / softcap: Gemma's soft cap
// of attention scores and logits.
template <class D>
HWY_INLINE hn::Vec<D> Softcap(D d, hn::Vec<D> y, float softcap, float inverse) {
  return hn::Mul(BoundedTanh(d, hn::Mul(y, hn::Set(d, inverse))), hn::Set(d, softcap));
}

// Lanes of f32 from f32 or (widened) f16 weights.
template <class D>
HWY_INLINE hn::Vec<D> LoadWeights(D d, const float* p) {
  return hn::LoadU(d, p);
}
// F16 infinities and NaNs widen to the same f32 values on every target:
// Highway 1.0's software conversion (SSE4, EMU128, SCALAR: no F16C or FP16
// instructions) reads exponent 31 as a finite number, so there the lanes
// with exponent 31 are set to +-inf (mantissa 0) or NaN.
template <class D>
HWY_INLINE hn::Vec<D> LoadWeights(D d, const hwy::float16_t* p) {
  const hn::Rebind<hwy::float16_t, D> dh;
  const auto half = hn::LoadU(dh, p);
  const auto widened = hn::PromoteTo(d, half);
#if HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 || HWY_TARGET == HWY_EMU128 || \
    HWY_TARGET == HWY_SCALAR
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::PromoteTo(du, hn::BitCast(hn::Rebind<uint16_t, D>(), half));
  const auto exponent = hn::And(bits, hn::Set(du, 0x7C00));
  const auto special = hn::BitCast(
      d, hn::Or(hn::ShiftLeft<16>(hn::And(bits, hn::Set(du, 0x8000))),
                hn::Or(hn::Set(du, 0x7F800000), hn::ShiftLeft<13>(hn::And(bits, hn::Set(du, 0x3FF))))));
  return hn::IfThenElse(hn::RebindMask(d, hn::Eq(exponent, hn::Set(du, 0x7C00))), special,
                        widened);
#else
  return widened;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace lnpu::softnpu::compute
HWY_AFTER_NAMESPACE();

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_SIMD_INL_H_ toggle
