// SPDX-License-Identifier: Apache-2.0
// smddp::Window: the public handle over core::WindowImpl (window_impl.h).
#include "smddp/window.h"

#include "core/window_impl.h"

namespace smddp {

Window::Window(std::unique_ptr<core::WindowImpl> impl) : impl_(std::move(impl)) {}
Window::~Window() = default;
int Window::id() const { return impl_->id(); }
size_t Window::bytes(int rank) const { return impl_->bytes(rank); }
void* Window::data() const { return impl_->data(); }
void* Window::mapped(int rank) const { return impl_->mapped(rank); }
Request Window::put(const void* src, size_t bytes, int dst, size_t offset) {
  return impl_->put(src, bytes, dst, offset);
}
Request Window::signal(int peer) { return impl_->signal(peer); }
void Window::waitSignal(int peer, std::chrono::milliseconds timeout) {
  impl_->waitSignal(peer, timeout);
}

}  // namespace smddp
