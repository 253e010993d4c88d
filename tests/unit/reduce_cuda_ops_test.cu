// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels' element operations (src/reduce/cuda/ops_cuda.cuh), run on the host: they are
// __host__ __device__, and cuda_fp16/cuda_bf16 ship host versions of the conversions, so the very
// expressions the kernels apply are checked here, without a GPU, bit for bit against the CPU
// reducer and the float64 reference, for every (dtype, op) and every 16- and 8-bit float input bit
// pattern against random partners. (The device's cvt instructions themselves are covered in tests/gpu/.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reduce/cuda/ops_cuda.cuh"
#include "reduce/cuda/reducer_cuda.h"
#include "reduce/reducer.h"
#include "unit/reduce_test_util.h"

namespace smddp::reduce {
namespace {

template <class T, class Op>
void applyAll(void* d, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    static_cast<T*>(d)[i] =
        cudak::applyElement<T, Op>(static_cast<const T*>(a)[i], static_cast<const T*>(b)[i]);
  }
}

template <class T, DataType D, ReduceOp kOp>
bool applyIf(ReduceOp op, void* d, const void* a, const void* b, size_t n) {
  if constexpr (reductionDefined(D, kOp)) {
    if (op == kOp) {
      applyAll<T, typename OpFor<D, kOp>::type>(d, a, b, n);
      return true;
    }
  }
  return false;
}

// The kernel's element op for (D, op), as the CUDA table picks it (AVG: SUM before division).
template <class T, DataType D>
void applyOp(ReduceOp op, void* d, const void* a, const void* b, size_t n) {
  using R = ReduceOp;
  const bool done = applyIf<T, D, R::kSum>(op, d, a, b, n) || applyIf<T, D, R::kProd>(op, d, a, b, n) ||
                    applyIf<T, D, R::kMin>(op, d, a, b, n) || applyIf<T, D, R::kMax>(op, d, a, b, n) ||
                    applyIf<T, D, R::kAvg>(op, d, a, b, n) || applyIf<T, D, R::kBand>(op, d, a, b, n) ||
                    applyIf<T, D, R::kBor>(op, d, a, b, n) || applyIf<T, D, R::kBxor>(op, d, a, b, n);
  ASSERT_TRUE(done) << toString(D) << " " << toString(op);
}

void hostApply(DataType t, ReduceOp op, void* d, const void* a, const void* b, size_t n) {
  using D = DataType;
  switch (t) {
    case D::kFloat32: return applyOp<float, D::kFloat32>(op, d, a, b, n);
    case D::kFloat64: return applyOp<double, D::kFloat64>(op, d, a, b, n);
    case D::kFloat16: return applyOp<cudak::Half, D::kFloat16>(op, d, a, b, n);
    case D::kBFloat16: return applyOp<cudak::BFloat16, D::kBFloat16>(op, d, a, b, n);
    case D::kInt8: return applyOp<int8_t, D::kInt8>(op, d, a, b, n);
    case D::kUInt8: return applyOp<uint8_t, D::kUInt8>(op, d, a, b, n);
    case D::kInt32: return applyOp<int32_t, D::kInt32>(op, d, a, b, n);
    case D::kInt64: return applyOp<int64_t, D::kInt64>(op, d, a, b, n);
    case D::kInt16: return applyOp<int16_t, D::kInt16>(op, d, a, b, n);
    case D::kUInt16: return applyOp<uint16_t, D::kUInt16>(op, d, a, b, n);
    case D::kUInt32: return applyOp<uint32_t, D::kUInt32>(op, d, a, b, n);
    case D::kUInt64: return applyOp<uint64_t, D::kUInt64>(op, d, a, b, n);
    case D::kBool: return applyOp<uint8_t, D::kBool>(op, d, a, b, n);
    case D::kFloat8E4M3FN: return applyOp<Float8<F8E4M3FN>, D::kFloat8E4M3FN>(op, d, a, b, n);
    case D::kFloat8E4M3FNUZ:
      return applyOp<Float8<F8E4M3FNUZ>, D::kFloat8E4M3FNUZ>(op, d, a, b, n);
    case D::kFloat8E5M2: return applyOp<Float8<F8E5M2>, D::kFloat8E5M2>(op, d, a, b, n);
    case D::kFloat8E5M2FNUZ:
      return applyOp<Float8<F8E5M2FNUZ>, D::kFloat8E5M2FNUZ>(op, d, a, b, n);
    case D::kFloat8E8M0FNU:
      return applyOp<Float8<F8E8M0Format>, D::kFloat8E8M0FNU>(op, d, a, b, n);
    case D::kComplex64: return applyOp<Complex<float>, D::kComplex64>(op, d, a, b, n);
    case D::kComplex128: return applyOp<Complex<double>, D::kComplex128>(op, d, a, b, n);
  }
}

// a: every 16-bit (8-bit) pattern for the 16-bit (8-bit) float types, NaN, inf, subnormals and -0
// included,
// random data elsewhere; b: random data with NaN and inf sprinkled in.
void makeInputs(DataType t, size_t n, std::vector<uint8_t>& a, std::vector<uint8_t>& b) {
  std::mt19937_64 rng(12345);
  a.assign(n * dataTypeSize(t), 0);
  b.assign(n * dataTypeSize(t), 0);
  testing::fillRandom(t, a.data(), n, rng);
  testing::fillRandom(t, b.data(), n, rng);
  if (dataTypeSize(t) == 2 && isFloatingPoint(t)) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t bits = uint16_t(i);
      std::memcpy(&a[i * 2], &bits, 2);
    }
  }
  if (dataTypeSize(t) == 1 && isFloatingPoint(t)) {
    for (size_t i = 0; i < n; ++i) a[i] = uint8_t(i);
  }
  if (!isFloatingPoint(t)) return;
  for (size_t i = 0; i < n; i += 89) testing::storeFloat(t, b.data(), i, i % 2 ? NAN : INFINITY);
}

TEST(ReduceCudaOps, MatchCpuReducerAndReference) {
  const size_t n = 65536;
  for (DataType t : testing::allDataTypes()) {
    std::vector<uint8_t> a, b;
    makeInputs(t, n, a, b);
    for (ReduceOp op : testing::allReduceOps()) {
      if (!supportedCuda(t, op)) continue;
      std::vector<uint8_t> got(a.size()), cpu(a.size()), ref(a.size());
      hostApply(t, op, got.data(), a.data(), b.data(), n);
      reduce(t, op, cpu.data(), a.data(), b.data(), n);
      for (size_t i = 0; i < n; ++i) {
        testing::referenceElement(t, op, a.data(), b.data(), ref.data(), i);
        ASSERT_TRUE(testing::sameElement(t, op, got.data(), cpu.data(), i))
            << toString(t) << " " << toString(op) << " index " << i << ": differs from CPU";
        ASSERT_TRUE(testing::sameElement(t, op, got.data(), ref.data(), i))
            << toString(t) << " " << toString(op) << " index " << i << ": differs from reference";
      }
    }
  }
}

template <class T>
void checkDivide(DataType t) {
  const size_t n = 65536;
  std::vector<uint8_t> a, b;
  makeInputs(t, n, a, b);
  for (int divisor : {1, 2, 3, 7, 2049, 1000003}) {
    std::vector<uint8_t> got(a.size()), cpu = a;
    for (size_t i = 0; i < n; ++i) {
      reinterpret_cast<T*>(got.data())[i] =
          cudak::divideElement(reinterpret_cast<const T*>(a.data())[i], divisor);
    }
    finishAverage(t, cpu.data(), n, divisor);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(testing::sameElement(t, ReduceOp::kSum, got.data(), cpu.data(), i))
          << toString(t) << " / " << divisor << " index " << i;
    }
  }
}

TEST(ReduceCudaOps, DivisionMatchesCpuFinishAverage) {
  checkDivide<float>(DataType::kFloat32);
  checkDivide<double>(DataType::kFloat64);
  checkDivide<cudak::Half>(DataType::kFloat16);
  checkDivide<cudak::BFloat16>(DataType::kBFloat16);
  checkDivide<Float8<F8E4M3FN>>(DataType::kFloat8E4M3FN);
  checkDivide<Float8<F8E4M3FNUZ>>(DataType::kFloat8E4M3FNUZ);
  checkDivide<Float8<F8E5M2>>(DataType::kFloat8E5M2);
  checkDivide<Float8<F8E5M2FNUZ>>(DataType::kFloat8E5M2FNUZ);
  checkDivide<Float8<F8E8M0Format>>(DataType::kFloat8E8M0FNU);
  checkDivide<int8_t>(DataType::kInt8);
  checkDivide<int16_t>(DataType::kInt16);
  checkDivide<uint32_t>(DataType::kUInt32);
  checkDivide<int64_t>(DataType::kInt64);
  checkDivide<uint64_t>(DataType::kUInt64);
  checkDivide<Complex<float>>(DataType::kComplex64);
  checkDivide<Complex<double>>(DataType::kComplex128);
}

}  // namespace
}  // namespace smddp::reduce
