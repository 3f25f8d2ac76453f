// Element-wise kernels of the software NPU: RMS normalisation, the SwiGLU
// and GeGLU activations, scaling (with an optional tanh soft cap) and the
// residual add. Preconditions and thread-safety:
// kernel_types.h.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_ELEMENTWISE_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_ELEMENTWISE_H_

#include <cstddef>

#include "kernel_iface/softnpu/compute/worker_pool.h"

namespace lnpu::softnpu::compute {

// dst[r] = src[r] / sqrt(mean(src[r]^2) + eps) * weight; dst may equal src.
void RmsNorm(const float* src, const float* weight, float* dst, size_t rows,
             size_t dim, float eps, WorkerPool& pool);

// dst[i] = silu(gate[i]) * up[i]; dst may equal gate or up.
void Swiglu(const float* gate, const float* up, float* dst, size_t count,
            WorkerPool& pool);

// dst[i] = gelu_tanh(gate[i]) * up[i] (GELU of the tanh approximation);
// dst may equal gate or up.
void Geglu(const float* gate, const float* up, float* dst, size_t count,
           WorkerPool& pool);

// y = scale * src[i]; dst[i] = softcap > 0 ? softcap * tanh(y / softcap)
// : y. dst may equal src.
void Scale(const float* src, float* dst, size_t count, float scale,
           float softcap, WorkerPool& pool);

// dst[i] = a[i] + b[i]; dst may equal a or b.
void Add(const float* a, const float* b, float* dst, size_t count,
         WorkerPool& pool);

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_ELEMENTWISE_H_
