// SPDX-License-Identifier: Apache-2.0
// Public value types of the smddp API: data types, reduction ops, memory kinds, buffer descriptors.
// Invariant: nothing here names libfabric, CUDA or torch; a Buffer says where its memory lives so the
// CUDA path can be added without changing any signature.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace smddp {

// Appended, never reordered: the values are part of the ABI and the wire checks.
enum class DataType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kInt16,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,  // one byte, 0 or 1
  kFloat8E4M3FN,    // torch.float8_e4m3fn: bias 7, no inf, NaN 0x7F/0xFF, max 448
  kFloat8E4M3FNUZ,  // torch.float8_e4m3fnuz: bias 8, no inf, no -0, NaN 0x80, max 240
  kFloat8E5M2,      // torch.float8_e5m2: bias 15, inf and NaN as in IEEE, max 57344
  kFloat8E5M2FNUZ,  // torch.float8_e5m2fnuz: bias 16, no inf, no -0, NaN 0x80, max 57344
  kFloat8E8M0FNU,   // torch.float8_e8m0fnu: 2^(e-127), no sign, no zero, NaN 0xFF
  kComplex64,       // two float32: real, imaginary
  kComplex128,      // two float64
};
constexpr int kNumDataTypes = 20;

// Appended, never reordered.
enum class ReduceOp : uint8_t {
  kSum,
  kProd,
  kMin,
  kMax,
  kAvg,  // SUM, then division by the number of ranks (integers: truncated toward zero)
  kBand,
  kBor,
  kBxor,
};
constexpr int kNumReduceOps = 8;

enum class MemoryType : uint8_t {
  kHost,
  kCuda,
};

// Bytes per element; 0 for a value outside the enum. Inline: every collective's size uses it.
constexpr size_t dataTypeSize(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kInt8: return 1;
    case DataType::kUInt8: return 1;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kInt16: return 2;
    case DataType::kUInt16: return 2;
    case DataType::kUInt32: return 4;
    case DataType::kUInt64: return 8;
    case DataType::kBool: return 1;
    case DataType::kFloat8E4M3FN: return 1;
    case DataType::kFloat8E4M3FNUZ: return 1;
    case DataType::kFloat8E5M2: return 1;
    case DataType::kFloat8E5M2FNUZ: return 1;
    case DataType::kFloat8E8M0FNU: return 1;
    case DataType::kComplex64: return 8;
    case DataType::kComplex128: return 16;
  }
  return 0;
}

// Real floating types: float64/32/16, bfloat16 and the float8 family.
constexpr bool isFloatingPoint(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 ||
         dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         (dtype >= DataType::kFloat8E4M3FN && dtype <= DataType::kFloat8E8M0FNU);
}
constexpr bool isComplex(DataType dtype) {
  return dtype == DataType::kComplex64 || dtype == DataType::kComplex128;
}
// Signed and unsigned integers (not bool).
constexpr bool isIntegral(DataType dtype) {
  return (dtype >= DataType::kInt8 && dtype <= DataType::kInt64) ||
         (dtype >= DataType::kInt16 && dtype <= DataType::kUInt64);
}

// The one rule of which reductions exist, used by the CPU and CUDA reducers and the checks:
// - real floating: SUM, PROD, MIN, MAX, AVG;
// - integers: those and BAND, BOR, BXOR (SUM/PROD wrap; AVG truncates toward zero);
// - bool: SUM (or), PROD (and), MIN (and), MAX (or), BAND, BOR, BXOR; no AVG;
// - complex: SUM, PROD, AVG (complex numbers have no order and no bits to combine).
constexpr bool reductionDefined(DataType dtype, ReduceOp op) {
  if (static_cast<int>(dtype) >= kNumDataTypes || static_cast<int>(op) >= kNumReduceOps) {
    return false;
  }
  const bool bitwise = op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
  if (isFloatingPoint(dtype)) return !bitwise;
  if (isComplex(dtype)) return op == ReduceOp::kSum || op == ReduceOp::kProd || op == ReduceOp::kAvg;
  if (dtype == DataType::kBool) return op != ReduceOp::kAvg;
  return true;  // integers
}

// Why (dtype, op) is not a reduction, in words, for error messages; "" when it is one.
const char* reductionRefusal(DataType dtype, ReduceOp op);

const char* toString(DataType dtype);
const char* toString(ReduceOp op);
const char* toString(MemoryType mem);

// A typed view of memory owned by the caller. It must stay valid until the request completes.
struct Buffer {
  void* data = nullptr;
  size_t count = 0;  // elements, not bytes
  DataType dtype = DataType::kFloat32;
  MemoryType memory = MemoryType::kHost;
  int device = -1;  // CUDA device ordinal when memory == kCuda
  // kCuda only: the stream (a cudaStream_t; nullptr: the default stream) that orders this
  // buffer's producers and consumers. The collective starts after the work queued on it before
  // the call; Request::waitOnStream orders later work after the result. Every CUDA buffer of one
  // call names the same stream.
  void* stream = nullptr;

  Buffer() = default;
  // Takes const memory too: the engine never writes through a send buffer.
  Buffer(const void* d, size_t n, DataType t, MemoryType m = MemoryType::kHost, int dev = -1,
         void* str = nullptr)
      : data(const_cast<void*>(d)), count(n), dtype(t), memory(m), device(dev), stream(str) {}

  size_t bytes() const { return count * dataTypeSize(dtype); }
};

}  // namespace smddp
