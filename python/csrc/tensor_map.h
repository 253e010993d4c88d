// SPDX-License-Identifier: Apache-2.0
// Maps torch values onto the engine's: dtypes, reduce ops, tensors as Buffers, and the staging of
// non-contiguous tensors through contiguous temporaries.
// Invariant: every rejection is a RuntimeError (c10::Error) whose text names "smddp", the
// collective and the offending argument; nothing here touches the network.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "fake_mirror.h"
#include "smddp/request.h"
#include "smddp/types.h"
#include "torch_compat.h"

namespace smddp::torch_shim {

// Engine dtype of a tensor; `what` names the collective in the error.
DataType toDataType(const at::Tensor& tensor, const char* what);
// Engine reduce op for a c10d ReduceOp. PREMUL_SUM maps to SUM: the caller multiplies the input
// by its factor first (premultiplied / premultiply).
ReduceOp toReduceOp(const ::c10d::ReduceOp& op, const char* what);
// toReduceOp, after checking that the engine defines the op for the tensor's dtype (a torch
// error naming the rank, the collective, the op, the dtype and why, before anything is touched).
ReduceOp checkedReduceOp(const at::Tensor& tensor, const ::c10d::ReduceOp& op, const char* what,
                         int rank);

// For ReduceOp.PREMUL_SUM: input x the op's factor, a new contiguous tensor of input's dtype
// (not bool; an integer tensor needs an integral factor); input itself for every other op.
at::Tensor premultiplied(const at::Tensor& input, const ::c10d::ReduceOp& op, const char* what,
                         int rank);
// The same in place, for a tensor the collective overwrites anyway (all_reduce).
void premultiply(const at::Tensor& tensor, const ::c10d::ReduceOp& op, const char* what, int rank);

// Checks that the tensor lives in CPU or CUDA memory, is dense and has a supported dtype.
void checkTensor(const at::Tensor& tensor, const char* what);
// Checks that `tensors` holds exactly one tensor (one device per process, as NCCL).
void checkSingle(const std::vector<at::Tensor>& tensors, const char* what);

// A tensor as the engine sees it for a collective. The tensor must be contiguous and stay alive
// until the request completes. A CUDA tensor is device memory ordered by its device's current
// stream (refused while that stream captures a CUDA graph); in the fake-device test mode a CPU
// tensor is mirrored into fake device memory (fake_mirror.h; finish() hands the mirrors to the
// collective's Staging).
Buffer toBuffer(const at::Tensor& tensor, const char* what);

// Tensors the engine works on, and what to copy back into the caller's tensors afterwards.
class Staging {
 public:
  // Returns `tensor` itself when contiguous, else a contiguous copy (`copyIn`) or an empty
  // contiguous temporary that is copied back into `tensor` when the collective completes.
  at::Tensor stage(const at::Tensor& tensor, bool copyIn, bool copyBack);
  // Registers a copy of `from` into `to` at completion (e.g. slices of a coalesced buffer).
  void addCopyBack(at::Tensor to, at::Tensor from);
  // Runs the copies (no-grad): the fake-device mirrors' downloads, then the registered copies.
  // Called once, on the completion thread.
  void copyBack();
  // CUDA tensors: enqueues the registered copies on `device`'s current stream after it waited
  // (on the device) for `requests`, and forgets them; called when the collective is posted.
  void copyBackOnStream(const std::vector<Request>& requests, int device);
  // The fake-device mirrors of the collective (fake_mirror.h), downloaded by copyBack().
  void setMirrors(Mirrors mirrors) { mirrors_ = std::move(mirrors); }
  // The collective was posted: the mirrors made since this Staging was made are the Work's.
  void settleMirrors() { scope_.settle(); }
  // Tensors that must outlive the collective but are not outputs (inputs, temporaries).
  void keepAlive(const at::Tensor& tensor) { alive_.push_back(tensor); }
  const std::vector<at::Tensor>& kept() const { return alive_; }
  bool hasCopyBack() const { return !copies_.empty() || !mirrors_.empty(); }
  void release();

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> copies_;  // (destination, source)
  std::vector<at::Tensor> alive_;
  Mirrors mirrors_;
  MirrorScope scope_;  // declared last: made after nothing, destroyed first
};

}  // namespace smddp::torch_shim
