// SPDX-License-Identifier: Apache-2.0
// smddp's (dtype, op) on NCCL (nccl_types.h).
#include "planes/nccl/nccl_types.h"

namespace smddp::planes::nccl {
namespace {

bool nativeType(DataType dtype, ncclDataType_t* type) {
  switch (dtype) {
    case DataType::kFloat32: *type = ncclFloat32; return true;
    case DataType::kFloat64: *type = ncclFloat64; return true;
    case DataType::kFloat16: *type = ncclFloat16; return true;
    case DataType::kBFloat16: *type = ncclBfloat16; return true;
    case DataType::kInt8: *type = ncclInt8; return true;
    case DataType::kUInt8: *type = ncclUint8; return true;
    case DataType::kInt32: *type = ncclInt32; return true;
    case DataType::kUInt32: *type = ncclUint32; return true;
    case DataType::kInt64: *type = ncclInt64; return true;
    case DataType::kUInt64: *type = ncclUint64; return true;
    default: return false;
  }
}

bool nativeOp(ReduceOp op, ncclRedOp_t* out) {
  switch (op) {
    case ReduceOp::kSum: *out = ncclSum; return true;
    case ReduceOp::kProd: *out = ncclProd; return true;
    case ReduceOp::kMin: *out = ncclMin; return true;
    case ReduceOp::kMax: *out = ncclMax; return true;
    case ReduceOp::kAvg: *out = ncclAvg; return true;
    default: return false;
  }
}

}  // namespace

NcclReduction ncclReduction(DataType dtype, ReduceOp op) {
  NcclReduction r;
  if (!reductionDefined(dtype, op)) return r;
  if (dtype == DataType::kBool) {
    r.type = ncclUint8;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMax:
      case ReduceOp::kBor: r.op = ncclMax; r.ok = true; break;
      case ReduceOp::kProd:
      case ReduceOp::kMin:
      case ReduceOp::kBand: r.op = ncclMin; r.ok = true; break;
      default: break;
    }
    return r;
  }
  if (isComplex(dtype)) {
    r.type = dtype == DataType::kComplex64 ? ncclFloat32 : ncclFloat64;
    r.scale = 2;
    r.ok = (op == ReduceOp::kSum && nativeOp(op, &r.op)) ||
           (op == ReduceOp::kAvg && nativeOp(op, &r.op));
    return r;
  }
  r.ok = nativeType(dtype, &r.type) && nativeOp(op, &r.op);
  return r;
}

std::string ncclRefusal(const Call& call) {
  if (!call.reduces() || ncclReduction(call.dtype, call.op).ok) return "";
  const std::string what = std::string(toString(call.op)) + " on " + toString(call.dtype) + ": ";
  const bool bitwise =
      call.op == ReduceOp::kBand || call.op == ReduceOp::kBor || call.op == ReduceOp::kBxor;
  if (call.dtype == DataType::kBool) return what + "NCCL has no exclusive or";
  if (isComplex(call.dtype)) return what + "NCCL has no complex product";
  if (bitwise) return what + "NCCL has no bitwise reductions";
  if (call.dtype == DataType::kInt16 || call.dtype == DataType::kUInt16) {
    return what + "NCCL has no 16-bit integer type";
  }
  if (isFloatingPoint(call.dtype)) {
    return what + "NCCL's float8 reductions round at every step, smddp's once";
  }
  return what + "NCCL has no such reduction";
}

}  // namespace smddp::planes::nccl
