// SPDX-License-Identifier: Apache-2.0
// Reading and writing one element of any smddp DataType as a double, so fill and verification code
// is written once for every dtype. Invariant: every integer the perf tools use (|v| <= 2048 for
// float16, <= 256 for bfloat16) survives store then load unchanged in every dtype.
#pragma once

#include <cstddef>
#include <cstdint>

#include "smddp/types.h"

namespace smddp::bench {

// IEEE binary16 and bfloat16 from float32, rounded to nearest even; and back (exact).
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);
float bfloat16ToFloat(uint16_t bits);

// buffer[index] as a double (integers converted exactly).
double loadElement(DataType dtype, const void* buffer, size_t index);
// buffer[index] = value, rounded to dtype (integers: truncated toward zero, then wrapped).
void storeElement(DataType dtype, void* buffer, size_t index, double value);

}  // namespace smddp::bench
