// SPDX-License-Identifier: Apache-2.0
// Test-side reference for the float8 formats and complex numbers, written independently of
// src/reduce: values are decoded with ldexp and rounded with nearbyint on doubles, and each
// format's special encodings are spelled out from torch's documented behaviour (saturating
// e4m3fn, IEEE e5m2, single-NaN fnuz, exponent-only e8m0fnu).
#pragma once

#include <cmath>
#include <cstdint>

#include "smddp/types.h"

namespace smddp::reduce::testing {

enum class Special { kSaturating, kIeee, kFnuz, kExponentOnly };

struct Format8 {
  int mantBits;
  int bias;
  int expBits;
  Special special;
  double maxFinite;
};

inline Format8 format8Of(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN: return {3, 7, 4, Special::kSaturating, 448.0};
    case DataType::kFloat8E4M3FNUZ: return {3, 8, 4, Special::kFnuz, 240.0};
    case DataType::kFloat8E5M2: return {2, 15, 5, Special::kIeee, 57344.0};
    case DataType::kFloat8E5M2FNUZ: return {2, 16, 5, Special::kFnuz, 57344.0};
    default: return {0, 127, 8, Special::kExponentOnly, std::ldexp(1.0, 127)};
  }
}

inline bool isFloat8(DataType t) {
  return t >= DataType::kFloat8E4M3FN && t <= DataType::kFloat8E8M0FNU;
}

inline double decode8(uint8_t bits, const Format8& f) {
  if (f.special == Special::kExponentOnly) return bits == 0xFF ? NAN : std::ldexp(1.0, bits - 127);
  const int maxExp = (1 << f.expBits) - 1;
  const int e = (bits >> f.mantBits) & maxExp;
  const int m = bits & ((1 << f.mantBits) - 1);
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (f.special == Special::kSaturating && (bits & 0x7F) == 0x7F) return NAN;
  if (f.special == Special::kFnuz && bits == 0x80) return NAN;
  if (f.special == Special::kIeee && e == maxExp) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, 1 - f.bias - f.mantBits);
  return sign * std::ldexp(m + (1 << f.mantBits), e - f.bias - f.mantBits);
}

// e8m0fnu from a float32: the exponent field, plus one when the mantissa is at least one half
// (exactly one half of a subnormal float rounds down).
inline uint8_t encodeExponentOnly(float x) {
  if (std::isnan(x) || std::isinf(x)) return 0xFF;
  const double a = std::fabs(double(x));
  if (a < std::ldexp(1.0, -126)) {  // subnormal float32 (or zero): exponent field 0
    const double frac = a / std::ldexp(1.0, -126);  // in [0, 1)
    return frac > 0.5 ? 1 : 0;
  }
  int e2 = 0;
  const double m = std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  const int field = e2 - 1 + 127;
  return uint8_t(field + (m >= 0.75 ? 1 : 0));
}

// Rounds x (the float32 result of the op) to the format, nearest with ties to even.
inline uint8_t encode8(float xf, const Format8& f) {
  if (f.special == Special::kExponentOnly) return encodeExponentOnly(xf);
  const double x = xf;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return f.special == Special::kFnuz ? 0x80 : uint8_t(0x7F | sign);
  const double a = std::fabs(x);
  double r = INFINITY;
  if (!std::isinf(a)) {
    int e2 = 0;
    std::frexp(a, &e2);
    int exp = e2 - 1;
    if (a == 0 || exp < 1 - f.bias) exp = 1 - f.bias;
    const double quantum = std::ldexp(1.0, exp - f.mantBits);
    r = std::nearbyint(a / quantum) * quantum;
  }
  if (r > f.maxFinite) {
    if (f.special == Special::kSaturating) r = f.maxFinite;
    if (f.special == Special::kIeee) return uint8_t(sign | (((1 << f.expBits) - 1) << f.mantBits));
    if (f.special == Special::kFnuz) return 0x80;
  }
  if (r == 0) return f.special == Special::kFnuz ? 0 : sign;
  if (r < std::ldexp(1.0, 1 - f.bias)) {
    return uint8_t(sign | int(r / std::ldexp(1.0, 1 - f.bias - f.mantBits)));
  }
  int e2 = 0;
  std::frexp(r, &e2);
  const int biased = e2 - 1 + f.bias;
  const int mant = int(r / std::ldexp(1.0, e2 - 1 - f.mantBits)) - (1 << f.mantBits);
  return uint8_t(sign | (biased << f.mantBits) | mant);
}

// Complex product with each multiply and add rounded in R (this file builds without FMA flags).
template <class R>
void complexProduct(R a, R b, R c, R d, R* re, R* im) {
  volatile R ac = a * c, bd = b * d, ad = a * d, bc = b * c;
  *re = R(ac - bd);
  *im = R(ad + bc);
}

}  // namespace smddp::reduce::testing
