// SPDX-License-Identifier: Apache-2.0
// Scalar dtype conversions for the perf tools' fill and check passes (not on the timed path, so
// clarity wins over speed). Rounding is to nearest even, as the engine's reducer does.
#include "element.h"

#include <cmath>
#include <cstring>

namespace smddp::bench {
namespace {

uint32_t bitsOf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

float floatOf(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

// Shifts mantissa right by shift bits, rounding to nearest even.
uint32_t shiftRoundEven(uint32_t mantissa, int shift) {
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  return kept + ((rest > halfway || (rest == halfway && (kept & 1))) ? 1 : 0);
}

template <class T>
T load(const void* buffer, size_t index) {
  T v;
  std::memcpy(&v, static_cast<const char*>(buffer) + index * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void store(void* buffer, size_t index, T v) {
  std::memcpy(static_cast<char*>(buffer) + index * sizeof(T), &v, sizeof(T));
}

template <class T>
T toInteger(double value) {
  // Through int64 so values outside T's range wrap as two's complement instead of being UB.
  return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(value)));
}

}  // namespace

uint16_t floatToHalf(float value) {
  const uint32_t x = bitsOf(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const int exponent = static_cast<int>((x >> 23) & 0xff);
  uint32_t mantissa = x & 0x7fffff;
  if (exponent == 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);  // inf or quiet NaN
  const int e = exponent - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return sign;
    mantissa |= 0x800000;
    return sign | static_cast<uint16_t>(shiftRoundEven(mantissa, 14 - e));
  }
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  const uint32_t h = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fff;
  return sign | static_cast<uint16_t>(h + ((rest > 0x1000 || (rest == 0x1000 && (h & 1))) ? 1 : 0));
}

float halfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  if (exponent == 31) return floatOf(sign | 0x7f800000 | (mantissa << 13));
  return floatOf(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t floatToBFloat16(float value) {
  const uint32_t x = bitsOf(value);
  if (std::isnan(value)) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float bfloat16ToFloat(uint16_t bits) { return floatOf(static_cast<uint32_t>(bits) << 16); }

double loadElement(DataType dtype, const void* buffer, size_t index) {
  switch (dtype) {
    case DataType::kFloat32:
      return load<float>(buffer, index);
    case DataType::kFloat64:
      return load<double>(buffer, index);
    case DataType::kFloat16:
      return halfToFloat(load<uint16_t>(buffer, index));
    case DataType::kBFloat16:
      return bfloat16ToFloat(load<uint16_t>(buffer, index));
    case DataType::kInt8:
      return load<int8_t>(buffer, index);
    case DataType::kUInt8:
      return load<uint8_t>(buffer, index);
    case DataType::kInt32:
      return load<int32_t>(buffer, index);
    case DataType::kInt64:
      return static_cast<double>(load<int64_t>(buffer, index));
    default:
      break;  // parseDataTypes offers the eight dtypes above only
  }
  return 0;
}

void storeElement(DataType dtype, void* buffer, size_t index, double value) {
  switch (dtype) {
    case DataType::kFloat32:
      return store(buffer, index, static_cast<float>(value));
    case DataType::kFloat64:
      return store(buffer, index, value);
    case DataType::kFloat16:
      return store(buffer, index, floatToHalf(static_cast<float>(value)));
    case DataType::kBFloat16:
      return store(buffer, index, floatToBFloat16(static_cast<float>(value)));
    case DataType::kInt8:
      return store(buffer, index, toInteger<int8_t>(value));
    case DataType::kUInt8:
      return store(buffer, index, toInteger<uint8_t>(value));
    case DataType::kInt32:
      return store(buffer, index, toInteger<int32_t>(value));
    case DataType::kInt64:
      return store(buffer, index, static_cast<int64_t>(value));
    default:
      break;  // parseDataTypes offers the eight dtypes above only
  }
}

}  // namespace smddp::bench
