// SPDX-License-Identifier: Apache-2.0
// SMDDP_HD: __host__ __device__ under nvcc, nothing elsewhere. The element ops and the float8 and
// complex arithmetic are written once with it, so the CPU kernels, the CUDA kernels and the host
// copies the CPU tests run are the same expressions.
#pragma once

#ifdef __CUDACC__
#define SMDDP_HD __host__ __device__
#else
#define SMDDP_HD
#endif
