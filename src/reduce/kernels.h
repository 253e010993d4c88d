// SPDX-License-Identifier: Apache-2.0
// The reduction kernels, written once as templates and instantiated by each kernels_<isa>.cc under
// that file's compiler flags (SSE2 baseline, AVX2+F16C+FMA, AVX-512, AVX-512+BF16). Plain loops
// the compiler vectorizes for the target; only the 16-bit float paths use intrinsics (F16C for
// float16, AVX2 shuffles for bfloat16 in the AVX2 build, and in the AVX-512 builds bfloat16 whole
// blocks in registers, the op included: applyVector; VCVTNE2PS2BF16 where AVX512_BF16 is on).
// Invariants:
// - Everything is in an anonymous namespace: each ISA's instantiations have internal linkage, so
//   the linker can never merge an AVX-512 copy into the baseline path (an ODR trap with -m flags).
//   For the same reason no std:: function templates are called here, only type traits.
// - dst may alias a or b exactly: each element is read before it is written, and vectors hold
//   whole elements, so `ivdep` (no loop-carried dependence) is true for exact aliasing.
// - float16/bfloat16/float8 compute in float32 and round once (nearest even) when stored. Two fp16/bf16
//   operands give an fp32 sum/product that rounds to the same result as exact arithmetic would,
//   since 24 >= 2*11+2 (double rounding is innocuous).
// - Integer SUM/PROD wrap (two's complement), computed in the unsigned type to avoid UB.
// - Floating MIN/MAX return NaN when either input is NaN (torch.minimum/maximum semantics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "reduce/complex.h"
#include "reduce/convert.h"
#include "reduce/element_ops.h"
#include "reduce/float8.h"
#include "reduce/kernel_table.h"

#if defined(__clang__)
#define SMDDP_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define SMDDP_IVDEP _Pragma("GCC ivdep")
#else
#define SMDDP_IVDEP
#endif

namespace smddp::reduce {
namespace {

// Storage types. Native types compute as themselves; Half and BFloat16 compute in float32.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <class T, class Op>
void reduceNative(void* dst, const void* a, const void* b, size_t count) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  SMDDP_IVDEP
  for (size_t i = 0; i < count; ++i) d[i] = Op::apply(x[i], y[i]);
}

#if defined(__GNUC__) && !defined(__clang__)
#define SMDDP_NO_VECTORIZE __attribute__((optimize("no-tree-vectorize")))
#else
#define SMDDP_NO_VECTORIZE
#endif

// Complex PROD, kept scalar: GCC 12's vectorizer recognizes the complex product and emits
// vfmaddsub even under -ffp-contract=off, which would make the FMA builds round differently
// from the baseline and the GPU.
template <class R>
SMDDP_NO_VECTORIZE void reduceComplexProd(void* dst, const void* a, const void* b, size_t count) {
  Complex<R>* d = static_cast<Complex<R>*>(dst);
  const Complex<R>* x = static_cast<const Complex<R>*>(a);
  const Complex<R>* y = static_cast<const Complex<R>*>(b);
  for (size_t i = 0; i < count; ++i) d[i] = x[i] * y[i];
}

// Block width for the 16-bit float types: a multiple of every vector width (16 lanes for
// AVX-512), small enough that the float32 scratch stays in L1.
constexpr size_t kBlock = 64;

#if defined(__AVX512F__)
// The all-lanes masked forms: GCC 12's unmasked AVX-512 conversion intrinsics start from an
// "undefined" register and trip -Wuninitialized; the zero-masked form compiles to the same code.
constexpr __mmask16 kAll16 = 0xFFFF;
#endif

inline void widenBlock(const Half* in, float* out) {
#if defined(__AVX512F__)
  for (size_t j = 0; j < kBlock; j += 16)
    _mm512_storeu_ps(out + j,
                     _mm512_maskz_cvtph_ps(
                         kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j))));
#elif defined(__F16C__)
  for (size_t j = 0; j < kBlock; j += 8)
    _mm256_storeu_ps(out + j,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j))));
#else
  for (size_t j = 0; j < kBlock; ++j) out[j] = halfToFloat(in[j].bits);
#endif
}

inline void narrowBlock(const float* in, Half* out) {
#if defined(__F16C__)
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
#endif
#if defined(__AVX512F__)
  for (size_t j = 0; j < kBlock; j += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j),
                        _mm512_maskz_cvtps_ph(kAll16, _mm512_loadu_ps(in + j), kRound));
#elif defined(__F16C__)
  for (size_t j = 0; j < kBlock; j += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + j), kRound));
#else
  for (size_t j = 0; j < kBlock; ++j) out[j].bits = floatToHalf(in[j]);
#endif
}

#if defined(__AVX2__) && !defined(__AVX512F__)
// AVX2 bfloat16, by hand: the auto-vectorized form spends ~3 instructions per element on
// zero-extension and lane fix-ups. Interleaving with zero puts each bf16 in the top half of a
// float, but in the in-lane order (0-3, 8-11 | 4-7, 12-15); packus_epi32 undoes exactly that
// order, so the float scratch is permuted within each 16 elements and only element-wise code may
// run between widenBlock and narrowBlock (which is all that ever does).
inline void widenBlock(const BFloat16* in, float* out) {
  const __m256i zero = _mm256_setzero_si256();
  for (size_t j = 0; j < kBlock; j += 16) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_unpacklo_epi16(zero, v));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j + 8), _mm256_unpackhi_epi16(zero, v));
  }
}

// The same rounding as floatToBf16, eight lanes at a time, leaving the result in the low half.
inline __m256i roundToBf16(__m256 f) {
  __m256i u = _mm256_castps_si256(f);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
  __m256i quietNan = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  __m256 isNan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
  __m256i r = _mm256_blendv_epi8(rounded, quietNan, _mm256_castps_si256(isNan));
  return _mm256_srli_epi32(r, 16);
}

inline void narrowBlock(const float* in, BFloat16* out) {
  for (size_t j = 0; j < kBlock; j += 16) {
    __m256i lo = roundToBf16(_mm256_loadu_ps(in + j));
    __m256i hi = roundToBf16(_mm256_loadu_ps(in + j + 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_packus_epi32(lo, hi));
  }
}
#elif defined(__AVX512F__) && defined(__AVX512BW__)
// AVX-512 bfloat16, by hand, 16 lanes in registers: zero-extend to 32 bits and shift into the top
// half; narrow with floatToBf16's rounding and one truncating pack (vpmovdw). reduceBlock below
// runs whole blocks through these without a float scratch. narrow16 is exact for subnormals too;
// with AVX512_BF16, reduceBlock narrows with VCVTNE2PS2BF16 and keeps narrow16 for the groups it
// would flush. (The all-lanes masked forms, as above.)
inline __m512 widen16(const BFloat16* in) {
  const __m512i v =
      _mm512_maskz_cvtepu16_epi32(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, v, 16));
}

inline void narrow16(__m512 f, BFloat16* out) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb =
      _mm512_maskz_and_epi32(kAll16, _mm512_maskz_srli_epi32(kAll16, u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_maskz_add_epi32(
      kAll16, u, _mm512_maskz_add_epi32(kAll16, lsb, _mm512_set1_epi32(0x7FFF)));
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  const __m512i r = _mm512_mask_or_epi32(rounded, nan, u, _mm512_set1_epi32(0x00400000));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm512_maskz_cvtepi32_epi16(kAll16, _mm512_maskz_srli_epi32(kAll16, r, 16)));
}

inline void widenBlock(const BFloat16* in, float* out) {
  for (size_t j = 0; j < kBlock; j += 16) _mm512_storeu_ps(out + j, widen16(in + j));
}

inline void narrowBlock(const float* in, BFloat16* out) {
  for (size_t j = 0; j < kBlock; j += 16) narrow16(_mm512_loadu_ps(in + j), out + j);
}
#else
inline void widenBlock(const BFloat16* in, float* out) {
  for (size_t j = 0; j < kBlock; ++j) out[j] = bf16ToFloat(in[j].bits);
}

inline void narrowBlock(const float* in, BFloat16* out) {
  for (size_t j = 0; j < kBlock; ++j) out[j].bits = floatToBf16(in[j]);
}
#endif

// float8: scalar conversions (float8.h) the compiler may vectorize; computed in float32 too.
template <class Fmt>
inline void widenBlock(const Float8<Fmt>* in, float* out) {
  for (size_t j = 0; j < kBlock; ++j) out[j] = Fmt::widen(in[j].bits);
}

template <class Fmt>
inline void narrowBlock(const float* in, Float8<Fmt>* out) {
  for (size_t j = 0; j < kBlock; ++j) out[j].bits = Fmt::narrow(in[j]);
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// Op on 16 float lanes, with the scalar ops' exact semantics (element_ops.h): MIN/MAX pick a when
// it compares less/greater or is NaN, else b.
template <class Op>
__m512 applyVector(__m512 a, __m512 b) {
  if constexpr (std::is_same_v<Op, SumOp>) {
    return _mm512_add_ps(a, b);
  } else if constexpr (std::is_same_v<Op, ProdOp>) {
    return _mm512_mul_ps(a, b);
  } else {
    static_assert(std::is_same_v<Op, MinOp> || std::is_same_v<Op, MaxOp>,
                  "an op without a vector form");
    constexpr int kPick = std::is_same_v<Op, MinOp> ? _CMP_LT_OQ : _CMP_GT_OQ;
    const __mmask16 pickA =
        _mm512_cmp_ps_mask(a, b, kPick) | _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(pickA, b, a);
  }
}
#endif

template <class T, class Op>
void reduceBlock(T* d, const T* x, const T* y) {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__) && defined(__AVX512BW__)
  // With AVX512_BF16, VCVTNE2PS2BF16 narrows 32 lanes in one instruction with floatToBf16's
  // rounding (nearest even, NaN quieted the same way) except that it flushes subnormals to zero;
  // a block whose float results hold a subnormal (fpclass 0x20) takes narrow16 instead.
  // reduce_bench, 1 MiB in place, sum: 77 GB/s -> 130 (float32: 144).
  if constexpr (std::is_same_v<T, BFloat16>) {
    for (size_t j = 0; j < kBlock; j += 32) {
      const __m512 lo = applyVector<Op>(widen16(x + j), widen16(y + j));
      const __m512 hi = applyVector<Op>(widen16(x + j + 16), widen16(y + j + 16));
      if ((_mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20)) == 0) {
        _mm512_storeu_si512(d + j, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));  // reads before writes
      } else {
        narrow16(lo, d + j);
        narrow16(hi, d + j + 16);
      }
    }
    return;
  }
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__)
  // bfloat16 stays in registers, no float scratch. bench/reduce_bench, avx512, 1 MiB in place,
  // sum: 72 GB/s auto-vectorized through the scratch, 82-85 with widen16/narrow16 through it,
  // 87-89 in registers (float32: 155-163). Per element bf16 now costs what float32 does; per
  // byte, twice: the rounding (~10 instructions per 16 lanes) is the bound in cache.
  if constexpr (std::is_same_v<T, BFloat16>) {
    for (size_t j = 0; j < kBlock; j += 16) {
      narrow16(applyVector<Op>(widen16(x + j), widen16(y + j)), d + j);  // reads before writes
    }
    return;
  }
#endif
  float fx[kBlock], fy[kBlock];
  widenBlock(x, fx);
  widenBlock(y, fy);
  for (size_t j = 0; j < kBlock; ++j) fx[j] = Op::apply(fx[j], fy[j]);
  narrowBlock(fx, d);  // after both reads: exact aliasing is safe
}

// Whole blocks in place; the tail goes through zero-padded scratch so it takes the very same
// conversion path (the F16C and software conversions must never both touch one call's data).
template <class T, class Op>
void reduceWidened(void* dst, const void* a, const void* b, size_t count) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  size_t full = count - count % kBlock;
  for (size_t i = 0; i < full; i += kBlock) reduceBlock<T, Op>(d + i, x + i, y + i);
  size_t rest = count - full;
  if (rest == 0) return;
  T tx[kBlock] = {}, ty[kBlock] = {}, td[kBlock];
  for (size_t j = 0; j < rest; ++j) {
    tx[j] = x[full + j];
    ty[j] = y[full + j];
  }
  reduceBlock<T, Op>(td, tx, ty);
  for (size_t j = 0; j < rest; ++j) d[full + j] = td[j];
}

template <class T>
void averageNative(void* buf, size_t count, int divisor) {
  T* p = static_cast<T*>(buf);
  const T div = T(divisor);
  for (size_t i = 0; i < count; ++i) p[i] = p[i] / div;
}

// Integers: the wrapped sum divided in 64 bits, truncated toward zero (C division), as NCCL does.
template <class T>
void averageIntegral(void* buf, size_t count, int divisor) {
  using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  T* p = static_cast<T*>(buf);
  const W div = W(divisor);
  for (size_t i = 0; i < count; ++i) p[i] = T(W(p[i]) / div);
}

template <class R>
void averageComplex(void* buf, size_t count, int divisor) {
  Complex<R>* p = static_cast<Complex<R>*>(buf);
  const R div = R(divisor);
  for (size_t i = 0; i < count; ++i) p[i] = divideBy(p[i], div);
}

template <class T>
void averageWidened(void* buf, size_t count, int divisor) {
  T* p = static_cast<T*>(buf);
  const float div = float(divisor);
  T tp[kBlock] = {};
  float f[kBlock];
  for (size_t i = 0; i < count; i += kBlock) {
    size_t n = count - i < kBlock ? count - i : kBlock;
    for (size_t j = 0; j < n; ++j) tp[j] = p[i + j];
    widenBlock(tp, f);
    for (size_t j = 0; j < kBlock; ++j) f[j] = f[j] / div;
    narrowBlock(f, tp);
    for (size_t j = 0; j < n; ++j) p[i + j] = tp[j];
  }
}

}  // namespace
}  // namespace smddp::reduce
