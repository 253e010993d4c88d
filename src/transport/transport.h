// SPDX-License-Identifier: Apache-2.0
// Transport: tagged point-to-point messages between the ranks of one communicator, shaped like
// NCCL's net plugin. It knows bytes, tags and completions; it knows nothing of collectives.
//
// Ownership: the caller owns every Op and keeps it alive (at a stable address) from post until it
// is complete or cancel() returned. Providers keep their per-message context (libfabric's
// fi_context2) inside Op::provider, so posting allocates nothing.
// Threading: one thread at a time drives a transport (the communicator's executor lock).
// Creation: transport/factory.h (createTransport), never an implementation's creator.
//
// The contract every transport keeps (tests/mp/transport_contract*.cc run it over each one:
// loopback, and libfabric's shm, tcp;ofi_rxm and net):
//  - Posting: a send matches the receive from its rank with its exact tag; messages of one sender
//    and tag arrive in post order; a receive may be posted before or after its message arrived;
//    zero-byte messages are messages. A done receive says the bytes received and their source.
//    A post never fails for want of resources: the transport queues it and retries it from
//    progress(). Receives never wait behind blocked sends (a rank whose sends are stuck must
//    still post the receives that drain its peers' sends, or two ranks block each other).
//  - Progress: ops finish only inside post(), progress() or cancel(); progress() returns how many
//    finished (done or failed), each op counted once, also those that finished in post/cancel.
//  - Cancel: on return from cancel() the transport no longer touches the op; a withdrawn receive
//    has written nothing and has taken no message: the message goes to the next receive.
//  - Truncation: a message larger than its receive's buffer fails that receive (kError, the text
//    says "truncated" and the buffer's size) and nothing else: no crash, the transport goes on,
//    the sender's next message arrives (libfabric 1.17's net provider loses it: provider_profile.cc
//    has the measurement). The sender may finish either way.
//  - Any-peer receive (kAnyPeer): matched by a message of any rank of the group with the tag;
//    `source` names that rank. A message from a sender outside the group never completes a
//    receive: where such senders can reach the transport (Capabilities::dropsForeignSenders) it
//    is dropped, counted (foreignMessagesDropped) and the receive stays posted.
//  - A gone peer (its process exited or was killed, its loopback rank killed) is reported by
//    deadPeer() (the first) and peerGone(); a receive from it never completes with data.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "smddp/error.h"

namespace smddp {
class Store;
struct Config;
}

namespace smddp::transport {

enum class OpKind : uint8_t { kSend, kRecv };

// A receive's peer that matches a message from any rank (MPI_ANY_SOURCE).
constexpr int kAnyPeer = -1;
enum class OpState : uint8_t { kIdle, kPending, kDone, kError };

struct Op {
  // Provider scratch; must be first so that a provider can map its context back to the Op.
  alignas(16) unsigned char provider[64];
  OpKind kind = OpKind::kSend;
  OpState state = OpState::kIdle;
  int peer = -1;  // a receive may name kAnyPeer
  // A receive matches a message with exactly this tag from `peer` (any rank for kAnyPeer).
  uint64_t tag = 0;
  int source = -1;  // a done receive: the rank that sent the message
  void* buffer = nullptr;
  size_t bytes = 0;
  size_t received = 0;  // bytes actually received (recv ops)
  std::string error;    // provider's error text when state == kError
  // A registration of buffer from registerDevice() (CUDA memory the provider reads and writes
  // itself); null for host memory.
  void* desc = nullptr;

  bool done() const { return state == OpState::kDone; }
  bool failed() const { return state == OpState::kError; }
  bool finished() const { return state == OpState::kDone || state == OpState::kError; }
};

// Facts about the peers, learnt at bootstrap, for error messages and topology decisions.
struct PeerInfo {
  std::string host;
  int pid = 0;
  // The kernel and pid namespace `pid` means something in: "<boot id>/<st_dev>:<st_ino>" of
  // /proc/self/ns/pid ("" unknown). A pid is only watched within our own (peer_liveness.h).
  std::string pidNamespace;
  std::string ip;  // its endpoint's IP address, where the provider's addresses are IP (tcp, net)
  std::string cpus;  // the CPUs it may use, common::describeUsableCpus() ("" unknown)
};

// How many of `peers` run on `host`.
inline int ranksOnHost(const std::vector<PeerInfo>& peers, const std::string& host) {
  int n = 0;
  for (const auto& p : peers) n += p.host == host ? 1 : 0;
  return n;
}
// Every peer on one host (true for none).
inline bool allOnOneHost(const std::vector<PeerInfo>& peers) {
  return peers.empty() || ranksOnHost(peers, peers[0].host) == static_cast<int>(peers.size());
}

// How long a waiter keeps polling after it found a peer it waits on gone: a peer that sent its
// last message and exited (a clean exit right after a collective or a send) may still have it in
// flight, and the transport can report the exit before the message is taken.
constexpr std::chrono::milliseconds kGoneDrain{100};

// What a transport can do beyond the contract every one keeps (below); one struct, so that a
// new capability is a field here, not another virtual.
struct Capabilities {
  // Every peer is reached through this host's memory (libfabric's shm provider): the
  // shared-memory arena may then carry the collectives instead. False for network providers,
  // chosen for a reason even on one host, and for the loopback transport, whose tests exercise
  // the message algorithms (the arena's tests build their arenas themselves).
  bool hostMemoryOnly = false;
  // The provider reads and writes CUDA memory itself (libfabric FI_HMEM, GPUDirect):
  // registerDevice() then gives the desc of ops on CUDA buffers.
  bool takesDeviceMemory = false;
  // Senders outside the group can reach this transport's endpoint (another job on the host or
  // the network); it drops their messages and counts them (foreignMessagesDropped). False where
  // no one outside the group can send (the in-process loopback fabric).
  bool dropsForeignSenders = false;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // "shm", "tcp;ofi_rxm", "efa", "loopback".
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::vector<PeerInfo>& peers() const = 0;

  // Posts a message. op.kind/peer/tag/buffer/bytes are set by the caller. The op becomes kPending,
  // or kDone/kError at once. A provider that is temporarily out of resources queues the post and
  // retries it from progress(): the caller never sees EAGAIN.
  virtual void post(Op& op) = 0;
  // Drives completions; returns how many ops finished (completed or failed) in this call.
  virtual int progress() = 0;
  // Withdraws a pending op. On return the transport no longer references op (it may have
  // completed instead). Returns false if the op could not be withdrawn in time; the transport is
  // then unusable and must be destroyed before the op's memory is reused.
  virtual bool cancel(Op& op) = 0;
  // Withdraws several ops with one shared deadline (a provider that cannot cancel a send makes
  // each single cancel() wait its full bound). Returns false if any op could not be withdrawn.
  virtual bool cancel(const std::vector<Op*>& ops) {
    bool ok = true;
    for (Op* op : ops) ok = cancel(*op) && ok;
    return ok;
  }
  // The first peer we know is gone (connection reset, process exit), or -1. Cleared by nothing.
  virtual int deadPeer() const { return -1; }
  // Whether `peer` is known to be gone (every peer found gone, not only the first). A waiter
  // keeps polling for kGoneDrain after it first sees this before it fails (below).
  virtual bool peerGone(int peer) const { return peer >= 0 && peer == deadPeer(); }
  // Messages from senders outside the group that this transport dropped (each had matched a
  // receive, which was posted again); a counter for memoryStats(). Any thread may ask.
  virtual uint64_t foreignMessagesDropped() const { return 0; }
  // What this transport can do; fixed for its lifetime.
  virtual Capabilities capabilities() const = 0;
  // Registers [base, base + bytes) of CUDA device `ordinal` (cached: the same range is registered
  // once) and returns the desc for Op::desc. Error(kUnsupported) unless
  // capabilities().takesDeviceMemory.
  virtual void* registerDevice(void* /*base*/, size_t /*bytes*/, int /*ordinal*/) {
    throw Error(ErrorCode::kUnsupported,
                "smddp: the " + name() + " transport does not take CUDA memory directly");
  }
};

}  // namespace smddp::transport
