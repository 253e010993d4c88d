// SPDX-License-Identifier: Apache-2.0
// Portable scalar float16/bfloat16 <-> float32 conversions on raw bits, written as branch-free
// selects so the baseline build can auto-vectorize them. Included only by the per-ISA kernel
// files (via kernels.h), inside an anonymous namespace, so each ISA gets its own copy compiled with
// its own flags and the linker can never hand a baseline caller an AVX-512 copy.
// Invariant: narrowing rounds to nearest, ties to even; overflow gives +-inf; NaN stays NaN
// (quiet). These must agree bit for bit with the F16C instructions the AVX2/AVX-512 builds use.
#pragma once

#include <cstdint>
#include <cstring>

namespace smddp::reduce {
namespace {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// bfloat16 is the top half of a float32, so widening is exact.
inline float bf16ToFloat(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

// Round to nearest even by adding 0x7FFF plus the lowest kept bit, then truncating. Values within
// half an ulp of 2^128 carry into the exponent and become inf, which is the correct rounding.
// NaN must not go through the add (a payload in the low bits could carry into inf), so it is
// selected separately and quieted.
inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
  uint32_t quietNan = u | 0x00400000u;
  // Select in 32 bits (one narrowing), on a float compare (one instruction, unlike an unsigned
  // integer compare before AVX-512).
  return uint16_t((f != f ? quietNan : rounded) >> 16);
}

// Rebias the exponent (15 -> 127) and fix up the two special exponents: all-ones (inf/NaN) gets
// the rest of the float exponent range, zero (subnormal) is renormalised by a float subtraction,
// which is exact because the result is representable.
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t body = uint32_t(h & 0x7FFFu) << 13;
  uint32_t exp = body & 0x0F800000u;
  uint32_t normal = body + (112u << 23);
  uint32_t special = body + (224u << 23);
  float sub = bitsFloat(body + (113u << 23)) - bitsFloat(113u << 23);
  uint32_t mag = exp == 0x0F800000u ? special : (exp == 0 ? floatBits(sub) : normal);
  return bitsFloat(sign | mag);
}

// Three regimes on |f|: NaN/overflow, normal (integer rounding of the mantissa, as for bf16), and
// subnormal, where adding 0.5f makes the FPU round |f| to a multiple of 2^-24 (ulp(0.5f) = 2^-24,
// the float16 subnormal step) in the default round-to-nearest-even mode.
inline uint16_t floatToHalf(float f) {
  uint32_t u = floatBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t mag = u & 0x7FFFFFFFu;
  uint32_t nan = 0x7E00u | ((mag >> 13) & 0x3FFu);
  uint32_t normal = (mag + 0xFFFu + ((mag >> 13) & 1u) - (112u << 23)) >> 13;
  uint32_t sub = floatBits(bitsFloat(mag) + 0.5f) - floatBits(0.5f);
  // 65520 = 65504 + half an ulp: the tie goes to even, which is inf (65504 has an odd mantissa).
  uint32_t out = mag > 0x7F800000u    ? nan
                 : mag >= 0x477FF000u ? 0x7C00u
                 : mag < 0x38800000u  ? sub
                                      : normal;
  return uint16_t(sign | out);
}

}  // namespace
}  // namespace smddp::reduce
