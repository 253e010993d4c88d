// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's collectives: c10d calls -> smddp::Communicator requests (see
// process_group.h). Each collective: validate on the calling thread (RuntimeError, nothing sent),
// stage non-contiguous tensors through contiguous temporaries, issue the engine request(s), and
// wrap them in an SmddpWork. Engine smddp::Errors propagate unchanged (std::runtime_error ->
// Python RuntimeError with the engine's message).
#include <c10/util/Exception.h>

#include <utility>
#include <vector>

#include "process_group.h"
#include "tensor_map.h"

namespace smddp::torch_shim {

using ::c10d::OpType;

namespace {

// One posted request, as a Work holds it.
SmddpWork::Requests one(Request request) {
  SmddpWork::Requests requests;
  requests.push_back(std::move(request));
  return requests;
}

void checkRank(int64_t root, int size, const char* what) {
  TORCH_CHECK(root >= 0 && root < size, "smddp: ", what, " root rank ", root,
              " is out of range for a group of size ", size);
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::broadcast(
    Tensors& tensors, const ::c10d::BroadcastOptions& opts) {
  checkSingle(tensors, "broadcast");
  checkRank(opts.rootRank, size_, "broadcast");
  TORCH_CHECK(opts.rootTensor == 0, "smddp: broadcast rootTensor must be 0, got ",
              opts.rootTensor);
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  bool isRoot = opts.rootRank == rank_;
  at::Tensor work = staging.stage(tensors[0], /*copyIn=*/isRoot, /*copyBack=*/!isRoot);
  Buffer buffer = toBuffer(work, "broadcast");
  Request request = c.broadcast(buffer, buffer, static_cast<int>(opts.rootRank));
  return finish(OpType::BROADCAST, one(std::move(request)), tensors, std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::allreduce(
    Tensors& tensors, const ::c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].is_sparse()) {
    return allreduceSparse(tensors[0], opts);
  }
  checkSingle(tensors, "allreduce");
  ReduceOp op = checkedReduceOp(tensors[0], opts.reduceOp, "allreduce", rank_);
  premultiply(tensors[0], opts.reduceOp, "allreduce", rank_);
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor work = staging.stage(tensors[0], /*copyIn=*/true, /*copyBack=*/true);
  Buffer buffer = toBuffer(work, "allreduce");
  Request request = c.allReduce(buffer, buffer, op);
  return finish(OpType::ALLREDUCE, one(std::move(request)), tensors, std::move(staging),
                opts.timeout);
}

#if SMDDP_TORCH_SPARSE_ALLREDUCE
c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::allreduce_sparse(
    Tensors& tensors, const ::c10d::AllreduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1 && tensors[0].defined(), "smddp: allreduce_sparse expects "
              "exactly one tensor per process, got ", tensors.size());
  return allreduceSparse(tensors[0], opts);  // checks layout and device
}
#endif

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::allreduce_coalesced(
    Tensors& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  ReduceOp op = toReduceOp(opts.reduceOp, "allreduce_coalesced");
  bool sameType = true;
  for (const auto& t : tensors) {
    checkTensor(t, "allreduce_coalesced");
    checkedReduceOp(t, opts.reduceOp, "allreduce_coalesced", rank_);
    sameType = sameType && t.scalar_type() == tensors[0].scalar_type();
  }
  for (const auto& t : tensors) premultiply(t, opts.reduceOp, "allreduce_coalesced", rank_);
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  SmddpWork::Requests requests;
  if (!tensors.empty() && sameType) {
    // One engine collective over a flat copy; results are scattered back at completion.
    std::vector<at::Tensor> flat;
    for (const auto& t : tensors) {
      flat.push_back(t.reshape(-1));
    }
    at::Tensor buffer;
    {
      at::NoGradGuard noGrad;
      buffer = at::cat(flat);
    }
    int64_t offset = 0;
    for (const auto& t : tensors) {
      staging.addCopyBack(t, buffer.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
    staging.keepAlive(buffer);
    Buffer b = toBuffer(buffer, "allreduce_coalesced");
    requests.push_back(c.allReduce(b, b, op));
  } else {
    try {
      for (const auto& t : tensors) {
        at::Tensor work = staging.stage(t, /*copyIn=*/true, /*copyBack=*/true);
        Buffer b = toBuffer(work, "allreduce_coalesced");
        requests.push_back(c.allReduce(b, b, op));
      }
    } catch (...) {
      keepPosted(OpType::ALLREDUCE_COALESCED, std::move(requests), tensors, std::move(staging));
      throw;
    }
  }
  return finish(OpType::ALLREDUCE_COALESCED, std::move(requests), tensors, std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::allgather(
    std::vector<Tensors>& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) {
  checkSingle(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1, "smddp: allgather expects one output list per process, got ",
              outputs.size());
  const at::Tensor& input = inputs[0];
  Tensors& outs = outputs[0];
  TORCH_CHECK(static_cast<int>(outs.size()) == size_, "smddp: allgather expects world_size (",
              size_, ") output tensors, got ", outs.size());
  for (const auto& out : outs) {
    checkTensor(out, "allgather");
    TORCH_CHECK(out.scalar_type() == input.scalar_type() && out.numel() == input.numel(),
                "smddp: allgather output tensors must match the input's dtype (",
                input.scalar_type(), ") and number of elements (", input.numel(), "), got ",
                out.scalar_type(), " with ", out.numel());
  }
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor send = staging.stage(input, /*copyIn=*/true, /*copyBack=*/false);
  staging.keepAlive(input);
  std::vector<Buffer> recvs;
  for (const auto& out : outs) {
    recvs.push_back(toBuffer(staging.stage(out, false, true), "allgather"));
  }
  Request request = c.allGather(toBuffer(send, "allgather"), recvs);
  return finish(OpType::ALLGATHER, one(std::move(request)), outs, std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::SMDDP_SINGLE(all_gather_single,
                                                                 _allgather_base)(
    at::Tensor& output, at::Tensor& input, const ::c10d::AllgatherOptions& opts) {
  checkTensor(input, "all_gather_into_tensor");
  checkTensor(output, "all_gather_into_tensor");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(),
              "smddp: all_gather_into_tensor output dtype ", output.scalar_type(),
              " differs from input dtype ", input.scalar_type());
  TORCH_CHECK(output.numel() == input.numel() * size_,
              "smddp: all_gather_into_tensor output must have world_size * input.numel() = ",
              input.numel() * size_, " elements, got ", output.numel());
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor send = staging.stage(input, /*copyIn=*/true, /*copyBack=*/false);
  staging.keepAlive(input);
  at::Tensor recv = staging.stage(output, /*copyIn=*/false, /*copyBack=*/true);
  Request request = c.allGather(toBuffer(send, "all_gather_into_tensor"),
                                toBuffer(recv, "all_gather_into_tensor"));
  return finish(OpType::_ALLGATHER_BASE, one(std::move(request)), {output}, std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::SMDDP_SINGLE(all_gather_single_coalesced,
                                                                 allgather_into_tensor_coalesced)(
    Tensors& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) {
  const char* what = "all_gather_into_tensor_coalesced";
  TORCH_CHECK(outputs.size() == inputs.size(), "smddp: ", what, " got ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkTensor(inputs[i], what);
    checkTensor(outputs[i], what);
    TORCH_CHECK(outputs[i].scalar_type() == inputs[i].scalar_type() &&
                    outputs[i].numel() == inputs[i].numel() * size_,
                "smddp: ", what, " pair ", i, ": the output must have the input's dtype (",
                inputs[i].scalar_type(), ") and world_size * input.numel() = ",
                inputs[i].numel() * size_, " elements, got ", outputs[i].scalar_type(), " with ",
                outputs[i].numel());
  }
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  SmddpWork::Requests requests;
  try {
    for (size_t i = 0; i < inputs.size(); ++i) {  // one engine all_gather per pair, in order
      at::Tensor send = staging.stage(inputs[i], /*copyIn=*/true, /*copyBack=*/false);
      staging.keepAlive(inputs[i]);
      at::Tensor recv = staging.stage(outputs[i], /*copyIn=*/false, /*copyBack=*/true);
      requests.push_back(c.allGather(toBuffer(send, what), toBuffer(recv, what)));
    }
  } catch (...) {
    keepPosted(compat::kAllGatherTensorCoalescedOp, std::move(requests), outputs,
               std::move(staging));
    throw;
  }
  return finish(compat::kAllGatherTensorCoalescedOp, std::move(requests), outputs,
                std::move(staging), opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::allgather_coalesced(
    std::vector<Tensors>& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) {
  // outputs[r][j] receives inputs[j] of rank r: one engine all_gather per input, in order.
  const char* what = "all_gather_coalesced";
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_, "smddp: ", what,
              " expects world_size (", size_, ") output lists, got ", outputs.size());
  for (size_t j = 0; j < inputs.size(); ++j) checkTensor(inputs[j], what);
  for (int r = 0; r < size_; ++r) {
    TORCH_CHECK(outputs[r].size() == inputs.size(), "smddp: ", what, " output list ", r, " has ",
                outputs[r].size(), " tensors for ", inputs.size(), " inputs");
    for (size_t j = 0; j < inputs.size(); ++j) {
      const at::Tensor& out = outputs[r][j];
      checkTensor(out, what);
      TORCH_CHECK(out.scalar_type() == inputs[j].scalar_type() &&
                      out.numel() == inputs[j].numel(),
                  "smddp: ", what, " output [", r, "][", j, "] must match input ", j, " (",
                  inputs[j].scalar_type(), ", ", inputs[j].numel(), " elements), got ",
                  out.scalar_type(), " with ", out.numel());
    }
  }
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  SmddpWork::Requests requests;
  Tensors flat;
  try {
    for (size_t j = 0; j < inputs.size(); ++j) {
      at::Tensor send = staging.stage(inputs[j], /*copyIn=*/true, /*copyBack=*/false);
      staging.keepAlive(inputs[j]);
      std::vector<Buffer> recvs;
      for (int r = 0; r < size_; ++r) {
        recvs.push_back(toBuffer(staging.stage(outputs[r][j], false, true), what));
        flat.push_back(outputs[r][j]);
      }
      requests.push_back(c.allGather(toBuffer(send, what), recvs));
    }
  } catch (...) {
    keepPosted(OpType::ALLGATHER_COALESCED, std::move(requests), flat, std::move(staging));
    throw;
  }
  return finish(OpType::ALLGATHER_COALESCED, std::move(requests), std::move(flat),
                std::move(staging), opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::barrier(const ::c10d::BarrierOptions& opts) {
  // device_ids name CUDA devices to synchronize; CPU-only, so there is nothing to add to them.
  Request request = enter().comm().barrier();
  return finish(OpType::BARRIER, one(std::move(request)), {}, Staging(), opts.timeout);
}

}  // namespace smddp::torch_shim
