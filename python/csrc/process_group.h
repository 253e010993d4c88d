// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp: the c10d backend class behind backend="smddp". It owns one smddp
// Communicator per torch process group and translates each c10d collective into engine calls.
// Invariants: all ranks issue engine collectives in the order torch calls us (the engine's
// ordering contract); every collective returns an SmddpWork; every unsupported collective raises
// a RuntimeError naming the op and "smddp" instead of crashing.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "comm_slot.h"
#include "completion_queue.h"
#include "group_hooks.h"
#include "membership.h"
#include "smddp/communicator.h"
#include "torch_compat.h"
#include "work.h"

namespace smddp::torch_shim {

class ProcessGroupSmddp : public compat::BackendBase {
 public:
  // Joins the group through `store` (bounded by `timeout`, which also bounds every collective).
  // `reconfigure` (torch's enable_reconfigure): joins nothing; the group has no communicator
  // until reconfigure() forms one. `generation`: the communicator's generation key (a shrink's
  // child; Options::generation).
  ProcessGroupSmddp(const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout, const std::string& name,
                    bool reconfigure = false,
                    const std::optional<std::string>& generation = std::nullopt);
  ~ProcessGroupSmddp() override;

  // Every group the binding made, however (create_backend or by hand), is tracked weakly;
  // shutdownLive() shuts down those still alive (torch_smddp calls it at interpreter exit,
  // while Python still runs).
  static void track(const c10::intrusive_ptr<ProcessGroupSmddp>& group);
  static void shutdownLive();

  const std::string getBackendName() const override { return "smddp"; }
  std::string provider() const { return enter().comm().provider(); }
  int64_t spinUs() const { return enter().comm().spinUs(); }
  std::map<std::string, uint64_t> memoryStats() const { return enter().comm().memoryStats(); }
  StragglerReport stragglerReport() const { return enter().comm().stragglerReport(); }
  std::map<std::string, uint64_t> deviceIpcCalls() const {
    return enter().comm().deviceIpcCalls();
  }
  std::string dataPlane() const { return enter().comm().dataPlane(); }
  std::string dataPlaneReason() const { return enter().comm().dataPlaneReason(); }
  std::string ncclFormedBy() const { return enter().comm().ncclFormedBy(); }
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(timeoutMs_.load(std::memory_order_relaxed));
  }
  const std::string& name() const { return name_; }

  using Work = ::c10d::Work;
  using Tensors = std::vector<at::Tensor>;
  using Options = compat::BackendOptions;

  // ---- collectives (process_group_collectives.cc) ----
  c10::intrusive_ptr<Work> broadcast(Tensors& tensors,
                                     const ::c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce(Tensors& tensors,
                                     const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce_coalesced(
      Tensors& tensors, const ::c10d::AllreduceCoalescedOptions& opts) override;
#if SMDDP_TORCH_SPARSE_ALLREDUCE
  // Sparse CUDA tensors arrive here (CPU ones through allreduce): refused with a clear error.
  c10::intrusive_ptr<Work> allreduce_sparse(Tensors& tensors,
                                            const ::c10d::AllreduceOptions& opts) override;
#endif
  c10::intrusive_ptr<Work> allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                     const ::c10d::AllgatherOptions& opts) override;
  // all_gather_into_tensor: all_gather_single on torch >= 2.14, _allgather_base before.
  c10::intrusive_ptr<Work> SMDDP_SINGLE(all_gather_single, _allgather_base)(
      at::Tensor& output, at::Tensor& input, const ::c10d::AllgatherOptions& opts) override;
  // A list of all_gather_into_tensor as one Work (DTensor, FSDP2, the coalescing manager).
  c10::intrusive_ptr<Work> SMDDP_SINGLE(all_gather_single_coalesced,
                                        allgather_into_tensor_coalesced)(
      Tensors& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) SMDDP_OVERRIDE_2X;
  // outputs[r][j] = inputs[j] of rank r (torch's all_gather_coalesced).
  c10::intrusive_ptr<Work> allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                               const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> barrier(const ::c10d::BarrierOptions& opts) override;

  // ---- gather and scatter (process_group_gather_scatter.cc) ----
  // outputs[0][r] on the root = inputs[0] of rank r (outputs empty elsewhere).
  c10::intrusive_ptr<Work> gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                  const ::c10d::GatherOptions& opts) override;
  // outputs[0] on rank r = inputs[0][r] of the root (inputs empty elsewhere).
  c10::intrusive_ptr<Work> scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                   const ::c10d::ScatterOptions& opts) override;

  // ---- rooted and scattered reductions (process_group_reduce_scatter.cc) ----
  // tensors[0] on rootRank = op over ranks of their tensors[0]; the others' stay as they were.
  c10::intrusive_ptr<Work> reduce(Tensors& tensors, const ::c10d::ReduceOptions& opts) override;
  // outputs[0] = op over ranks of their inputs[0][rank].
  c10::intrusive_ptr<Work> reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                          const ::c10d::ReduceScatterOptions& opts) override;
  // reduce_scatter_tensor: output = op over ranks of their input's block `rank`.
  c10::intrusive_ptr<Work> SMDDP_SINGLE(reduce_scatter_single, _reduce_scatter_base)(
      at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) override;
  // A list of reduce_scatter_tensor as one Work (FSDP2, the coalescing manager).
  c10::intrusive_ptr<Work> SMDDP_SINGLE(reduce_scatter_single_coalesced,
                                        reduce_scatter_tensor_coalesced)(
      Tensors& outputs, Tensors& inputs, const ::c10d::ReduceScatterOptions& opts)
      SMDDP_OVERRIDE_2X;

  // ---- all_to_all (process_group_all_to_all.cc) ----
  // output's piece r (dim-0 rows, outputSplitSizes[r] of them or an even share) = input's piece
  // `rank` of rank r.
  c10::intrusive_ptr<Work> SMDDP_SINGLE(all_to_all_single, alltoall_base)(
      at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplitSizes,
      std::vector<int64_t>& inputSplitSizes, const ::c10d::AllToAllOptions& opts) override;
  // outputs[r] = inputs[rank] of rank r (any sizes a pair agrees on).
  c10::intrusive_ptr<Work> alltoall(Tensors& outputs, Tensors& inputs,
                                    const ::c10d::AllToAllOptions& opts) override;

  // ---- point to point (process_group_p2p.cc) ----
  c10::intrusive_ptr<Work> send(Tensors& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<Work> recv(Tensors& tensors, int srcRank, int tag) override;
  // The Work's sourceRank() names the sender.
  c10::intrusive_ptr<Work> recvAnysource(Tensors& tensors, int tag) override;
  // Rank 0 hears from every rank, then releases them; a rank missing after the timeout is named.
  void monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) override;

  // The engine numbers its collectives itself; torch's group sequence number is our issue count.
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return issued_; }
  uint64_t issued() const { return issued_; }

  // ---- the 2.x Backend API (process_group.cc). On torch 1.13 these are plain members that
  // torch never calls; the ones a 1.13 user could reach raise a clear "needs torch 2.x". ----
  // A group of the parent's ranks `ranks` (parent ranks, in the child's rank order) through
  // `store` (already prefixed by torch); nullptr on a rank not in `ranks`.
  bool supportsSplitting() const SMDDP_OVERRIDE_2X { return true; }
  c10::intrusive_ptr<compat::BackendBase> split(const c10::intrusive_ptr<::c10d::Store>& store,
                                                const std::vector<int>& ranks,
                                                const c10::intrusive_ptr<Options>& opts)
      SMDDP_OVERRIDE_2X;
  c10::intrusive_ptr<Options> getBackendOptions() SMDDP_OVERRIDE_2X;
  // Collectives issued between these two are posted as usual; endCoalescing returns one Work
  // for all of them (CoalescedWork).
  bool supportsCoalescing() const SMDDP_OVERRIDE_2X { return true; }
  void startCoalescing() SMDDP_OVERRIDE_2X;
  c10::intrusive_ptr<Work> endCoalescing() SMDDP_OVERRIDE_2X;
  // The bound of every collective issued from now on (torch's _set_pg_timeout).
  void setTimeout(std::chrono::milliseconds timeout) SMDDP_OVERRIDE_2X;
  // Works issued from now on record their duration (Work.get_duration()).
  void enableCollectivesTiming() SMDDP_OVERRIDE_2X { timing_ = true; }
  // torch >= 2.4 calls these on destroy_process_group / abort.
  void shutdown() SMDDP_OVERRIDE_2X;
  void abort() SMDDP_OVERRIDE_2X;

  // ---- keeping a job alive through failures (process_group_fault.cc) ----
  // Reconfigure (torch >= 2.15): this process's handle (membership.h), stable for the group's
  // life; reconfigure() forms a communicator among exactly opts.handles (a list: ranks by
  // position; a set: smddp orders them by host), aborts the current one (its pending
  // collectives fail naming the reconfigure), swaps the new one in and changes rank()/size().
  // Blocking; returns a completed Work. A uuid is accepted once per group.
  bool supportsReconfigure() const SMDDP_OVERRIDE_RECONFIGURE { return true; }
  std::string get_reconfigure_handle() const SMDDP_OVERRIDE_RECONFIGURE;
  c10::intrusive_ptr<Work> reconfigure(const compat::ReconfigureOptions& opts)
      SMDDP_OVERRIDE_RECONFIGURE;
  bool isInitialized() SMDDP_OVERRIDE_RECONFIGURE { return !slot_.empty(); }
  // A new group of the other ranks (in their order here) through this group's store, without a
  // new rendezvous; kShrinkAbort (SHRINK_ABORT) aborts this group's pending collectives first.
  // Only the remaining ranks call it, in the same order as their other shrinks of this group.
  static constexpr int kShrinkAbort = 0x01;
  bool supportsShrinking() const SMDDP_OVERRIDE_2X { return true; }
  c10::intrusive_ptr<compat::BackendBase> shrink(const std::vector<int64_t>& ranksToExclude,
                                                 int flags,
                                                 const c10::intrusive_ptr<Options>& opts)
      SMDDP_OVERRIDE_2X;
  // SUCCESS, or the first error of the current communicator: TIMEOUT (a collective timed out),
  // REMOTE_ERROR (a peer died or failed), COMM_ERROR (anything else, abort() included).
  compat::ErrorType getError() SMDDP_OVERRIDE_2X;
  // Abort and completion hooks (group_hooks.h).
  bool supportsAbortHooks() const SMDDP_OVERRIDE_HOOKS { return true; }
  void registerAbortHook(int64_t id, compat::AbortHook hook) SMDDP_OVERRIDE_HOOKS;
  void unregisterAbortHook(int64_t id) SMDDP_OVERRIDE_HOOKS;
  bool supportsCompletionHooks() const SMDDP_OVERRIDE_HOOKS { return true; }
  void registerCompletionHook(int64_t id, compat::CompletionHook hook) SMDDP_OVERRIDE_HOOKS;
  void unregisterCompletionHook(int64_t id) SMDDP_OVERRIDE_HOOKS;
  GroupHooks& hooks() const { return *shared_->hooks; }
#if SMDDP_TORCH_TENSOR_ALLOC
  // ---- tensors in smddp's shareable memory (process_group_memory.cc) ----
  // CPU tensors whose storage the host's other ranks map: large all_reduce, all_gather,
  // reduce_scatter and broadcast on them run in place (Communicator::allocateShared). Not for
  // CUDA devices yet.
  bool supportsTensorAlloc(c10::DeviceIndex deviceIdx) override;
  at::Tensor allocateTensor(long size, at::TensorOptions options = {}) override;
  std::shared_ptr<c10::Allocator> getMemAllocator() override;
  std::unordered_map<std::string, uint64_t> getMemoryStats() override;
#endif
#if SMDDP_TORCH_WINDOW
  // ---- one-sided windows (process_group_window.cc) ----
  // A c10d::Window over the engine's (smddp/window.h) on CPU tensors: puts in place within a host
  // when the windows' tensors come from allocate_tensor, as messages otherwise.
  bool supportsWindow() const override { return true; }
  c10::intrusive_ptr<::c10d::Window> new_window(
      const std::optional<at::Tensor>& tensor = std::nullopt) override;
#endif
  // The current communicator, entered (window calls; collectives enter it themselves).
  CommUse enterComm() const { return enter(); }
  // A Work that is already done (window calls), bounded like the group's collectives.
  c10::intrusive_ptr<Work> doneWork(::c10d::OpType opType) const;
#if SMDDP_TORCH_TIME_ESTIMATE
  // ---- time estimates (process_group_estimate.cc) ----
  // Collectives between start and end are costed by the engine's model (Communicator::
  // beginEstimate), not run: their Works complete at once, their tensors untouched; end returns
  // the total in microseconds. Nothing is communicated.
  bool supportsTimeEstimation() const override { return true; }
  void startTimeEstimate() override;
  float endTimeEstimate() override;
#endif
  // The uuid of the current generation (0 before any reconfigure).
  int64_t generation() const { return uuid_.load(std::memory_order_relaxed); }

 private:
  // Wraps posted requests in an SmddpWork whose Future yields `outputs`; while coalescing, the
  // Work is also kept for endCoalescing.
  c10::intrusive_ptr<Work> finish(::c10d::OpType opType, SmddpWork::Requests requests,
                                  Tensors outputs, Staging staging,
                                  std::chrono::milliseconds perOpTimeout);
  // For a collective of several engine requests whose later request was refused: the ones
  // already posted go to a Work that is dropped at once, which keeps their tensors until they
  // finish (the caller then rethrows).
  void keepPosted(::c10d::OpType opType, SmddpWork::Requests requests, Tensors outputs,
                  Staging staging);

  // all_reduce of a sparse COO CPU tensor (process_group_sparse.cc).
  c10::intrusive_ptr<Work> allreduceSparse(at::Tensor& tensor,
                                           const ::c10d::AllreduceOptions& opts);

  // recv and recvAnysource: one engine recv into tensors[0] (process_group_p2p.cc).
  c10::intrusive_ptr<Work> receive(Tensors& tensors, int srcRank, int tag, ::c10d::OpType opType,
                                   const char* what);

  // The communicator, entered (comm_slot.h); a RuntimeError (not a crash) when there is none:
  // shut down, or reconfigure-regime and not yet reconfigured.
  CommUse enter() const;
  // A communicator of this group (rank, size) with its failure hook set; `generation` keyed.
  std::shared_ptr<Communicator> open(int rank, int size, std::chrono::milliseconds timeout,
                                     const std::optional<std::string>& generation) const;
  c10::intrusive_ptr<::c10d::Store> store_;
  CommSlot slot_;
  std::shared_ptr<WorkShared> shared_;  // the completion thread, the gate, the hooks
  MemberHandle self_;                   // this process's reconfigure handle
  std::mutex reconfigureMutex_;         // one reconfigure or shrink at a time; guards below
  std::set<int64_t> usedUuids_;
  uint64_t shrinks_ = 0;
  std::atomic<int64_t> uuid_{0};
  std::atomic<bool> shutDown_{false};  // shutdown() began: reconfigure and shrink refuse
  std::atomic<int64_t> timeoutMs_;  // the group's; setTimeout() may change it on any thread
  std::string name_;
  uint64_t issued_ = 0;
  bool timing_ = false;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<Work>> coalesced_;  // Works issued while coalescing_
};

}  // namespace smddp::torch_shim
