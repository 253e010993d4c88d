// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's gather and scatter: the root's list of world_size tensors goes to the
// engine's list forms as it is (one buffer per rank, staged only where a tensor is not
// contiguous), so each is one engine collective that copies nothing through a temporary.
// Validation on the calling thread raises RuntimeError with nothing sent.
#include <c10/util/Exception.h>

#include <utility>
#include <vector>

#include "process_group.h"
#include "tensor_map.h"

namespace smddp::torch_shim {

using ::c10d::OpType;

namespace {

void checkRoot(int64_t root, int64_t rootTensor, int size, const char* what) {
  TORCH_CHECK(root >= 0 && root < size, "smddp: ", what, " root rank ", root,
              " is out of range for a group of size ", size);
  TORCH_CHECK(rootTensor == 0, "smddp: ", what, " rootTensor must be 0, got ", rootTensor);
}

// The root's list: world_size tensors of `like`'s dtype and number of elements.
void checkList(const std::vector<at::Tensor>& list, const at::Tensor& like, int size,
               const char* what, const char* role) {
  TORCH_CHECK(static_cast<int>(list.size()) == size, "smddp: ", what, " expects world_size (", size,
              ") ", role, " tensors on the root, got ", list.size());
  for (const auto& t : list) {
    checkTensor(t, what);
    TORCH_CHECK(t.scalar_type() == like.scalar_type() && t.numel() == like.numel(), "smddp: ", what,
                " ", role, " tensors must match dtype ", like.scalar_type(), " and ", like.numel(),
                " elements, got ", t.scalar_type(), " with ", t.numel());
  }
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::gather(std::vector<Tensors>& outputs,
                                                           Tensors& inputs,
                                                           const ::c10d::GatherOptions& opts) {
  const char* what = "gather";
  checkSingle(inputs, what);
  checkRoot(opts.rootRank, 0, size_, what);
  const at::Tensor& input = inputs[0];
  const bool isRoot = opts.rootRank == rank_;
  if (isRoot) {
    TORCH_CHECK(outputs.size() == 1, "smddp: gather expects one output list on the root, got ",
                outputs.size());
    checkList(outputs[0], input, size_, what, "output");
  } else {
    TORCH_CHECK(outputs.empty(), "smddp: gather takes no output list on a non-root rank");
  }
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor send = staging.stage(input, /*copyIn=*/true, /*copyBack=*/false);
  staging.keepAlive(input);
  Tensors outs;
  std::vector<Buffer> recvs;
  if (isRoot) {
    outs = outputs[0];
    for (const auto& out : outs) recvs.push_back(toBuffer(staging.stage(out, false, true), what));
  }
  SmddpWork::Requests requests;
  requests.push_back(c.gather(toBuffer(send, what), recvs, static_cast<int>(opts.rootRank)));
  return finish(OpType::GATHER, std::move(requests), std::move(outs), std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::scatter(Tensors& outputs,
                                                            std::vector<Tensors>& inputs,
                                                            const ::c10d::ScatterOptions& opts) {
  const char* what = "scatter";
  checkSingle(outputs, what);
  checkRoot(opts.rootRank, 0, size_, what);
  const at::Tensor& output = outputs[0];
  const bool isRoot = opts.rootRank == rank_;
  std::vector<Buffer> sends;
  Staging staging;
  if (isRoot) {
    TORCH_CHECK(inputs.size() == 1, "smddp: scatter expects one input list on the root, got ",
                inputs.size());
    checkList(inputs[0], output, size_, what, "input");
    for (const auto& t : inputs[0]) {
      sends.push_back(toBuffer(staging.stage(t, /*copyIn=*/true, /*copyBack=*/false), what));
      staging.keepAlive(t);
    }
  } else {
    TORCH_CHECK(inputs.empty(), "smddp: scatter takes no input list on a non-root rank");
  }
  const CommUse use = enter();
  Communicator& c = use.comm();
  at::Tensor recv = staging.stage(output, /*copyIn=*/false, /*copyBack=*/true);
  SmddpWork::Requests requests;
  requests.push_back(c.scatter(sends, toBuffer(recv, what), static_cast<int>(opts.rootRank)));
  return finish(OpType::SCATTER, std::move(requests), outputs, std::move(staging), opts.timeout);
}

}  // namespace smddp::torch_shim
