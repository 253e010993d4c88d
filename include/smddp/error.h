// SPDX-License-Identifier: Apache-2.0
// Typed errors raised by smddp. Every message answers: which rank, doing which collective (and its
// sequence number), with which peer, on how many bytes, and what went wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace smddp {

enum class ErrorCode {
  kInvalidArgument,  // caught before any data moved: the communicator stays usable
  kUnsupported,      // a (dtype, op) pair or feature this build does not support; same as above
  kTimeout,          // a collective or a wait ran out of time
  kTransport,        // the fabric reported an error
  kPeerFailure,      // a peer is gone (connection reset, process died)
  kMismatch,         // ranks called different collectives at the same sequence number
  kAborted,          // Communicator::abort() was called
  kBroken,           // an earlier unrecoverable error broke the communicator
  kStore,            // the rendezvous store failed or timed out
  kInternal,
};

const char* toString(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }
  // True when nothing was sent or received: the communicator can be used again.
  bool recoverable() const {
    return code_ == ErrorCode::kInvalidArgument || code_ == ErrorCode::kUnsupported;
  }

 private:
  ErrorCode code_;
};

}  // namespace smddp
