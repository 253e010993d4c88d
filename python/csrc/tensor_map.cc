// SPDX-License-Identifier: Apache-2.0
// torch -> engine value mapping and staging (see tensor_map.h).
// Invariant: bool tensors travel as uint8 (one byte, 0/1), so MIN/MAX are AND/OR; other
// reductions on bool are rejected rather than silently producing values other than 0/1.
#include "tensor_map.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "device_streams.h"

namespace smddp::torch_shim {

DataType toDataType(const at::Tensor& tensor, const char* what) {
  switch (tensor.scalar_type()) {
    case at::kFloat: return DataType::kFloat32;
    case at::kDouble: return DataType::kFloat64;
    case at::kHalf: return DataType::kFloat16;
    case at::kBFloat16: return DataType::kBFloat16;
    case at::kChar: return DataType::kInt8;
    case at::kByte: return DataType::kUInt8;
    case at::kBool: return DataType::kUInt8;
    case at::kInt: return DataType::kInt32;
    case at::kLong: return DataType::kInt64;
    default:
      TORCH_CHECK(false, "smddp: ", what, " does not support dtype ", tensor.scalar_type(),
                  " (supported: float32, float64, float16, bfloat16, int8, uint8, int32, int64,"
                  " bool)");
  }
}

ReduceOp toReduceOp(const ::c10d::ReduceOp& op, const char* what) {
  switch (op.op_) {
    case ::c10d::ReduceOp::SUM: return ReduceOp::kSum;
    case ::c10d::ReduceOp::PRODUCT: return ReduceOp::kProd;
    case ::c10d::ReduceOp::MIN: return ReduceOp::kMin;
    case ::c10d::ReduceOp::MAX: return ReduceOp::kMax;
    case ::c10d::ReduceOp::AVG: return ReduceOp::kAvg;
    case compat::kPremulSum:  // the callers premultiply (premultiplied / premultiply)
      return ReduceOp::kSum;
    default:
      TORCH_CHECK(false, "smddp: ", what, " with ReduceOp ", static_cast<int>(op.op_),
                  " (BAND/BOR/BXOR) is not supported by the smddp backend; "
                  "supported: SUM, PRODUCT, MIN, MAX, AVG");
  }
}

namespace {

at::Tensor premulFactorOf(const at::Tensor& input, const ::c10d::ReduceOp& op, const char* what) {
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "smddp: ", what,
              " with ReduceOp.PREMUL_SUM needs a floating-point tensor, got ", input.scalar_type());
  at::Tensor factor = compat::premulFactor(op);
  TORCH_CHECK(factor.defined(), "smddp: ", what, ": ReduceOp.PREMUL_SUM without a factor");
  TORCH_CHECK(factor.device().is_cpu(), "smddp: ", what,
              ": the PREMUL_SUM factor must be a CPU tensor, got ", factor.device());
  return factor;
}

}  // namespace

at::Tensor premultiplied(const at::Tensor& input, const ::c10d::ReduceOp& op, const char* what) {
  if (op.op_ != compat::kPremulSum) return input;
  const at::Tensor factor = premulFactorOf(input, op, what);
  at::NoGradGuard noGrad;
  return at::mul(input, factor).to(input.scalar_type()).contiguous();
}

void premultiply(const at::Tensor& tensor, const ::c10d::ReduceOp& op, const char* what) {
  if (op.op_ != compat::kPremulSum) return;
  const at::Tensor factor = premulFactorOf(tensor, op, what);
  at::NoGradGuard noGrad;
  tensor.mul_(factor);
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
