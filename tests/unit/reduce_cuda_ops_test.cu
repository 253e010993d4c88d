// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels' element operations (src/reduce/cuda/ops_cuda.cuh), run on the host: they are
// __host__ __device__, and cuda_fp16/cuda_bf16 ship host versions of the conversions, so the very
// expressions the kernels apply are checked here, without a GPU, bit for bit against the CPU
// reducer and the float64 reference, for every (dtype, op) and every 16-bit input bit pattern
// against random partners. (The device's cvt instructions themselves are covered in tests/gpu/.)
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

template <class T>
void applyOp(ReduceOp op, void* d, const void* a, const void* b, size_t n) {
  switch (op) {
    case ReduceOp::kProd:
      return applyAll<T, cudak::ProdOp>(d, a, b, n);
    case ReduceOp::kMin:
      return applyAll<T, cudak::MinOp>(d, a, b, n);
    case ReduceOp::kMax:
      return applyAll<T, cudak::MaxOp>(d, a, b, n);
    default:
      return applyAll<T, cudak::SumOp>(d, a, b, n);  // SUM, and AVG before its division
  }
}

void hostApply(DataType t, ReduceOp op, void* d, const void* a, const void* b, size_t n) {
  switch (t) {
    case DataType::kFloat32:
      return applyOp<float>(op, d, a, b, n);
    case DataType::kFloat64:
      return applyOp<double>(op, d, a, b, n);
    case DataType::kFloat16:
      return applyOp<cudak::Half>(op, d, a, b, n);
    case DataType::kBFloat16:
      return applyOp<cudak::BFloat16>(op, d, a, b, n);
    case DataType::kInt8:
      return applyOp<int8_t>(op, d, a, b, n);
    case DataType::kUInt8:
      return applyOp<uint8_t>(op, d, a, b, n);
    case DataType::kInt32:
      return applyOp<int32_t>(op, d, a, b, n);
    case DataType::kInt64:
      return applyOp<int64_t>(op, d, a, b, n);
  }
}

// a: every 16-bit pattern for the 16-bit types (all of NaN, inf, subnormals, -0 included),
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
}

}  // namespace
}  // namespace smddp::reduce
