// SPDX-License-Identifier: Apache-2.0
// Names and sizes of the public value types, and the library version string.
#include "smddp/error.h"
#include "smddp/types.h"
#include "smddp/version.h"

namespace smddp {

const char* toString(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kBool: return "bool";
    case DataType::kFloat8E4M3FN: return "float8_e4m3fn";
    case DataType::kFloat8E4M3FNUZ: return "float8_e4m3fnuz";
    case DataType::kFloat8E5M2: return "float8_e5m2";
    case DataType::kFloat8E5M2FNUZ: return "float8_e5m2fnuz";
    case DataType::kFloat8E8M0FNU: return "float8_e8m0fnu";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
  }
  return "invalid-dtype";
}

const char* toString(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kAvg: return "avg";
    case ReduceOp::kBand: return "band";
    case ReduceOp::kBor: return "bor";
    case ReduceOp::kBxor: return "bxor";
  }
  return "invalid-op";
}

const char* reductionRefusal(DataType dtype, ReduceOp op) {
  if (reductionDefined(dtype, op)) return "";
  if (static_cast<int>(dtype) >= kNumDataTypes) return "the dtype is not a valid value";
  if (static_cast<int>(op) >= kNumReduceOps) return "the op is not a valid value";
  if (isComplex(dtype)) {
    return "complex tensors reduce with sum, prod and avg only (complex numbers have no order "
           "and no bits to combine)";
  }
  if (dtype == DataType::kBool) return "bool tensors do not average (sum is or, prod is and)";
  return "bitwise ops (band, bor, bxor) need an integer or bool dtype";
}

const char* toString(MemoryType mem) { return mem == MemoryType::kHost ? "host" : "cuda"; }

const char* toString(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kTransport: return "transport error";
    case ErrorCode::kPeerFailure: return "peer failure";
    case ErrorCode::kMismatch: return "collective mismatch";
    case ErrorCode::kAborted: return "aborted";
    case ErrorCode::kBroken: return "communicator broken";
    case ErrorCode::kStore: return "store error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

std::string errorHead(int rank, int size, const std::string& host) {
  std::string head = "smddp: rank " + std::to_string(rank);
  if (size >= 0) head += "/" + std::to_string(size);
  if (!host.empty()) head += " (" + host + ")";
  return head;
}

std::string errorHead(int rank, const std::string& host) { return errorHead(rank, -1, host); }

#define SMDDP_STR2(x) #x
#define SMDDP_STR(x) SMDDP_STR2(x)
const char* versionString() {
  return SMDDP_STR(SMDDP_VERSION_MAJOR) "." SMDDP_STR(SMDDP_VERSION_MINOR) "." SMDDP_STR(
      SMDDP_VERSION_PATCH);
}

}  // namespace smddp
