// SPDX-License-Identifier: Apache-2.0
// Public value types of the smddp API: data types, reduction ops, memory kinds, buffer descriptors.
// Invariant: nothing here names libfabric, CUDA or torch; a Buffer says where its memory lives so the
// CUDA path can be added without changing any signature.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace smddp {

enum class DataType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
};
constexpr int kNumDataTypes = 8;

enum class ReduceOp : uint8_t {
  kSum,
  kProd,
  kMin,
  kMax,
  kAvg,  // floating types only: SUM, then division by the number of ranks
};
constexpr int kNumReduceOps = 5;

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
  }
  return 0;
}
bool isFloatingPoint(DataType dtype);
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
