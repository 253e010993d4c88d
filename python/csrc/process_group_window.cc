// SPDX-License-Identifier: Apache-2.0
// One-sided windows for torch (process_group.h): c10d::Window over smddp::Window. The window's
// tensor is registered collectively (new_window(tensor) or tensor_register); offsets are in its
// elements; put and signal are done when they return (the engine copies, or sends a copy, at
// once; one that could not be delivered fails the window's next call);
// wait_signal blocks (its per-call timeout, else the group's). A window belongs to the
// communicator it was registered on: after a reconfigure or a shutdown of the group its calls
// fail, saying so.
#include "process_group.h"

#include <cstdint>

#include "smddp/error.h"

#if SMDDP_TORCH_WINDOW

#include <torch/csrc/distributed/c10d/Window.hpp>

namespace smddp::torch_shim {
namespace {

class SmddpWindow final : public ::c10d::Window {
 public:
  explicit SmddpWindow(c10::intrusive_ptr<ProcessGroupSmddp> group) : group_(std::move(group)) {}

  void tensor_register(const at::Tensor& tensor, bool owning) override {
    TORCH_CHECK(!window_, errorHead(group_->getRank()), ": window ", id(),
                ": a tensor is already registered (tensor_deregister first)");
    TORCH_CHECK(tensor.device().is_cpu(), "smddp: windows hold CPU tensors, got one on ",
                tensor.device());
    TORCH_CHECK(tensor.is_contiguous(), "smddp: a window's tensor must be contiguous");
    const CommUse use = group_->enterComm();
    window_ = use.comm().createWindow(tensor.data_ptr(), tensor.nbytes());
    generation_ = group_->generation();
    element_ = tensor.element_size();
    dtype_ = tensor.scalar_type();
    if (owning) tensor_ = tensor;
  }

  void tensor_deregister() override {
    checked();
    const CommUse use = group_->enterComm();
    use.comm().barrierBlocking();  // nobody puts into a window that goes
    window_.reset();
    tensor_.reset();
  }

  c10::intrusive_ptr<::c10d::Work> put(const at::Tensor& tensor, int64_t dstRank,
                                       int64_t targetOffsetNelems, bool /*asyncOp*/,
                                       const ::c10d::PutOptions& /*opts*/) override {
    checked();
    TORCH_CHECK(tensor.device().is_cpu() && tensor.is_contiguous(),
                "smddp: window ", window_->id(), ": put takes a contiguous CPU tensor");
    TORCH_CHECK(
        targetOffsetNelems >= 0 && static_cast<uint64_t>(targetOffsetNelems) <= SIZE_MAX / element_,
        errorHead(group_->getRank()), ": window ", window_->id(), ": offset ", targetOffsetNelems,
        " elements is out of range");
    const int dst = rankOf(dstRank, "put");
    const CommUse use = group_->enterComm();
    window_->put(tensor.data_ptr(), tensor.nbytes(), dst,
                 static_cast<size_t>(targetOffsetNelems) * element_)
        .wait();
    return group_->doneWork(::c10d::OpType::SEND);
  }

  at::Tensor map_remote_tensor(int64_t rank) override {
    checked();
    void* p = window_->mapped(rankOf(rank, "map_remote_tensor"));
    TORCH_CHECK(p != nullptr, errorHead(group_->getRank()), ": window ", window_->id(), ": rank ",
                rank,
                "'s window is not mapped here (another host, or not in "
                "smddp's memory: allocate it with allocate_tensor)");
    const int64_t n = static_cast<int64_t>(window_->bytes(static_cast<int>(rank)) / element_);
    return at::from_blob(p, {n}, at::TensorOptions().dtype(dtype_).device(at::kCPU));
  }

  c10::intrusive_ptr<::c10d::Work> signal(int64_t peerRank, bool /*asyncOp*/,
                                          const ::c10d::SignalOptions& /*opts*/) override {
    checked();
    const CommUse use = group_->enterComm();
    window_->signal(rankOf(peerRank, "signal")).wait();
    return group_->doneWork(::c10d::OpType::SEND);
  }

  c10::intrusive_ptr<::c10d::Work> wait_signal(int64_t peerRank, bool /*asyncOp*/,
                                               const ::c10d::WaitSignalOptions& opts) override {
    checked();
    const auto timeout =
        opts.timeout == ::c10d::kUnsetTimeout ? group_->timeout() : opts.timeout;
    const CommUse use = group_->enterComm();
    window_->waitSignal(rankOf(peerRank, "wait_signal"), timeout);
    return group_->doneWork(::c10d::OpType::RECV);
  }

  ::c10d::WindowAttr get_attr(int64_t /*peerRank*/) override {
    return ::c10d::WindowAttr{::c10d::WindowAccessType::UNIFIED};
  }

 private:
  int id() const { return window_ ? window_->id() : -1; }
  int rankOf(int64_t rank, const char* what) const {
    TORCH_CHECK(rank >= 0 && rank < group_->getSize(), errorHead(group_->getRank()), ": window ",
                id(), ": ", what, ": rank ", rank, " is not in [0, ", group_->getSize(), ")");
    return static_cast<int>(rank);
  }
  void checked() const {
    TORCH_CHECK(window_ != nullptr, errorHead(group_->getRank()),
                ": this window has no tensor registered (new_window(tensor) or tensor_register)");
    TORCH_CHECK(generation_ == group_->generation(), errorHead(group_->getRank()), ": window ",
                window_->id(),
                " belongs to a communicator the group replaced "
                "(reconfigure): register a new window");
  }

  c10::intrusive_ptr<ProcessGroupSmddp> group_;
  std::shared_ptr<smddp::Window> window_;
  std::optional<at::Tensor> tensor_;  // owning registrations keep it alive
  int64_t generation_ = 0;
  size_t element_ = 1;
  at::ScalarType dtype_ = at::kByte;
};

}  // namespace

c10::intrusive_ptr<::c10d::Window> ProcessGroupSmddp::new_window(
    const std::optional<at::Tensor>& tensor) {
  auto window = c10::make_intrusive<SmddpWindow>(
      c10::intrusive_ptr<ProcessGroupSmddp>::unsafe_reclaim_from_nonowning(this));
  if (tensor.has_value()) window->tensor_register(*tensor, true);
  return window;
}

}  // namespace smddp::torch_shim

#endif  // SMDDP_TORCH_WINDOW

namespace smddp::torch_shim {

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::doneWork(::c10d::OpType opType) const {
  return SmddpWork::create(rank_, opType, {}, {}, Staging(), shared_, timeout(), timeout());
}

}  // namespace smddp::torch_shim
