// SPDX-License-Identifier: Apache-2.0
// The float8 formats torch offers, as storage types with their float32 conversions. One copy of
// the arithmetic serves the CPU kernels (kernels.h, once per ISA) and the CUDA kernels
// (cuda/ops_cuda.cuh), so a GPU reduction equals the CPU's bit for bit.
// Invariants (torch's own conversions; tests/unit checks every 8-bit pattern against an
// independent reference, tests/python/test_dtypes.py random sums and products against torch):
// - widening is exact; narrowing rounds to nearest, ties to even;
// - e4m3fn saturates: a finite overflow and +-inf give +-448; NaN gives 0x7F with the sign;
// - e5m2 is IEEE-like: overflow gives +-inf, NaN gives 0x7F with the sign;
// - the fnuz formats have one NaN (0x80, also every overflow and inf) and no -0;
// - e8m0fnu keeps only the exponent: it ignores the sign, rounds the mantissa to nearest (a tie
//   rounds up unless the float is subnormal) and maps inf and NaN to 0xFF (NaN).
// Everything sits in an anonymous namespace, as in convert.h: each ISA's copy stays its own.
#pragma once

#include <cstdint>
#include <cstring>

#include "reduce/host_device.h"

namespace smddp::reduce {
namespace {

SMDDP_HD inline uint32_t f8FloatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

SMDDP_HD inline float f8BitsFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// How a format spends its top encodings.
enum class F8Special : uint8_t {
  kSaturating,  // e4m3fn: 0x7F/0xFF NaN, no inf, overflow saturates
  kIeee,        // e5m2: all-ones exponent is inf (mantissa 0) or NaN
  kFnuz,        // 0x80 is the only NaN, no inf, no -0, overflow is NaN
};

template <int kExpBits, int kMantBits, int kBias, F8Special kSpecial>
struct F8Format {
  static constexpr int kMant = kMantBits;
  static constexpr int kExpMax = (1 << kExpBits) - 1;

  SMDDP_HD static float widen(uint8_t b) {
    const uint32_t sign = uint32_t(b & 0x80u) << 24;
    const uint32_t mag = b & 0x7Fu;
    const uint32_t exp = mag >> kMantBits;
    const uint32_t mant = mag & ((1u << kMantBits) - 1u);
    const bool nan = kSpecial == F8Special::kSaturating ? mag == 0x7Fu
                     : kSpecial == F8Special::kFnuz     ? b == 0x80u
                                                        : exp == uint32_t(kExpMax) && mant != 0;
    const bool inf = kSpecial == F8Special::kIeee && exp == uint32_t(kExpMax) && mant == 0;
    // Subnormal: mant x 2^(1 - bias - mantBits), an exact float product.
    const float step = f8BitsFloat(uint32_t(127 + 1 - kBias - kMantBits) << 23);
    const float sub = float(mant) * step;
    const uint32_t normal = ((exp + 127u - uint32_t(kBias)) << 23) | (mant << (23 - kMantBits));
    const uint32_t bits = nan ? 0x7FC00000u
                          : inf ? 0x7F800000u
                          : exp == 0 ? f8FloatBits(sub)
                                     : normal;
    // A NaN keeps its sign (torch's widening does), except the fnuz NaN, whose sign bit is the
    // NaN itself.
    return f8BitsFloat(bits | (nan && kSpecial == F8Special::kFnuz ? 0u : sign));
  }

  SMDDP_HD static uint8_t narrow(float f) {
    const uint32_t u = f8FloatBits(f);
    const uint32_t sign = (u >> 24) & 0x80u;
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return kSpecial == F8Special::kFnuz ? 0x80u : uint8_t(0x7Fu | sign);
    uint32_t r;
    if (a < (uint32_t(127 + 1 - kBias) << 23)) {
      // Below the smallest normal: adding a float whose ulp is the subnormal step makes the FPU
      // round |f| to a multiple of it (nearest even); the difference of the bits is the count.
      const float magic = f8BitsFloat(uint32_t(127 + 24 - kBias - kMantBits) << 23);
      r = f8FloatBits(f8BitsFloat(a) + magic) - f8FloatBits(magic);
    } else {
      constexpr int kDrop = 23 - kMantBits;
      r = (a - (uint32_t(127 - kBias) << 23) + ((1u << (kDrop - 1)) - 1u) + ((a >> kDrop) & 1u)) >>
          kDrop;
    }
    if constexpr (kSpecial == F8Special::kSaturating) {
      if (r > 0x7Eu) r = 0x7Eu;
    } else if constexpr (kSpecial == F8Special::kIeee) {
      if (r > 0x7Cu) r = 0x7Cu;
    } else {
      if (r >= 0x80u) return 0x80u;
      if (r == 0) return 0;
    }
    return uint8_t(r | sign);
  }
};

// e8m0fnu: the float32 exponent field, rounded by the mantissa.
struct F8E8M0Format {
  SMDDP_HD static float widen(uint8_t b) {
    return b == 0xFFu ? f8BitsFloat(0x7FC00000u)
                      : f8BitsFloat(b == 0 ? 0x00400000u : uint32_t(b) << 23);
  }
  SMDDP_HD static uint8_t narrow(float f) {
    const uint32_t u = f8FloatBits(f);
    const uint32_t exp = (u >> 23) & 0xFFu;
    if (exp == 0xFFu) return 0xFFu;
    const bool half = (u & 0x00400000u) != 0;
    const bool up = half && ((u & 0x003FFFFFu) != 0 || exp > 0);
    return uint8_t(exp + (up ? 1u : 0u));
  }
};

using F8E4M3FN = F8Format<4, 3, 7, F8Special::kSaturating>;
using F8E4M3FNUZ = F8Format<4, 3, 8, F8Special::kFnuz>;
using F8E5M2 = F8Format<5, 2, 15, F8Special::kIeee>;
using F8E5M2FNUZ = F8Format<5, 2, 16, F8Special::kFnuz>;

// The storage type of one float8 format: one byte, converted through Fmt.
template <class Fmt>
struct Float8 {
  uint8_t bits;
};

}  // namespace
}  // namespace smddp::reduce
