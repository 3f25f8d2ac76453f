// The software NPU's compute kernels: SIMD implementations (Highway, with
// run-time dispatch to the best target the CPU supports) of the math behind
// each compute command, one header and source per op family:
//   kernel_types.h      KernelScratch, WeightType, the common preconditions
//   matmul.h            MATMUL (quantized inner loops: quant_matmul.h)
//   elementwise.h       RMS_NORM, SWIGLU, GEGLU, SCALE, ADD
//   rope.h              ROPE
//   attention.h         ATTENTION
//   dtype_conversion.h  GATHER_ROWS / SCATTER_ROWS conversions, int8 KV groups
// Their sources share the Highway helpers of simd-inl.h and the work
// splitting of kernel_scheduling.h. Include this header for all of them.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_H_

#include "kernel_iface/softnpu/compute/attention.h"      // IWYU pragma: export
#include "kernel_iface/softnpu/compute/dtype_conversion.h"  // IWYU pragma: export
#include "kernel_iface/softnpu/compute/elementwise.h"    // IWYU pragma: export
#include "kernel_iface/softnpu/compute/kernel_types.h"   // IWYU pragma: export
#include "kernel_iface/softnpu/compute/matmul.h"         // IWYU pragma: export
#include "kernel_iface/softnpu/compute/rope.h"           // IWYU pragma: export

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_KERNELS_H_
