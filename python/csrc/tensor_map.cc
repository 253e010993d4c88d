// SPDX-License-Identifier: Apache-2.0
// torch -> engine value mapping and staging (see tensor_map.h).
// Invariant: every scalar type of the running torch that the engine has is mapped (the scalar
// types newer than 1.13 behind torch_compat.h's version macros); a (dtype, op) pair the engine
// does not define is refused here, before any tensor is touched, with the engine's reason.
#include "tensor_map.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>

#include "device_streams.h"
#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

// The engine dtype of a torch scalar type; false when the engine has none.
bool mapScalarType(at::ScalarType type, DataType* out) {
  switch (type) {
    case at::kFloat: *out = DataType::kFloat32; return true;
    case at::kDouble: *out = DataType::kFloat64; return true;
    case at::kHalf: *out = DataType::kFloat16; return true;
    case at::kBFloat16: *out = DataType::kBFloat16; return true;
    case at::kChar: *out = DataType::kInt8; return true;
    case at::kByte: *out = DataType::kUInt8; return true;
    case at::kShort: *out = DataType::kInt16; return true;
    case at::kInt: *out = DataType::kInt32; return true;
    case at::kLong: *out = DataType::kInt64; return true;
    case at::kBool: *out = DataType::kBool; return true;
    case at::kComplexFloat: *out = DataType::kComplex64; return true;
    case at::kComplexDouble: *out = DataType::kComplex128; return true;
#if SMDDP_TORCH_WIDE_UINTS
    case at::kUInt16: *out = DataType::kUInt16; return true;
    case at::kUInt32: *out = DataType::kUInt32; return true;
    case at::kUInt64: *out = DataType::kUInt64; return true;
#endif
#if SMDDP_TORCH_FLOAT8
    case at::kFloat8_e4m3fn: *out = DataType::kFloat8E4M3FN; return true;
    case at::kFloat8_e5m2: *out = DataType::kFloat8E5M2; return true;
#endif
#if SMDDP_TORCH_FLOAT8_FNUZ
    case at::kFloat8_e4m3fnuz: *out = DataType::kFloat8E4M3FNUZ; return true;
    case at::kFloat8_e5m2fnuz: *out = DataType::kFloat8E5M2FNUZ; return true;
#endif
#if SMDDP_TORCH_FLOAT8_E8M0
    case at::kFloat8_e8m0fnu: *out = DataType::kFloat8E8M0FNU; return true;
#endif
    default: return false;
  }
}

}  // namespace

DataType toDataType(const at::Tensor& tensor, const char* what) {
  DataType dtype = DataType::kFloat32;
  TORCH_CHECK(mapScalarType(tensor.scalar_type(), &dtype), "smddp: ", what,
              " does not support dtype ", tensor.scalar_type(),
              " (supported: the floating types incl. float8, the signed and unsigned integers, "
              "bool and complex)");
  return dtype;
}

ReduceOp toReduceOp(const ::c10d::ReduceOp& op, const char* what) {
  switch (op.op_) {
    case ::c10d::ReduceOp::SUM: return ReduceOp::kSum;
    case ::c10d::ReduceOp::PRODUCT: return ReduceOp::kProd;
    case ::c10d::ReduceOp::MIN: return ReduceOp::kMin;
    case ::c10d::ReduceOp::MAX: return ReduceOp::kMax;
    case ::c10d::ReduceOp::AVG: return ReduceOp::kAvg;
    case ::c10d::ReduceOp::BAND: return ReduceOp::kBand;
    case ::c10d::ReduceOp::BOR: return ReduceOp::kBor;
    case ::c10d::ReduceOp::BXOR: return ReduceOp::kBxor;
    case compat::kPremulSum:  // the callers premultiply (premultiplied / premultiply)
      return ReduceOp::kSum;
    default:
      TORCH_CHECK(false, "smddp: ", what, " with ReduceOp ", static_cast<int>(op.op_),
                  " is not supported by the smddp backend; supported: SUM, PRODUCT, MIN, MAX, "
                  "AVG, PREMUL_SUM, BAND, BOR, BXOR");
  }
}

namespace {

// torch's spelling of an engine op, for messages.
const char* torchName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "SUM";
    case ReduceOp::kProd: return "PRODUCT";
    case ReduceOp::kMin: return "MIN";
    case ReduceOp::kMax: return "MAX";
    case ReduceOp::kAvg: return "AVG";
    case ReduceOp::kBand: return "BAND";
    case ReduceOp::kBor: return "BOR";
    case ReduceOp::kBxor: return "BXOR";
  }
  return "?";
}

}  // namespace

ReduceOp checkedReduceOp(const at::Tensor& tensor, const ::c10d::ReduceOp& op, const char* what,
                         int rank) {
  const ReduceOp engineOp = toReduceOp(op, what);
  const DataType dtype = toDataType(tensor, what);
  const bool premul = op.op_ == compat::kPremulSum;
  TORCH_CHECK(!premul || dtype != DataType::kBool, errorHead(rank), ": ", what,
              ": ReduceOp.PREMUL_SUM is not defined for bool tensors");
  TORCH_CHECK(reductionDefined(dtype, engineOp), errorHead(rank), ": ", what, ": ReduceOp.",
              premul ? "PREMUL_SUM" : torchName(engineOp), " is not supported for dtype ",
              tensor.scalar_type(), " (", reductionRefusal(dtype, engineOp), ")");
  return engineOp;
}

namespace {

at::Tensor premulFactorOf(const at::Tensor& input, const ::c10d::ReduceOp& op, const char* what) {
  at::Tensor factor = compat::premulFactor(op);
  TORCH_CHECK(factor.defined(), "smddp: ", what, ": ReduceOp.PREMUL_SUM without a factor");
  TORCH_CHECK(factor.device().is_cpu(), "smddp: ", what,
              ": the PREMUL_SUM factor must be a CPU tensor, got ", factor.device());
  return factor;
}

}  // namespace

// input x factor in input's dtype: float8 multiplies in float32 and rounds once (torch has no
// float8 arithmetic on the CPU); integers multiply in 64 bits and wrap, with an integral factor.
at::Tensor premultiplied(const at::Tensor& input, const ::c10d::ReduceOp& op, const char* what,
                         int rank) {
  if (op.op_ != compat::kPremulSum) return input;
  checkedReduceOp(input, op, what, rank);
  const at::Tensor factor = premulFactorOf(input, op, what);
  const DataType dtype = toDataType(input, what);
  const at::ScalarType type = input.scalar_type();
  at::NoGradGuard noGrad;
  if (isIntegral(dtype)) {
    TORCH_CHECK(!factor.is_complex(), errorHead(rank), ": ", what,
                ": a complex PREMUL_SUM factor cannot scale a ", type, " tensor");
    const double value = factor.to(at::kDouble).item<double>();
    TORCH_CHECK(value == std::trunc(value), errorHead(rank), ": ", what, ": the PREMUL_SUM factor ",
                value, " is not an integer, so it cannot scale a ", type, " tensor");
    return at::mul(input.to(at::kLong), factor.to(at::kLong)).to(type).contiguous();
  }
  if (dataTypeSize(dtype) == 1) {  // float8
    return at::mul(input.to(at::kFloat), factor.to(at::kFloat)).to(type).contiguous();
  }
  return at::mul(input, factor).to(type).contiguous();
}

void premultiply(const at::Tensor& tensor, const ::c10d::ReduceOp& op, const char* what,
                 int rank) {
  if (op.op_ != compat::kPremulSum) return;
  const at::Tensor scaled = premultiplied(tensor, op, what, rank);
  at::NoGradGuard noGrad;
  tensor.copy_(scaled);
}

void checkTensor(const at::Tensor& tensor, const char* what) {
  TORCH_CHECK(tensor.defined(), "smddp: ", what, " got an undefined tensor");
  TORCH_CHECK(!tensor.is_cuda() || kShimHasCuda, "smddp: ", what,
              " got a CUDA tensor, but this build of torch_smddp has no CUDA support (torch "
              "without CUDA, or no CUDA toolkit when it was built)");
  TORCH_CHECK(tensor.device().is_cpu() || tensor.is_cuda(), "smddp: ", what,
              " supports CPU and CUDA tensors, got ", tensor.device());
  TORCH_CHECK(tensor.layout() == at::kStrided, "smddp: ", what,
              " supports dense (strided) tensors only, got layout ", tensor.layout());
  toDataType(tensor, what);
}

void checkSingle(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "smddp: ", what,
              " expects exactly one tensor per process, got ", tensors.size());
  checkTensor(tensors[0], what);
}

Buffer toBuffer(const at::Tensor& tensor, const char* what) {
  TORCH_INTERNAL_ASSERT(tensor.is_contiguous(), "smddp: ", what, " staged a non-contiguous tensor");
  const DataType dtype = toDataType(tensor, what);
  if (tensor.is_cuda()) {
    const int device = tensor.get_device();
    checkNotCapturing(device, what);
    return Buffer(tensor.data_ptr(), static_cast<size_t>(tensor.numel()), dtype,
                  MemoryType::kCuda, device, currentStream(device));
  }
  if (fakeDeviceMode()) return mirrorOf(tensor, dtype);
  return Buffer(tensor.data_ptr(), static_cast<size_t>(tensor.numel()), dtype, MemoryType::kHost,
                -1);
}

at::Tensor Staging::stage(const at::Tensor& tensor, bool copyIn, bool copyBack) {
  if (tensor.is_contiguous()) {
    return tensor;
  }
  at::Tensor tmp;
  {
    at::NoGradGuard noGrad;
    tmp = copyIn ? tensor.contiguous() : at::empty_like(tensor, at::MemoryFormat::Contiguous);
  }
  if (copyBack) {
    copies_.emplace_back(tensor, tmp);
  }
  alive_.push_back(tmp);
  return tmp;
}

void Staging::addCopyBack(at::Tensor to, at::Tensor from) {
  copies_.emplace_back(std::move(to), std::move(from));
}

void Staging::copyBack() {
  mirrors_.download();
  at::NoGradGuard noGrad;
  for (auto& [to, from] : copies_) {
    to.copy_(from);
  }
}

void Staging::copyBackOnStream(const std::vector<Request>& requests, int device) {
  if (copies_.empty()) return;
  void* stream = currentStream(device);
  for (Request r : requests) {
    try {
      r.waitOnStream(stream);  // enqueued even when the request failed (the Work reports it)
    } catch (const std::exception&) {
    }
  }
  at::NoGradGuard noGrad;
  for (auto& [to, from] : copies_) {
    to.copy_(from);  // on the current stream, after the results
  }
  copies_.clear();
}

void Staging::release() {
  mirrors_.release();
  copies_.clear();
  alive_.clear();
}

}  // namespace smddp::torch_shim
