// SPDX-License-Identifier: Apache-2.0
// The CUDA element-wise kernels, written once as templates over (storage type, op). One
// grid-stride loop moves the 16-byte-vector body (kCudaUnroll vectors per thread per iteration,
// all loads before any store, for memory-level parallelism); a second grid-stride loop does the
// scalar head and tail the launch plan left over (launch_plan.h), so any length and offset works.
// Invariants: every element index in [0, count) is written exactly once, by one thread, which
// reads it first: exact aliasing of dst with a or b is safe. Vector accesses are only made on the
// plan's body, whose start is 16-byte aligned for every operand.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "reduce/cuda/launch_plan.h"
#include "reduce/cuda/ops_cuda.cuh"

namespace smddp::reduce::cudak {

// The launch plan's pieces, by value in kernel parameter space.
struct Shape {
  size_t head;
  size_t vectors;
  size_t tailStart;
  size_t count;
};

inline Shape shapeOf(const LaunchPlan& p) {
  return Shape{p.head, p.bodyVectors, p.tailStart, p.count};
}

// A 16-byte vector seen as whole elements. Storage types are trivial, so the union is plain data.
template <class T>
union Pack {
  uint4 raw;
  T lane[kCudaVectorBytes / sizeof(T)];
};

__device__ inline size_t globalThread() { return size_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline size_t gridThreads() { return size_t(gridDim.x) * blockDim.x; }

// Scalar index j of the edges: the head [0, head), then the tail [tailStart, count).
__device__ inline size_t edgeIndex(const Shape& s, size_t j) {
  return j < s.head ? j : s.tailStart + (j - s.head);
}

template <class T, class Op>
__global__ void __launch_bounds__(kCudaBlockThreads)
    reduceKernel(T* dst, const T* a, const T* b, Shape s) {
  constexpr int kLanes = int(kCudaVectorBytes / sizeof(T));
  const size_t stride = gridThreads();
  const uint4* va = reinterpret_cast<const uint4*>(a + s.head);
  const uint4* vb = reinterpret_cast<const uint4*>(b + s.head);
  uint4* vd = reinterpret_cast<uint4*>(dst + s.head);
  for (size_t base = globalThread(); base < s.vectors; base += stride * kCudaUnroll) {
    Pack<T> x[kCudaUnroll], y[kCudaUnroll];
#pragma unroll
    for (unsigned u = 0; u < kCudaUnroll; ++u) {
      size_t v = base + u * stride;
      if (v < s.vectors) {
        x[u].raw = va[v];
        y[u].raw = vb[v];
      }
    }
#pragma unroll
    for (unsigned u = 0; u < kCudaUnroll; ++u) {
      size_t v = base + u * stride;
      if (v >= s.vectors) break;
      Pack<T> r;
#pragma unroll
      for (int l = 0; l < kLanes; ++l) r.lane[l] = applyElement<T, Op>(x[u].lane[l], y[u].lane[l]);
      vd[v] = r.raw;
    }
  }
  const size_t edges = s.head + (s.count - s.tailStart);
  for (size_t j = globalThread(); j < edges; j += stride) {
    size_t i = edgeIndex(s, j);
    dst[i] = applyElement<T, Op>(a[i], b[i]);
  }
}

template <class T>
__global__ void __launch_bounds__(kCudaBlockThreads) averageKernel(T* buf, int divisor, Shape s) {
  constexpr int kLanes = int(kCudaVectorBytes / sizeof(T));
  const size_t stride = gridThreads();
  uint4* vbuf = reinterpret_cast<uint4*>(buf + s.head);
  for (size_t v = globalThread(); v < s.vectors; v += stride) {
    Pack<T> p;
    p.raw = vbuf[v];
#pragma unroll
    for (int l = 0; l < kLanes; ++l) p.lane[l] = divideElement(p.lane[l], divisor);
    vbuf[v] = p.raw;
  }
  const size_t edges = s.head + (s.count - s.tailStart);
  for (size_t j = globalThread(); j < edges; j += stride) {
    size_t i = edgeIndex(s, j);
    buf[i] = divideElement(buf[i], divisor);
  }
}

}  // namespace smddp::reduce::cudak
