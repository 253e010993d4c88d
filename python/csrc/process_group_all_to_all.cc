// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's all_to_all: all_to_all_single (alltoall_base: one input and one output
// tensor, split along dim 0 evenly or by split sizes) and all_to_all (lists of world_size
// tensors). Even splits are one engine all_to_all; split sizes and lists are one all_to_allv
// whose pieces point straight into the (contiguous) tensors: no concatenation, no copy.
// Validation on the calling thread raises RuntimeError with nothing sent.
#include <c10/util/Exception.h>

#include <utility>
#include <vector>

#include "process_group.h"
#include "tensor_map.h"

namespace smddp::torch_shim {

using ::c10d::OpType;

namespace {

// Element counts and offsets of the pieces of `t` cut along dim 0 by `splits` (rows), or into
// `size` equal parts when `splits` is empty.
void piecesOf(const at::Tensor& t, const std::vector<int64_t>& splits, int size, const char* role,
              std::vector<size_t>& counts, std::vector<size_t>& offsets) {
  const char* what = "all_to_all_single";
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t rowElems = rows == 0 ? 0 : t.numel() / rows;
  counts.assign(static_cast<size_t>(size), 0);
  offsets.assign(static_cast<size_t>(size), 0);
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "smddp: ", what, ": the ", role, "'s first dimension (", rows,
                ") must divide evenly by world_size (", size, ") when no split sizes are given");
  } else {
    TORCH_CHECK(static_cast<int>(splits.size()) == size, "smddp: ", what, ": ", role,
                " split sizes must have world_size (", size, ") entries, got ", splits.size());
  }
  int64_t row = 0;
  for (int r = 0; r < size; ++r) {
    const int64_t n = splits.empty() ? rows / size : splits[static_cast<size_t>(r)];
    TORCH_CHECK(n >= 0, "smddp: ", what, ": ", role, " split size ", r, " is negative (", n, ")");
    offsets[static_cast<size_t>(r)] = static_cast<size_t>(row * rowElems);
    counts[static_cast<size_t>(r)] = static_cast<size_t>(n * rowElems);
    row += n;
  }
  TORCH_CHECK(row == rows, "smddp: ", what, ": the ", role, " split sizes add up to ", row,
              " rows but the tensor has ", rows);
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::SMDDP_SINGLE(all_to_all_single, alltoall_base)(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplitSizes,
    std::vector<int64_t>& inputSplitSizes, const ::c10d::AllToAllOptions& opts) {
  const char* what = "all_to_all_single";
  checkTensor(input, what);
  checkTensor(output, what);
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "smddp: ", what,
              ": input and output dtypes differ (", input.scalar_type(), " vs ",
              output.scalar_type(), ")");
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor send = staging.stage(input, /*copyIn=*/true, /*copyBack=*/false);
  staging.keepAlive(input);
  at::Tensor recv = staging.stage(output, /*copyIn=*/false, /*copyBack=*/true);
  SmddpWork::Requests requests;
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(input.numel() == output.numel(), "smddp: ", what, ": input (", input.numel(),
                " elements) and output (", output.numel(),
                ") must have one size when no split sizes are given");
    std::vector<size_t> counts, offsets;
    piecesOf(input, {}, size_, "input", counts, offsets);  // checks the even split
    requests.push_back(c.allToAll(toBuffer(send, what), toBuffer(recv, what)));
  } else {
    std::vector<size_t> sendCounts, sendOffsets, recvCounts, recvOffsets;
    piecesOf(input, inputSplitSizes, size_, "input", sendCounts, sendOffsets);
    piecesOf(output, outputSplitSizes, size_, "output", recvCounts, recvOffsets);
    requests.push_back(c.allToAllV(toBuffer(send, what), sendCounts, sendOffsets,
                                   toBuffer(recv, what), recvCounts, recvOffsets));
  }
  return finish(OpType::ALLTOALL_BASE, std::move(requests), {output}, std::move(staging),
                opts.timeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::alltoall(Tensors& outputs, Tensors& inputs,
                                                             const ::c10d::AllToAllOptions& opts) {
  const char* what = "all_to_all";
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "smddp: ", what, " expects world_size (", size_, ") input and output tensors, got ",
              inputs.size(), " and ", outputs.size());
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  std::vector<Buffer> sends, recvs;
  for (int r = 0; r < size_; ++r) {
    const at::Tensor& in = inputs[static_cast<size_t>(r)];
    const at::Tensor& out = outputs[static_cast<size_t>(r)];
    checkTensor(in, what);
    checkTensor(out, what);
    TORCH_CHECK(
        in.scalar_type() == inputs[0].scalar_type() && out.scalar_type() == inputs[0].scalar_type(),
        "smddp: ", what, ": every tensor must have dtype ", inputs[0].scalar_type());
    at::Tensor send = staging.stage(in, /*copyIn=*/true, /*copyBack=*/false);
    staging.keepAlive(in);
    at::Tensor recv = staging.stage(out, /*copyIn=*/false, /*copyBack=*/true);
    sends.push_back(toBuffer(send, what));
    recvs.push_back(toBuffer(recv, what));
  }
  SmddpWork::Requests requests;
  requests.push_back(c.allToAllV(sends, recvs));
  return finish(OpType::ALLTOALL, std::move(requests), outputs, std::move(staging), opts.timeout);
}

}  // namespace smddp::torch_shim
