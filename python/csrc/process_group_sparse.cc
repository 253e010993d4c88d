// SPDX-License-Identifier: Apache-2.0
// all_reduce of a sparse COO tensor, as gloo does it: each rank coalesces its tensor, the ranks
// exchange their nnz and shapes, all-gather their indices and values (padded to the largest nnz),
// and each rank sums the union by coalescing it. The result replaces the tensor's contents.
// Invariants: runs on the caller's thread with the engine's blocking collectives, in posting
// order with everything queued before it; every rank checks that all ranks hold the same sizes,
// sparse and dense dims and dtype, and raises naming the first rank that differs, before any
// index or value moves; SUM only (as gloo).
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <string>
#include <vector>

#include "process_group.h"
#include "smddp/error.h"
#include "tensor_map.h"

namespace smddp::torch_shim {
namespace {

constexpr int64_t kMaxDims = 32;
// meta row: nnz, sparse dims, dense dims, dims, dtype, sizes (kMaxDims slots)
constexpr int64_t kMetaWidth = 5 + kMaxDims;

Buffer hostBuffer(const at::Tensor& t, DataType dtype) {
  return Buffer(t.data_ptr(), static_cast<size_t>(t.numel()), dtype, MemoryType::kHost, -1);
}

at::Tensor metaOf(const at::Tensor& input, DataType dtype) {
  at::Tensor meta = at::zeros({kMetaWidth}, at::kLong);
  auto m = meta.accessor<int64_t, 1>();
  m[0] = input._nnz();
  m[1] = input.sparse_dim();
  m[2] = input.dense_dim();
  m[3] = input.dim();
  m[4] = static_cast<int64_t>(dtype);
  for (int64_t d = 0; d < input.dim(); ++d) m[5 + d] = input.size(d);
  return meta;
}

// "sparse dims 1, dense dims 0, dims 2, dtype 0, sizes [5, 3]" from a meta row.
std::string describe(const at::Tensor& row) {
  auto m = row.accessor<int64_t, 1>();
  std::string s = "sparse dims " + std::to_string(m[1]) + ", dense dims " + std::to_string(m[2]) +
                  ", dims " + std::to_string(m[3]) + ", dtype " +
                  toString(static_cast<DataType>(m[4])) + ", sizes [";
  for (int64_t d = 0; d < m[3] && d < kMaxDims; ++d) s += (d ? ", " : "") + std::to_string(m[5 + d]);
  return s + "]";
}

// torch coalesces neither float8 nor uint16/32/64 tensors on the CPU: those sum in float32 and
// int64 (the same bits modulo 2^n for the unsigned types) and are converted back once.
at::ScalarType computeType(at::ScalarType type, DataType dtype) {
  if (isFloatingPoint(dtype) && dataTypeSize(dtype) == 1) return at::kFloat;
  if (dtype == DataType::kUInt16 || dtype == DataType::kUInt32 || dtype == DataType::kUInt64) {
    return at::kLong;
  }
  return type;
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::allreduceSparse(
    at::Tensor& tensor, const ::c10d::AllreduceOptions& opts) {
  const char* what = "allreduce (sparse)";
  TORCH_CHECK(tensor.layout() == at::kSparse, "smddp: ", what, " expects a sparse COO tensor, got ",
              tensor.layout());
  TORCH_CHECK(tensor.device().is_cpu(), "smddp: ", what, " supports CPU tensors, got ",
              tensor.device());
  TORCH_CHECK(opts.reduceOp.op_ == ::c10d::ReduceOp::SUM, "smddp: ", what,
              " supports ReduceOp.SUM only (as gloo), got ", static_cast<int>(opts.reduceOp.op_));
  TORCH_CHECK(tensor.dim() <= kMaxDims, "smddp: ", what, " supports up to ", kMaxDims,
              " dimensions, got ", tensor.dim());
  const DataType dtype = toDataType(tensor, what);
  TORCH_CHECK(reductionDefined(dtype, ReduceOp::kSum), "smddp: ", what, ": dtype ",
              tensor.scalar_type(), " has no SUM");
  at::NoGradGuard noGrad;
  const at::ScalarType wide = computeType(tensor.scalar_type(), dtype);
  const at::Tensor input = tensor.to(wide).coalesce();
  const DataType wireType = toDataType(input, what);
  const CommUse use = enter();
  Communicator& c = use.comm();

  const at::Tensor meta = metaOf(input, dtype);
  at::Tensor metas = at::empty({size_, kMetaWidth}, at::kLong);
  c.allGatherBlocking(hostBuffer(meta, DataType::kInt64), hostBuffer(metas, DataType::kInt64));
  int64_t maxNnz = 0;
  for (int r = 0; r < size_; ++r) {
    const at::Tensor row = metas[r];
    TORCH_CHECK(at::equal(row.slice(0, 1), meta.slice(0, 1)), errorHead(rank_), ": ", what,
                ": rank ", r, " holds a tensor of another shape, dtype or sparse/dense split (",
                describe(row), "; here ", describe(meta), ")");
    maxNnz = std::max(maxNnz, row[0].item<int64_t>());
  }

  // Indices [sparse dims, nnz] and values [nnz, dense...], padded to maxNnz and gathered.
  const int64_t sparseDims = input.sparse_dim();
  const at::Tensor indices = input._indices();
  const at::Tensor values = input._values().contiguous();
  const int64_t nnz = input._nnz();
  at::Tensor paddedIdx = at::zeros({sparseDims, maxNnz}, at::kLong);
  paddedIdx.narrow(1, 0, nnz).copy_(indices);
  std::vector<int64_t> valueShape = values.sizes().vec();
  valueShape[0] = maxNnz;
  at::Tensor paddedVal = at::zeros(valueShape, values.options());
  paddedVal.narrow(0, 0, nnz).copy_(values);
  std::vector<int64_t> allIdxShape = {size_, sparseDims, maxNnz};
  at::Tensor allIdx = at::empty(allIdxShape, at::kLong);
  std::vector<int64_t> allValShape = valueShape;
  allValShape.insert(allValShape.begin(), size_);
  at::Tensor allVal = at::empty(allValShape, values.options());
  c.allGatherBlocking(hostBuffer(paddedIdx, DataType::kInt64), hostBuffer(allIdx, DataType::kInt64));
  c.allGatherBlocking(hostBuffer(paddedVal, wireType), hostBuffer(allVal, wireType));

  std::vector<at::Tensor> idxParts, valParts;
  for (int r = 0; r < size_; ++r) {
    const int64_t n = metas[r][0].item<int64_t>();
    idxParts.push_back(allIdx[r].narrow(1, 0, n));
    valParts.push_back(allVal[r].narrow(0, 0, n));
  }
  const at::Tensor sum =
      at::sparse_coo_tensor(at::cat(idxParts, 1), at::cat(valParts, 0), input.sizes(),
                            input.options())
          .coalesce();
  tensor.copy_(sum.to(tensor.scalar_type()));
  return finish(::c10d::OpType::ALLREDUCE, {}, {tensor}, Staging(), opts.timeout);
}

}  // namespace smddp::torch_shim
