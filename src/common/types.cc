// SPDX-License-Identifier: Apache-2.0
// Names and sizes of the public value types, and the library version string.
#include "smddp/error.h"
#include "smddp/types.h"
#include "smddp/version.h"

namespace smddp {

bool isFloatingPoint(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 ||
         dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

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
  }
  return "invalid-op";
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

#define SMDDP_STR2(x) #x
#define SMDDP_STR(x) SMDDP_STR2(x)
const char* versionString() {
  return SMDDP_STR(SMDDP_VERSION_MAJOR) "." SMDDP_STR(SMDDP_VERSION_MINOR) "." SMDDP_STR(
      SMDDP_VERSION_PATCH);
}

}  // namespace smddp
