// SPDX-License-Identifier: Apache-2.0
// Window: one-sided communication into memory every rank of a communicator registered together
// (Communicator::createWindow). A rank puts bytes into a peer's window at an offset, then
// signals the peer; once the peer's waitSignal for it returns, every put the rank issued to it
// before the signal is in the peer's window ("puts before a signal are visible after the
// matching wait"). Signals from one rank to another are counted: each waitSignal takes one.
//
// Within a host, where the target's window lies in shareable memory (Communicator::
// allocateShared, torch's allocate_tensor), a put is a copy straight into the mapped window and
// a signal a counter in shared memory; mapped() gives the peer's memory itself. Otherwise (other
// hosts, ordinary memory) a put travels as a message over the communicator's point-to-point
// path and lands in the window when the target waits for the signal that follows it.
// Tags 0xFFFE0000 - 0xFFFEFFFF are the windows' (Communicator::send/recv refuse them).
// Thread-safe for puts and signals to different peers; one thread per (peer, direction).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "smddp/request.h"

namespace smddp {

namespace core {
class WindowImpl;
}

class Window {
 public:
  explicit Window(std::unique_ptr<core::WindowImpl> impl);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  int id() const;                 // the communicator's window number, 0, 1, ... in creation order
  size_t bytes(int rank) const;   // that rank's window size
  void* data() const;             // this rank's window
  // The peer's window mapped into this process (same host, shareable memory), else nullptr.
  void* mapped(int rank) const;

  // Writes src[0, bytes) into rank dst's window at byte `offset`. The Request is done at once:
  // src may be reused (a mapped peer: the bytes are already there; else a copy is sent). Error(kInvalidArgument) naming
  // this rank, the window, dst and the range when it does not fit dst's window; a put to this
  // rank's own window is a copy.
  Request put(const void* src, size_t bytes, int dst, size_t offset);
  // Marks the end of the puts this rank issued to `peer` so far (see above). Done at once; a put
  // or signal that could not be delivered (the peer gone, the timeout) fails the window's next
  // call on this rank, which names it, and leaves the window unusable.
  Request signal(int peer);
  // Waits, up to `timeout`, for the next signal from `peer` and lands the puts before it.
  // Error(kTimeout) naming both ranks and the window when none came; kPeerFailure when the peer
  // is gone.
  void waitSignal(int peer, std::chrono::milliseconds timeout);

 private:
  std::unique_ptr<core::WindowImpl> impl_;
};

}  // namespace smddp
