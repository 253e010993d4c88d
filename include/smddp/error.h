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

// The head of every message smddp raises or logs, the one place it is formed: which rank (of how
// many), on which host. "smddp: rank 2", "smddp: rank 2 (ip-10-0-0-7)", "smddp: rank 2/8 (ip-...)";
// the caller appends ": " and what the rank was doing (a collective's describe(): its name,
// sequence number and arguments) and what went wrong. An empty host is left out.
std::string errorHead(int rank, const std::string& host = "");
std::string errorHead(int rank, int size, const std::string& host = "");

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
