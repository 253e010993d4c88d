// SPDX-License-Identifier: Apache-2.0
// The handle every collective returns at once. The collective runs in issue order on the
// communicator's engine; a waiting caller may also drive it (no thread hand-off on the fast path).
// Invariant: no wait blocks forever; a failed collective rethrows its stored error to every waiter.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>

namespace smddp {

namespace core {
class RequestState;
}

class Request {
 public:
  explicit Request(std::shared_ptr<core::RequestState> state);

  // True once the collective finished; throws its Error if it failed.
  bool test();
  // Waits for completion up to the communicator timeout (plus a grace period); throws on failure.
  // For a collective on CUDA buffers, also waits (bounded) until the result is in device memory,
  // failed or not: once it returns or throws, the device no longer touches the call's buffers.
  void wait();
  // For a collective on CUDA buffers: work enqueued on `stream` (a cudaStream_t; nullptr: the
  // default stream) after this call runs after the result is in device memory; the host does not
  // wait. Throws the collective's error if it already failed. For host buffers: wait().
  void waitOnStream(void* stream);
  // For a collective on CUDA buffers: the stream on which the engine reads and writes them (a
  // cudaStream_t), for a caching allocator's record-stream; nullptr for host buffers.
  void* deviceStream() const;
  // Waits at most `timeout` (for CUDA buffers: until the result is in device memory); throws
  // Error(kTimeout) if the collective is still running then (it goes on until its own deadline).
  void wait(std::chrono::milliseconds timeout);
  // True once finished, successfully or not; never throws.
  bool completed() const;
  // The stored error of a failed request, or nullptr.
  std::exception_ptr error() const;
  // Runs fn once the request completes (at once if it already has). fn runs on the thread that
  // completed the request and must not block or throw (an exception it throws is dropped; one
  // thrown when fn runs at once here reaches the caller).
  void onComplete(std::function<void()> fn);
  // The per-communicator sequence number of this collective (send and recv: of this
  // communicator's point-to-point operations).
  uint64_t sequence() const;
  // The call as errors and beacons name it: "all_reduce(float32, 1024, sum)".
  std::string call() const;
  // The algorithm that runs it ("ring", "arena_direct", "nccl", ...); nullptr when it runs
  // locally (one rank, nothing to move) or is a send or recv.
  const char* algorithm() const;
  // Bytes of one rank's block (the whole buffer for all_reduce and broadcast; 0 for all_to_allv).
  size_t bytes() const;
  // The sender of a completed recv (Communicator::kAnySource says which rank sent); -1 for
  // anything else.
  int source() const;

 private:
  std::shared_ptr<core::RequestState> state_;
};

}  // namespace smddp
