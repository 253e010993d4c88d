// SPDX-License-Identifier: Apache-2.0
// Input patterns and expected values of the checked runs. Values are small integers so results are
// exact in every dtype: sums stay within the dtype's exact-integer range (int8 127, uint8 255,
// bfloat16 256, float16 2048), products are powers of two below the dtype's limit.
#include "verify.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace smddp::bench {
namespace {

// A cheap integer hash, so values vary across both rank and index.
uint32_t mix(int rank, size_t index) {
  uint32_t x =
      static_cast<uint32_t>(index) * 0x9E3779B1u + static_cast<uint32_t>(rank + 1) * 0x85EBCA77u;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return x;
}

// Largest integer N such that every integer in [0, N] is exact in dtype.
double exactLimit(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8:
      return 127;
    case DataType::kUInt8:
      return 255;
    case DataType::kBFloat16:
      return 256;
    case DataType::kFloat16:
      return 2048;
    case DataType::kFloat32:
      return 16777216.0;
    default:
      return 1e15;
  }
}

// Largest k with 2^k representable (and exact) in dtype, capped so products stay modest.
int maxDoublings(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8:
      return 6;
    case DataType::kUInt8:
      return 7;
    default:
      return 8;
  }
}

}  // namespace

double reductionInput(DataType dtype, ReduceOp op, int nranks, int rank, size_t index) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: {
      // Values in [0, m] with m * nranks within the exact range; beyond that, one rank per index
      // contributes 1 so the sum is exactly 1.
      const int m = static_cast<int>(std::min(3.0, exactLimit(dtype) / nranks));
      if (m >= 1) return mix(rank, index) % static_cast<uint32_t>(m + 1);
      return (rank + index) % static_cast<size_t>(nranks) == 0 ? 1 : 0;
    }
    case ReduceOp::kProd: {
      // Exactly k(index) ranks contribute 2, the others 1: the product is 2^k(index).
      const int kmax = std::min(nranks, maxDoublings(dtype));
      const size_t k = mix(-1, index) % static_cast<uint32_t>(kmax + 1);
      return (rank + index) % static_cast<size_t>(nranks) < k ? 2 : 1;
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax: {
      const double v = mix(rank, index) % 11u;
      return dtype == DataType::kUInt8 ? v : v - 5;
    }
    default:
      break;  // the bench tools run SUM, PROD, MIN, MAX and AVG
  }
  return 0;
}

double reductionExpected(DataType dtype, ReduceOp op, int nranks, size_t index) {
  double acc = reductionInput(dtype, op, nranks, 0, index);
  for (int r = 1; r < nranks; ++r) {
    const double v = reductionInput(dtype, op, nranks, r, index);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc += v;
        break;
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = std::min(acc, v);
        break;
      case ReduceOp::kMax:
        acc = std::max(acc, v);
        break;
      default:
        break;
    }
  }
  return op == ReduceOp::kAvg ? acc / nranks : acc;
}

double dataInput(int rank, size_t index) { return mix(rank, index) % 100u; }

double poisonValue(DataType dtype) {
  if (isFloatingPoint(dtype)) return std::numeric_limits<double>::quiet_NaN();
  return dtype == DataType::kUInt8 ? 251 : -117;
}

double tolerance(DataType dtype, ReduceOp op, double expected) {
  if (op != ReduceOp::kAvg) return 0;
  double eps = 0;
  switch (dtype) {
    case DataType::kFloat16:
      eps = std::ldexp(1.0, -10);
      break;
    case DataType::kBFloat16:
      eps = std::ldexp(1.0, -7);
      break;
    case DataType::kFloat32:
      eps = std::ldexp(1.0, -23);
      break;
    case DataType::kFloat64:
      eps = std::ldexp(1.0, -52);
      break;
    default:
      return 0;
  }
  // The engine may divide in the dtype or in float32 and round once: a few ulps of the result.
  return 4 * eps * std::max(1.0, std::fabs(expected));
}

int64_t countWrongReduction(DataType dtype, ReduceOp op, int nranks, const void* buffer,
                            size_t count) {
  return countWrong(
      dtype, buffer, count, [&](size_t i) { return reductionExpected(dtype, op, nranks, i); },
      [&](double want) { return tolerance(dtype, op, want); });
}

void fillGuard(void* guard) { std::memset(guard, kGuardByte, kGuardBytes); }

int64_t countGuardDamage(const void* guard) {
  const auto* g = static_cast<const unsigned char*>(guard);
  return std::count_if(g, g + kGuardBytes, [](unsigned char b) { return b != kGuardByte; });
}

}  // namespace smddp::bench
