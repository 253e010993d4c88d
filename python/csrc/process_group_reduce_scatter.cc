// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's rooted and scattered reductions: reduce (to dst), reduce_scatter (a list of
// world_size inputs), reduce_scatter_tensor (one input of world_size blocks) and its coalesced
// form (FSDP2's gradient reduction). Each maps to engine collectives over contiguous buffers;
// validation on the calling thread raises RuntimeError with nothing sent, as the other
// collectives do.
#include <c10/util/Exception.h>

#include <utility>
#include <vector>

#include "process_group.h"
#include "tensor_map.h"

namespace smddp::torch_shim {

using ::c10d::OpType;

namespace {

void checkPair(const at::Tensor& output, const at::Tensor& input, int size, const char* what,
               int64_t index = -1) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type() &&
                  input.numel() == output.numel() * size,
              "smddp: ", what, index >= 0 ? " pair " + std::to_string(index) : std::string(),
              ": the input must have the output's dtype (", output.scalar_type(),
              ") and world_size * output.numel() = ", output.numel() * size, " elements, got ",
              input.scalar_type(), " with ", input.numel());
}

// Posts one engine reduce_scatter from `input` (premultiplied for PREMUL_SUM, staged in) into
// `output` (staged back).
Request post(Communicator& c, Staging& staging, const at::Tensor& output, const at::Tensor& input,
             const ::c10d::ReduceOp& rop, const char* what) {
  const ReduceOp op = checkedReduceOp(input, rop, what, c.rank());
  const at::Tensor in = premultiplied(input, rop, what, c.rank());
  at::Tensor send = staging.stage(in, /*copyIn=*/true, /*copyBack=*/false);
  staging.keepAlive(in);
  at::Tensor recv = staging.stage(output, /*copyIn=*/false, /*copyBack=*/true);
  return c.reduceScatter(toBuffer(send, what), toBuffer(recv, what), op);
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::reduce(Tensors& tensors,
                                                          const ::c10d::ReduceOptions& opts) {
  const char* what = "reduce";
  checkSingle(tensors, what);
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "smddp: reduce root rank ",
              opts.rootRank, " is out of range for a group of size ", size_);
  TORCH_CHECK(opts.rootTensor == 0, "smddp: reduce rootTensor must be 0, got ", opts.rootTensor);
  const ReduceOp op = checkedReduceOp(tensors[0], opts.reduceOp, what, rank_);
  const bool isRoot = opts.rootRank == rank_;
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor work = staging.stage(tensors[0], /*copyIn=*/true, /*copyBack=*/isRoot);
  const Buffer buffer = toBuffer(work, what);
  // PREMUL_SUM sends a scaled copy: a non-root's tensor stays as it was.
  const at::Tensor scaled = premultiplied(work, opts.reduceOp, what, rank_);
  staging.keepAlive(scaled);
  SmddpWork::Requests requests;
  requests.push_back(c.reduce(toBuffer(scaled, what), buffer, op, static_cast<int>(opts.rootRank)));
  return finish(OpType::REDUCE, std::move(requests), tensors, std::move(staging), opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::reduce_scatter(
    Tensors& outputs, std::vector<Tensors>& inputs, const ::c10d::ReduceScatterOptions& opts) {
  const char* what = "reduce_scatter";
  checkSingle(outputs, what);
  TORCH_CHECK(inputs.size() == 1, "smddp: reduce_scatter expects one input list per process, got ",
              inputs.size());
  const at::Tensor& output = outputs[0];
  const Tensors& ins = inputs[0];
  TORCH_CHECK(static_cast<int>(ins.size()) == size_, "smddp: reduce_scatter expects world_size (",
              size_, ") input tensors, got ", ins.size());
  for (const auto& in : ins) {
    checkTensor(in, what);
    TORCH_CHECK(in.scalar_type() == output.scalar_type() && in.numel() == output.numel(),
                "smddp: reduce_scatter input tensors must match the output's dtype (",
                output.scalar_type(), ") and number of elements (", output.numel(), "), got ",
                in.scalar_type(), " with ", in.numel());
  }
  // The inputs side by side in rank order: one engine reduce_scatter.
  std::vector<at::Tensor> flat;
  for (const auto& in : ins) flat.push_back(in.reshape(-1));
  at::Tensor input;
  {
    at::NoGradGuard noGrad;
    input = at::cat(flat);
  }
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  Request request = post(c, staging, output, input, opts.reduceOp, what);
  SmddpWork::Requests requests;
  requests.push_back(std::move(request));
  return finish(OpType::REDUCE_SCATTER, std::move(requests), outputs, std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::SMDDP_SINGLE(reduce_scatter_single,
                                                                 _reduce_scatter_base)(
    at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) {
  const char* what = "reduce_scatter_tensor";
  checkTensor(input, what);
  checkTensor(output, what);
  checkPair(output, input, size_, what);
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  SmddpWork::Requests requests;
  requests.push_back(post(c, staging, output, input, opts.reduceOp, what));
  return finish(OpType::_REDUCE_SCATTER_BASE, std::move(requests), {output}, std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::SMDDP_SINGLE(reduce_scatter_single_coalesced,
                                                                 reduce_scatter_tensor_coalesced)(
    Tensors& outputs, Tensors& inputs, const ::c10d::ReduceScatterOptions& opts) {
  const char* what = "reduce_scatter_tensor_coalesced";
  TORCH_CHECK(outputs.size() == inputs.size(), "smddp: ", what, " got ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkTensor(inputs[i], what);
    checkTensor(outputs[i], what);
    checkPair(outputs[i], inputs[i], size_, what, static_cast<int64_t>(i));
  }
  toReduceOp(opts.reduceOp, what);  // a bad op raises before anything is posted
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  SmddpWork::Requests requests;
  try {
    for (size_t i = 0; i < inputs.size(); ++i) {  // one engine reduce_scatter per pair, in order
      requests.push_back(post(c, staging, outputs[i], inputs[i], opts.reduceOp, what));
    }
  } catch (...) {
    keepPosted(compat::kReduceScatterTensorCoalescedOp, std::move(requests), outputs,
               std::move(staging));
    throw;
  }
  return finish(compat::kReduceScatterTensorCoalescedOp, std::move(requests), outputs,
                std::move(staging), opts.timeout);
}

}  // namespace smddp::torch_shim
