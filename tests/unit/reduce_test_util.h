// SPDX-License-Identifier: Apache-2.0
// Test-side reference arithmetic for the CPU reducer, written independently of src/reduce: 16-bit
// float formats are decoded with ldexp and rounded with nearbyint on doubles (not with bit tricks),
// integers wrap through __int128. Exact results are the contract, so every comparison is bitwise
// (NaN compares by NaN-ness; for MIN/MAX, +0 and -0 are interchangeable).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "smddp/types.h"

namespace smddp::reduce::testing {

// A binary16-like format: mantBits stored mantissa bits, exponent bias, max biased exponent.
struct Format {
  int mantBits;
  int bias;
  int expBits;
};
constexpr Format kHalf{10, 15, 5};
constexpr Format kBf16{7, 127, 8};

inline double decode16(uint16_t bits, Format f) {
  int maxExp = (1 << f.expBits) - 1;
  int e = (bits >> f.mantBits) & maxExp;
  int m = bits & ((1 << f.mantBits) - 1);
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (e == maxExp) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, 1 - f.bias - f.mantBits);
  return sign * std::ldexp(m + (1 << f.mantBits), e - f.bias - f.mantBits);
}

// Rounds x to the format, nearest with ties to even (nearbyint in the default mode).
inline uint16_t encode16(double x, Format f) {
  int maxExp = (1 << f.expBits) - 1;
  if (std::isnan(x)) return uint16_t((maxExp << f.mantBits) | (1 << (f.mantBits - 1)));
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (a == 0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);
  int exp = e2 - 1;                        // a in [2^exp, 2^(exp+1))
  if (exp < 1 - f.bias) exp = 1 - f.bias;  // subnormal range shares the minimum quantum
  double quantum = std::ldexp(1.0, exp - f.mantBits);
  double r = std::nearbyint(a / quantum) * quantum;
  if (r >= std::ldexp(1.0, maxExp - f.bias)) return uint16_t(sign | (maxExp << f.mantBits));
  if (r < std::ldexp(1.0, 1 - f.bias)) {
    return uint16_t(sign | uint16_t(r / std::ldexp(1.0, 1 - f.bias - f.mantBits)));
  }
  std::frexp(r, &e2);
  int biased = e2 - 1 + f.bias;
  uint16_t mant = uint16_t(r / std::ldexp(1.0, e2 - 1 - f.mantBits)) - (1 << f.mantBits);
  return uint16_t(sign | (biased << f.mantBits) | mant);
}

inline bool isInteger(DataType t) { return !isFloatingPoint(t); }

inline Format formatOf(DataType t) { return t == DataType::kFloat16 ? kHalf : kBf16; }

// Element i of a buffer of dtype t as a double (floating types only).
inline double loadFloat(DataType t, const void* p, size_t i) {
  const uint8_t* b = static_cast<const uint8_t*>(p) + i * dataTypeSize(t);
  if (t == DataType::kFloat32) {
    float v;
    std::memcpy(&v, b, 4);
    return v;
  }
  if (t == DataType::kFloat64) {
    double v;
    std::memcpy(&v, b, 8);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, b, 2);
  return decode16(h, formatOf(t));
}

// Rounds x into element i of a buffer of floating dtype t.
inline void storeFloat(DataType t, void* p, size_t i, double x) {
  uint8_t* b = static_cast<uint8_t*>(p) + i * dataTypeSize(t);
  if (t == DataType::kFloat32) {
    float v = float(x);
    std::memcpy(b, &v, 4);
    return;
  }
  if (t == DataType::kFloat64) {
    std::memcpy(b, &x, 8);
    return;
  }
  uint16_t h = encode16(x, formatOf(t));
  std::memcpy(b, &h, 2);
}

inline int64_t loadInt(DataType t, const void* p, size_t i) {
  switch (t) {
    case DataType::kInt8:
      return static_cast<const int8_t*>(p)[i];
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(p)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(p)[i];
    default:
      return static_cast<const int64_t*>(p)[i];
  }
}

// Stores the low bits of x (two's-complement wrap) into element i.
inline void storeInt(DataType t, void* p, size_t i, __int128 x) {
  uint64_t low = uint64_t(static_cast<unsigned __int128>(x));
  std::memcpy(static_cast<uint8_t*>(p) + i * dataTypeSize(t), &low, dataTypeSize(t));
}

// Writes the expected dst[i] for (dtype, op); AVG is SUM before finishAverage.
inline void referenceElement(DataType t, ReduceOp op, const void* a, const void* b, void* out,
                             size_t i) {
  if (isInteger(t)) {
    __int128 x = loadInt(t, a, i), y = loadInt(t, b, i);
    __int128 r = op == ReduceOp::kProd  ? x * y
                 : op == ReduceOp::kMin ? (x < y ? x : y)
                 : op == ReduceOp::kMax ? (x > y ? x : y)
                                        : x + y;
    storeInt(t, out, i, r);
    return;
  }
  double x = loadFloat(t, a, i), y = loadFloat(t, b, i);
  double r;
  if (op == ReduceOp::kMin || op == ReduceOp::kMax) {
    bool pickX = op == ReduceOp::kMin ? x < y : x > y;
    r = std::isnan(x) || std::isnan(y) ? NAN : (pickX ? x : y);
  } else {
    r = op == ReduceOp::kProd ? x * y : x + y;
  }
  storeFloat(t, out, i, r);
}

// True when element i of got matches element i of want under the comparison rules above.
inline bool sameElement(DataType t, ReduceOp op, const void* got, const void* want, size_t i) {
  size_t sz = dataTypeSize(t);
  if (std::memcmp(static_cast<const uint8_t*>(got) + i * sz,
                  static_cast<const uint8_t*>(want) + i * sz, sz) == 0) {
    return true;
  }
  if (isInteger(t)) return false;
  double g = loadFloat(t, got, i), w = loadFloat(t, want, i);
  if (std::isnan(g) && std::isnan(w)) return true;
  bool minMax = op == ReduceOp::kMin || op == ReduceOp::kMax;
  return minMax && g == 0 && w == 0;
}

// Random non-zero-heavy data: floats in [-4, 4] with every 7th element scaled by 2^-12 (so fp16
// products reach the subnormal range) and every 11th by 2^100 (float32/64/bf16 overflow in PROD);
// integers are uniform over all bits so SUM and PROD wrap.
inline void fillRandom(DataType t, void* p, size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  for (size_t i = 0; i < count; ++i) {
    if (isInteger(t)) {
      storeInt(t, p, i, __int128(int64_t(rng())));
      continue;
    }
    double x = dist(rng);
    if (i % 7 == 3) x = std::ldexp(x, -12);
    if (i % 11 == 5 && t != DataType::kFloat16) x = std::ldexp(x, 100);
    storeFloat(t, p, i, x);
  }
}

inline std::vector<DataType> allDataTypes() {
  std::vector<DataType> v;
  for (int d = 0; d < kNumDataTypes; ++d) v.push_back(DataType(d));
  return v;
}

inline std::vector<ReduceOp> allReduceOps() {
  std::vector<ReduceOp> v;
  for (int o = 0; o < kNumReduceOps; ++o) v.push_back(ReduceOp(o));
  return v;
}

}  // namespace smddp::reduce::testing
