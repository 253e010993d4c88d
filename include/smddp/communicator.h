// SPDX-License-Identifier: Apache-2.0
// Communicator: a group of ranks that issue the same collectives in the same order.
// Every collective validates its arguments on the calling thread (throwing
// Error(kInvalidArgument) with the communicator untouched), then returns a Request at once (the
// *Blocking forms: returns when done); the engine runs collectives in issue order. After an
// unrecoverable error the communicator is broken and says so on every call.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "smddp/error.h"
#include "smddp/request.h"
#include "smddp/store.h"
#include "smddp/straggler.h"
#include "smddp/types.h"
#include "smddp/window.h"

namespace smddp {

// Per-communicator settings. Unset fields take the value of the matching SMDDP_* variable
// (see the README's configuration table), which in turn has a built-in default.
struct Options {
  std::optional<std::chrono::milliseconds> timeout;  // SMDDP_TIMEOUT_MS
  std::optional<std::string> provider;               // SMDDP_PROVIDER: efa | shm | tcp | auto
  std::optional<std::string> algorithms;             // SMDDP_ALGO: "allreduce:ring;broadcast:tree"
  std::optional<size_t> segmentBytes;                // SMDDP_SEGMENT_BYTES
  std::optional<bool> sharedMemory;                  // SMDDP_ARENA: the intra-host arena
  std::optional<bool> deviceIpc;                     // SMDDP_DEVICE_IPC: CUDA IPC in a host
  // Distinguishes communicators that share one store (keys are prefixed with it).
  std::string name = "smddp";
  // The key of a communicator whose members are chosen by the application (a reconfigure or a
  // shrink): every member passes the same key, used once per name, and the store keys are
  // "<name>/<generation>/...". Unset: each rank counts its creations under `name` (all ranks
  // create their communicators in the same order), which needs no agreement beforehand.
  std::optional<std::string> generation;
};

namespace core {
class CommunicatorImpl;
}

class Communicator {
 public:
  // Joins the group: publishes this rank's address in the store and reads every peer's.
  static std::shared_ptr<Communicator> create(std::shared_ptr<Store> store, int rank, int size,
                                              const Options& options = Options());
  explicit Communicator(std::unique_ptr<core::CommunicatorImpl> impl);
  // Waits (bounded) for pending collectives, then releases the fabric resources. Its Requests
  // stay valid (all completed). Destroy it only once every wait() on its requests that started
  // before has returned, on every thread: a wait still inside may touch the engine.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  // The libfabric provider in use ("shm", "tcp;ofi_rxm", "efa"), or "loopback".
  std::string provider() const;
  // How long a waiting rank busy-polls before it yields its CPU, in microseconds: SMDDP_SPIN_US
  // or Options, or (automatic) 0 when this host's ranks outnumber the CPUs they may use.
  int64_t spinUs() const;
  // CUDA calls that ran on the devices through CUDA IPC so far, by collective name
  // ("all_gather": 12, ...); only kinds that did appear.
  std::map<std::string, uint64_t> deviceIpcCalls() const;
  // The data plane of this communicator's CUDA calls: "nccl" (NCCL, loaded at run time: every
  // rank holds a device of its own and a usable NCCL of one version) or "smddp" (smddp's own:
  // staged through pinned host memory, CUDA IPC within a host); SMDDP_GPU_PLANE=nccl|smddp
  // forces one. Decided at the first CUDA call or this query, whichever comes first, from what
  // every rank published at creation (its current device then: set it before creating the
  // communicator); bounded by the timeout. Throws
  // Error(kInvalidArgument) when the ranks' SMDDP_GPU_PLANE differ or force NCCL where a rank
  // has none. dataPlaneReason() says why, in words.
  std::string dataPlane() const;
  std::string dataPlaneReason() const;
  // This communicator is `parent` without `excludedParentRanks` (a shrink), and every remaining
  // rank says so before this communicator's first CUDA call: where both take the NCCL plane and
  // every remaining rank's parent has a healthy NCCL communicator and an NCCL with
  // ncclCommShrink, this one's is shrunk from it (no new rendezvous); otherwise it is formed
  // anew as usual. Error(kInvalidArgument) after this communicator's first CUDA call.
  void shrinkDevicePlaneOf(Communicator& parent, const std::vector<int>& excludedParentRanks);
  // How this communicator's NCCL communicator was made: "ncclCommInitRankConfig",
  // "ncclCommShrink", or "" while there is none.
  std::string ncclFormedBy() const;

  // `bytes` of host memory that the other ranks of this host can read and write in place (a
  // tensor's storage; page-aligned). On one host, all_reduce, broadcast, all_gather and
  // reduce_scatter from 1 MiB skip the shared-memory arena's copies when every rank's buffers
  // lie in such memory (mixing both is right, through the arena). The memory stays valid while
  // the returned pointer (or a copy) lives, even past the communicator, and then goes back to a
  // pool for the next allocation of its size. Throws Error(kInternal) when the machine has none.
  std::shared_ptr<void> allocateShared(size_t bytes);
  // `bytes` of memory of CUDA device `device` for this communicator's CUDA calls: on the NCCL
  // plane from NCCL (ncclMemAlloc, memory NCCL can register, where the loaded NCCL has it),
  // otherwise the device's own allocation. Freed when the returned pointer (and its copies) go,
  // after the device finished with it. Error(kUnsupported) without a usable device,
  // kInvalidArgument for a device that does not exist.
  std::shared_ptr<void> allocateDevice(size_t bytes, int device);
  // Memory held, in bytes, by name: the process's shareable memory (every communicator's):
  // "shared_allocated" (allocateShared, in use), "shared_cached" (freed, kept), "shared_blocks"
  // (a count), "shared_peer_mapped" (the host's other processes' shared memory mapped here),
  // "shared_in_place_calls" (collectives that ran in place on it, a count); and this
  // communicator's: "arena" (its shared-memory arena, every rank's region of the host's object),
  // "windows" (this rank's memory registered in its live windows),
  // "staging_pinned" (pinned host memory staging CUDA calls), "device_ipc_scratch" (its CUDA IPC
  // scratch on its device, once connected); and one count that is no memory:
  // "foreign_messages_dropped" (messages from senders outside the group that its endpoints
  // received and dropped: another job, or anything else on the network, sending to them).
  std::map<std::string, uint64_t> memoryStats() const;
  // Which ranks arrive late at this communicator's collectives (smddp/straggler.h): measured
  // by rank 0 through the beacons, a copy on the others (one beacon period behind). enabled is
  // false without a store, beacons (SMDDP_BEACON_MS=0) or detection (SMDDP_STRAGGLER_MS=0).
  StragglerReport stragglerReport() const;

  // One-sided communication (smddp/window.h). Collective: every rank calls it in the same order
  // with its own memory (data may be null when bytes is 0; sizes may differ). The memory must
  // outlive the window, and the window must not outlive this communicator. Windows whose memory
  // came from allocateShared are read and written in place by the host's other ranks.
  std::shared_ptr<Window> createWindow(void* data, size_t bytes);

  // Time estimates. Between beginEstimate() and endEstimate(), collectives and send/recv on this
  // communicator are checked as usual (bad arguments throw) but not run: each returns a completed
  // Request, its buffers untouched, and adds its cost to the estimate: the cost model's time
  // (docs/MODEL.md) for the algorithm this communicator would select, on its hosts, ranks per
  // host and the CPUs they may use, with this machine's copy and reduction rates (measured at
  // the first estimate, a few milliseconds) and SMDDP_COST_MODEL's parameters (the network's:
  // bench/model calibrate writes them). Calls add up one after another. endEstimate() returns the
  // total in microseconds and calls run again. Nothing is communicated: a rank may estimate alone.
  // Error(kInvalidArgument): begin while an estimate runs (or with a SMDDP_COST_MODEL file that
  // cannot be used, naming it), end while none does.
  void beginEstimate();
  double endEstimate();

  // recv = op over all ranks' send. In place when send.data == recv.data.
  Request allReduce(const Buffer& send, const Buffer& recv, ReduceOp op);
  // recv on every rank = send of root. In place when send.data == recv.data; only root reads send.
  Request broadcast(const Buffer& send, const Buffer& recv, int root);
  // recv (size * send.count elements) = concatenation of every rank's send, in rank order.
  // In place when send.data == recv.data + rank * send.bytes().
  Request allGather(const Buffer& send, const Buffer& recv);
  // recvs[r] = send of rank r; recvs.size() == size(), each with send.count elements.
  Request allGather(const Buffer& send, const std::vector<Buffer>& recvs);
  Request barrier();
  // recv (send.count / size elements) = op over all ranks of their send block `rank`: send holds
  // size() blocks of recv.count elements, in rank order. In place when recv.data == send.data +
  // rank * recv.bytes().
  Request reduceScatter(const Buffer& send, const Buffer& recv, ReduceOp op);
  // recv on root = op over all ranks' send (send.count elements each); recv is neither read nor
  // written on the other ranks. In place when send.data == recv.data on root.
  Request reduce(const Buffer& send, const Buffer& recv, ReduceOp op, int root);
  // recv on root (size() * send.count elements) = every rank's send, in rank order; recv is not
  // used on the other ranks. In place when send.data == recv.data + rank * send.bytes() on root.
  Request gather(const Buffer& send, const Buffer& recv, int root);
  // recv on every rank r = block r of root's send (size() blocks of recv.count elements); send is
  // not used on the other ranks. In place when recv.data == send.data + root * recv.bytes().
  Request scatter(const Buffer& send, const Buffer& recv, int root);
  // The list forms: recvs[r] on root (size() buffers of send.count elements each, disjoint) =
  // rank r's send; in place when recvs[root].data == send.data. And recv on rank r = sends[r] of
  // root (size() buffers of recv.count elements; in place when sends[root].data == recv.data).
  // The list is not used on the other ranks. Nothing is copied through a contiguous buffer.
  Request gather(const Buffer& send, const std::vector<Buffer>& recvs, int root);
  Request scatter(const std::vector<Buffer>& sends, const Buffer& recv, int root);
  // Block r of send (send.count / size() elements) goes to rank r; block q of recv comes from
  // rank q. send and recv have one count and must not overlap.
  Request allToAll(const Buffer& send, const Buffer& recv);
  // Uneven all_to_all: sends[r] goes to rank r, recvs[q] comes from rank q (size() each, one
  // dtype). The counts of a pair must agree (rank a's sends[b] == rank b's recvs[a]); a rank
  // that finds otherwise fails with kMismatch naming both. Outputs overlap nothing.
  Request allToAllV(const std::vector<Buffer>& sends, const std::vector<Buffer>& recvs);
  // The same with MPI_Alltoallv's layout: piece r is elements [offsets[r], offsets[r] +
  // counts[r]) of send (to rank r) or recv (from rank r).
  Request allToAllV(const Buffer& send, const std::vector<size_t>& sendCounts,
                    const std::vector<size_t>& sendOffsets, const Buffer& recv,
                    const std::vector<size_t>& recvCounts, const std::vector<size_t>& recvOffsets);

  // Point to point. Not collectives: only the two ranks take part, and they are in no order
  // with the collectives (a send may complete while a collective posted before it still runs).
  // Messages from one rank to another with one tag match in the order they were posted. Each
  // operation is bounded by the communicator's timeout; a peer that is gone fails it. Tags from
  // kWindowTags to kWindowTags + 0xFFFF are the windows' (Error(kInvalidArgument) here).
  static constexpr uint32_t kWindowTags = 0xFFFE0000u;
  static constexpr int kAnySource = -1;
  // Sends buf to rank `peer` (not this rank); done once buf may be reused.
  Request send(const Buffer& buf, int peer, uint32_t tag = 0);
  // Receives into buf a message from rank `peer` (kAnySource: from any rank; Request::source()
  // then says which) with this tag. The message must have buf's size: a shorter or longer one
  // fails the receive with kMismatch naming both ranks.
  Request recv(const Buffer& buf, int peer, uint32_t tag = 0);

  // Blocking forms of the above (as MPI_Allreduce to MPI_Iallreduce): return once the collective
  // completed on this rank, throwing its Error if it failed (bad arguments throw before anything
  // runs, as above). With nothing else queued or running on this communicator the collective runs
  // on the calling thread without a Request: the latency path of a synchronous loop. Otherwise it
  // is queued behind the others and waited for, as post-then-wait() would.
  void allReduceBlocking(const Buffer& send, const Buffer& recv, ReduceOp op);
  void broadcastBlocking(const Buffer& send, const Buffer& recv, int root);
  void allGatherBlocking(const Buffer& send, const Buffer& recv);
  void allGatherBlocking(const Buffer& send, const std::vector<Buffer>& recvs);
  void barrierBlocking();
  void reduceScatterBlocking(const Buffer& send, const Buffer& recv, ReduceOp op);
  void reduceBlocking(const Buffer& send, const Buffer& recv, ReduceOp op, int root);
  void gatherBlocking(const Buffer& send, const Buffer& recv, int root);
  void scatterBlocking(const Buffer& send, const Buffer& recv, int root);
  void gatherBlocking(const Buffer& send, const std::vector<Buffer>& recvs, int root);
  void scatterBlocking(const std::vector<Buffer>& sends, const Buffer& recv, int root);
  void allToAllBlocking(const Buffer& send, const Buffer& recv);
  void allToAllVBlocking(const std::vector<Buffer>& sends, const std::vector<Buffer>& recvs);

  // Makes every pending and later wait fail with Error(kAborted). Safe from any thread.
  // `reason` (optional) is named in those errors and in brokenReason().
  void abort();
  void abort(const std::string& reason);
  // The bound of every collective posted from now on (Options::timeout until then); collectives
  // already posted keep theirs. Error(kInvalidArgument) unless timeout > 0. Safe from any thread.
  void setTimeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const;
  // Non-empty once the communicator is broken: the first unrecoverable error.
  std::string brokenReason() const;
  // The code of that first error (kAborted after abort()); meaningless while brokenReason() is
  // empty.
  ErrorCode brokenCode() const;
  // Called once, when an error first breaks the communicator (a timeout, a failed or lost peer,
  // a mismatch; not abort()), on the thread that met it and before that collective's waiters
  // see the error: the place to capture state before the application reacts. It must not block
  // for long nor call into this communicator. Set it before the first collective.
  using FailureHook = std::function<void(ErrorCode code, const std::string& reason)>;
  void setFailureHook(FailureHook hook);

  core::CommunicatorImpl& impl() { return *impl_; }

 private:
  std::unique_ptr<core::CommunicatorImpl> impl_;
};

}  // namespace smddp
