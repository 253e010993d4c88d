// SPDX-License-Identifier: Apache-2.0
// Test-side reference arithmetic for the CPU reducer, written independently of src/reduce: 16- and
// 8-bit float formats are decoded with ldexp and rounded with nearbyint on doubles (not with bit
// tricks; reduce_test_formats.h), integers wrap through __int128, bool is logic. Exact results are the contract, so every comparison is bitwise
// (NaN compares by NaN-ness; for MIN/MAX, +0 and -0 are interchangeable).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "reduce_test_formats.h"
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

// Integers and bool: compared bit for bit, loaded as integers.
inline bool isInteger(DataType t) { return isIntegral(t) || t == DataType::kBool; }

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
  if (isFloat8(t)) return decode8(*b, format8Of(t));
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
  if (isFloat8(t)) {
    *b = encode8(float(x), format8Of(t));  // x is an op's exact or float32-rounded result
    return;
  }
  uint16_t h = encode16(x, formatOf(t));
  std::memcpy(b, &h, 2);
}

// Element i of an integer or bool buffer, with its type's signedness.
inline __int128 loadInt(DataType t, const void* p, size_t i) {
  switch (t) {
    case DataType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DataType::kUInt8:
    case DataType::kBool: return static_cast<const uint8_t*>(p)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DataType::kUInt16: return static_cast<const uint16_t*>(p)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DataType::kUInt32: return static_cast<const uint32_t*>(p)[i];
    case DataType::kUInt64: return static_cast<const uint64_t*>(p)[i];
    default: return static_cast<const int64_t*>(p)[i];
  }
}

// Stores the low bits of x (two's-complement wrap) into element i.
inline void storeInt(DataType t, void* p, size_t i, __int128 x) {
  uint64_t low = uint64_t(static_cast<unsigned __int128>(x));
  std::memcpy(static_cast<uint8_t*>(p) + i * dataTypeSize(t), &low, dataTypeSize(t));
}

inline __int128 referenceInt(DataType t, ReduceOp op, __int128 x, __int128 y) {
  if (t == DataType::kBool) {
    const bool a = x != 0, b = y != 0;
    switch (op) {
      case ReduceOp::kProd: case ReduceOp::kMin: case ReduceOp::kBand: return a && b;
      case ReduceOp::kBxor: return a != b;
      default: return a || b;  // SUM, MAX, BOR
    }
  }
  switch (op) {
    case ReduceOp::kProd: return x * y;
    case ReduceOp::kMin: return x < y ? x : y;
    case ReduceOp::kMax: return x > y ? x : y;
    case ReduceOp::kBand: return x & y;
    case ReduceOp::kBor: return x | y;
    case ReduceOp::kBxor: return x ^ y;
    default: return x + y;  // SUM, AVG (before finishAverage)
  }
}

template <class R>
void referenceComplex(ReduceOp op, const void* a, const void* b, void* out, size_t i) {
  const R* x = static_cast<const R*>(a) + 2 * i;
  const R* y = static_cast<const R*>(b) + 2 * i;
  R* o = static_cast<R*>(out) + 2 * i;
  if (op == ReduceOp::kProd) {
    complexProduct(x[0], x[1], y[0], y[1], &o[0], &o[1]);
  } else {
    o[0] = x[0] + y[0];
    o[1] = x[1] + y[1];
  }
}

// Writes the expected dst[i] for (dtype, op); AVG is SUM before finishAverage.
inline void referenceElement(DataType t, ReduceOp op, const void* a, const void* b, void* out,
                             size_t i) {
  if (isInteger(t)) {
    storeInt(t, out, i, referenceInt(t, op, loadInt(t, a, i), loadInt(t, b, i)));
    return;
  }
  if (t == DataType::kComplex64) return referenceComplex<float>(op, a, b, out, i);
  if (t == DataType::kComplex128) return referenceComplex<double>(op, a, b, out, i);
  double x = loadFloat(t, a, i), y = loadFloat(t, b, i);
  double r;
  if (op == ReduceOp::kMin || op == ReduceOp::kMax) {
    bool pickX = op == ReduceOp::kMin ? x < y : x > y;
    r = std::isnan(x) || std::isnan(y) ? NAN : (pickX ? x : y);
  } else {
    r = op == ReduceOp::kProd ? x * y : x + y;
  }
  // float8 computes in float32: the one rounding to float32 first (innocuous for one op).
  storeFloat(t, out, i, isFloat8(t) ? double(float(r)) : r);
}

// True when element i of got matches element i of want under the comparison rules above.
inline bool sameElement(DataType t, ReduceOp op, const void* got, const void* want, size_t i) {
  size_t sz = dataTypeSize(t);
  if (std::memcmp(static_cast<const uint8_t*>(got) + i * sz,
                  static_cast<const uint8_t*>(want) + i * sz, sz) == 0) {
    return true;
  }
  if (isInteger(t)) return false;
  if (isComplex(t)) {  // NaN parts match by NaN-ness
    const bool dbl = t == DataType::kComplex128;
    for (int part = 0; part < 2; ++part) {
      const size_t k = 2 * i + size_t(part);
      const double g = dbl ? static_cast<const double*>(got)[k] : static_cast<const float*>(got)[k];
      const double w =
          dbl ? static_cast<const double*>(want)[k] : static_cast<const float*>(want)[k];
      if (!(g == w || (std::isnan(g) && std::isnan(w)))) return false;
    }
    return true;
  }
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
  const bool f8 = isFloat8(t);
  for (size_t i = 0; i < count; ++i) {
    if (t == DataType::kBool) {
      storeInt(t, p, i, __int128(rng() & 1));
      continue;
    }
    if (isInteger(t)) {
      storeInt(t, p, i, __int128(int64_t(rng())));
      continue;
    }
    if (t == DataType::kFloat8E8M0FNU) {  // any encoding, NaN (0xFF) included now and then
      static_cast<uint8_t*>(p)[i] = uint8_t(rng() % 256);
      continue;
    }
    if (isComplex(t)) {
      const double re = dist(rng), im = dist(rng);
      if (t == DataType::kComplex64) {
        static_cast<float*>(p)[2 * i] = float(i % 11 == 5 ? std::ldexp(re, 100) : re);
        static_cast<float*>(p)[2 * i + 1] = float(im);
      } else {
        static_cast<double*>(p)[2 * i] = re;
        static_cast<double*>(p)[2 * i + 1] = im;
      }
      continue;
    }
    double x = dist(rng);
    if (i % 7 == 3) x = std::ldexp(x, f8 ? -6 : -12);
    if (i % 11 == 5 && t != DataType::kFloat16) x = std::ldexp(x, f8 ? 6 : 100);
    if (f8 && i % 13 == 7) x = NAN;
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
