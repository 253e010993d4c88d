// SPDX-License-Identifier: Apache-2.0
// Every engine op, X(ReduceOp enumerator), and every engine dtype with its storage type,
// X(storage type, DataType enumerator), as X-macros.
// The CPU table (kernel_rows.h) and the CUDA table (cuda/reducer_cuda.cu) both expand it, each
// with its own Half and BFloat16; Float8 and Complex come from float8.h and complex.h.
#pragma once

#define SMDDP_REDUCE_STORAGE_TYPES(X)                                                    \
  X(float, kFloat32)                                                                     \
  X(double, kFloat64)                                                                    \
  X(Half, kFloat16)                                                                      \
  X(BFloat16, kBFloat16)                                                                 \
  X(int8_t, kInt8)                                                                       \
  X(uint8_t, kUInt8)                                                                     \
  X(int32_t, kInt32)                                                                     \
  X(int64_t, kInt64)                                                                     \
  X(int16_t, kInt16)                                                                     \
  X(uint16_t, kUInt16)                                                                   \
  X(uint32_t, kUInt32)                                                                   \
  X(uint64_t, kUInt64)                                                                   \
  X(uint8_t, kBool)                                                                      \
  X(Float8<F8E4M3FN>, kFloat8E4M3FN)                                                     \
  X(Float8<F8E4M3FNUZ>, kFloat8E4M3FNUZ)                                                 \
  X(Float8<F8E5M2>, kFloat8E5M2)                                                         \
  X(Float8<F8E5M2FNUZ>, kFloat8E5M2FNUZ)                                                 \
  X(Float8<F8E8M0Format>, kFloat8E8M0FNU)                                                \
  X(Complex<float>, kComplex64)                                                          \
  X(Complex<double>, kComplex128)

#define SMDDP_REDUCE_OPS(X) X(kSum) X(kProd) X(kMin) X(kMax) X(kAvg) X(kBand) X(kBor) X(kBxor)
