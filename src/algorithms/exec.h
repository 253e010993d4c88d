// SPDX-License-Identifier: Apache-2.0
// Exec: what an algorithm sees while it runs one collective on one rank. An algorithm is a short
// script of isend / irecv / wait / reduce steps against this interface; Exec turns them into
// transport ops with the collective's tags, waits with a bounded, core-friendly back-off (spin
// briefly, then yield), and converts every failure into an Error naming rank, peer and collective.
//
// Invariants: every wait is bounded by the collective's deadline; an algorithm never sees a failed
// op (it gets an exception); when run() returns or throws, no op of this collective is pending.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/exec_monitor.h"
#include "algorithms/patterns/hosts.h"
#include "common/wait_policy.h"
#include "smddp/error.h"
#include "transport/transport.h"

namespace smddp::algo {

struct HostGroups;  // below

// Reusable per-communicator memory for algorithms: op records and scratch buffers. Grows on demand
// and is kept, so steady-state collectives allocate nothing.
class ExecResources {
 public:
  transport::Op& op(size_t index);
  void* scratch(int index, size_t bytes);

 private:
  std::deque<transport::Op> ops_;
  std::vector<std::vector<unsigned char>> scratch_;
};

// What a family of algorithms shares beyond messages, attached to ExecSettings by the
// communicator (the arena's memory: arena/context.h). Exec carries it and knows nothing of it;
// `family` tells the families' attachments apart.
struct ExecAttachment {
  const void* family;
};

// A communicator's knobs for its collectives' Execs: built once, referenced by each Exec (which
// gets its own deadline).
struct ExecSettings {
  std::chrono::milliseconds timeout{0};  // what each Exec's deadline is now + (timeout messages)
  size_t segmentBytes = 1048576;
  // How waiters spin, yield and sleep (common/wait_policy.h); null: spin 20 us, then yield.
  common::WaitPolicy* waiting = nullptr;
  const std::atomic<bool>* abortFlag = nullptr;
  // Why the communicator was aborted: written once, before *abortFlag is set, read after it.
  const std::string* abortReason = nullptr;
  const ExecMonitor* monitor = nullptr;     // peers' progress and failures; may be null
  const ExecAttachment* attachment = nullptr;  // shared memory of this host's ranks, or null
  const HostGroups* hosts = nullptr;  // a communicator over several hosts with host arenas
  // SMDDP_DETERMINISTIC: algorithms that can reduce in rank order do (arena_split).
  bool rankOrder = false;
};

// A communicator that spans hosts, each with the same number of ranks (>= 2) and an arena of its
// own (core/communicator.cc builds them; patterns/hosts.h says who is where). The
// hierarchical algorithms (hierarchical.h) run sub-collectives on these groups through
// Exec::Exec(parent, group, ...). Rank numbers are the communicator's.
struct HostGroups {
  std::vector<int> local;      // the ranks on this rank's host, ascending (this rank included)
  std::vector<int> cross;      // the ranks with this rank's local index, one per host, host order
  patterns::HostLayout layout;  // who is on which host (every host's ranks, each rank's host)
  // The leader forms' packing (fixed per communicator, so not rebuilt per call): every rank host
  // by host (HostLayout::hostMajor), and where each host's first block is in that order
  // (HostLayout::hostFirsts: hosts() + 1 entries).
  std::vector<int> hostMajor;
  std::vector<size_t> hostFirsts;
  ExecSettings localSettings;  // the communicator's, with this host's shared memory
  ExecSettings crossSettings;  // the communicator's, without shared memory

  // Sets every member above but the settings, for `rank` on `hosts`.
  void place(patterns::HostLayout hosts, int rank) {
    local = hosts.local(rank);
    cross = hosts.cross(rank);
    hostMajor = hosts.hostMajor();
    hostFirsts = hosts.hostFirsts();
    layout = std::move(hosts);
  }
};

class Exec {
 public:
  using Handle = size_t;
  using Clock = std::chrono::steady_clock;

  // `settings` must outlive the Exec; `deadline` bounds every wait of this collective.
  Exec(transport::Transport& transport, ExecResources& resources, const CollectiveDesc& desc,
       const ExecSettings& settings, std::chrono::steady_clock::time_point deadline);
  // A view of `parent` for a sub-collective among `members` (ranks of the parent, which must
  // include its rank; the view's rank r is members[r]): same collective, tags, deadline and op
  // records; message indices offset by msgBase, so consecutive views of one collective can use
  // disjoint indices. Errors name the communicator's ranks. Runs after the parent's
  // own ops are finished, and finishes or withdraws its own before it goes.
  Exec(Exec& parent, const std::vector<int>& members, const ExecSettings& settings,
       uint64_t msgBase);
  ~Exec();
  Exec(const Exec&) = delete;
  Exec& operator=(const Exec&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t segmentBytes() const { return settings_.segmentBytes; }
  const CollectiveDesc& desc() const { return desc_; }
  // The host groups of a communicator over several hosts, or null.
  const HostGroups* hosts() const { return settings_.hosts; }
  bool rankOrder() const { return settings_.rankOrder; }

  // msg: the message's index within this collective, unique per (sender, receiver) pair and at
  // most tag::kMaxMsg. The receiver must use the same index. bytes may be 0.
  Handle isend(int peer, uint64_t msg, const void* buffer, size_t bytes);
  Handle irecv(int peer, uint64_t msg, void* buffer, size_t bytes);
  void wait(Handle handle);
  // True once the op finished; throws if it failed.
  bool test(Handle handle);
  // Waits for every op posted so far.
  void waitAll();
  // "smddp: rank 2 (host): all_reduce #7 (...)": the head of every error this collective raises
  // (errorHead() of this rank in the communicator, then the collective).
  std::string head() const { return head(desc_); }
  std::string head(const CollectiveDesc& desc) const;
  // Throws Error(code): "smddp: rank R (host): <this collective>: rank P (host) <what>".
  [[noreturn]] void throwAboutPeer(ErrorCode code, int peer, const std::string& what) const;
  // Convenience: a send and a receive posted together, both awaited.
  void sendRecv(int sendPeer, uint64_t sendSlot, const void* sendBuf, size_t sendBytes,
                int recvPeer, uint64_t recvSlot, void* recvBuf, size_t recvBytes);

  // What the communicator attached for a family of algorithms (ExecSettings), or null.
  const ExecAttachment* attachment() const { return settings_.attachment; }
  // Waits, with the same bounds and back-off as wait(), until the shared-memory `word` >= atLeast;
  // `word` belongs
  // to `peer`, and `what` says what it is waiting for (timeout messages). The word is polled in
  // a tight loop at first; aside(*this), if given, runs once per clock read (~1 us while
  // spinning, every poll once it yields): work the wait must not starve but that has no place in
  // the tight loop.
  void waitWord(const std::atomic<uint64_t>& word, uint64_t atLeast, int peer, const char* what,
                void (*aside)(Exec&) = nullptr) {
    if (word.load(std::memory_order_acquire) >= atLeast) return;
    waitWordSlow(word, atLeast, peer, what, aside);
  }
  // Throws Error(kMismatch): `peer`'s shared-memory data belongs to collective #peerSeq (or to
  // `mine` with a different shape when peerSeq is mine's) while this rank is in `mine`: this
  // collective, or an earlier one whose check was deferred to this one.
  [[noreturn]] void throwMismatch(int peer, uint64_t peerSeq, const CollectiveDesc& mine) const;

  // Per-communicator scratch memory; index selects one of several independent areas.
  void* scratch(size_t bytes, int index = 0) { return resources_.scratch(index, bytes); }

  // Withdraws every pending op (after a failure). Returns false if the transport could not.
  bool cancelAll();

 private:
  Handle post(transport::OpKind kind, int peer, uint64_t msg, void* buffer, size_t bytes);
  void waitWordSlow(const std::atomic<uint64_t>& word, uint64_t atLeast, int peer,
                    const char* what, void (*aside)(Exec&));
  // One idle poll: bounds (deadline, abort, peer failure), then, past `spin` since lastProgress,
  // a pause (WaitPolicy). wordWhat (with wordPeer) names a shared-memory word being waited for,
  // for the timeout message only.
  void idle(Clock::time_point now, Clock::time_point lastProgress, std::chrono::nanoseconds spin,
            int& idlePolls, int wordPeer, const char* wordWhat);
  common::WaitPolicy& waiting() const;
  // A gone peer (transport rank) that an unfinished op of this collective, or the shared-memory
  // word being waited for (wordPeer, -1: none), involves; -1 when none does.
  int goneInvolved(int wordPeer) const;
  void checkFailure(const transport::Op& op) const;
  [[noreturn]] void throwTimeout(const std::string& waitingFor) const;
  std::string where(int peer) const;  // "rank 2 (host)"; -1: this rank and its collective
  std::string where(int peer, const CollectiveDesc& desc) const;
  // The same for a rank of the transport (an op's peer), not of this view.
  std::string whereRank(int rank) const;
  int toTransport(int peer) const { return members_ == nullptr ? peer : (*members_)[peer]; }

  transport::Transport& transport_;
  ExecResources& resources_;
  CollectiveDesc desc_;
  const ExecSettings& settings_;
  const Clock::time_point deadline_;
  int rank_;
  int size_;
  const std::vector<int>* members_ = nullptr;  // a view's ranks (transport ranks); null: all
  uint64_t msgBase_ = 0;
  size_t posted_ = 0;     // ops [0, posted_) of resources_ belong to this collective
  size_t firstLive_ = 0;  // every op below this index is finished
  Clock::time_point goneSince_{};  // when a waiter first found a peer it waits on gone
};

}  // namespace smddp::algo
