// SPDX-License-Identifier: Apache-2.0
// NcclPairs: send and recv on the NCCL plane, one NCCL communicator of two ranks per ordered pair
// (sender -> receiver), each with a stream of its own: messages are in no order with the
// collectives, and a pair's two directions never wait on each other (A's send to B and B's send
// to A, posted before either receive, both go through). A pair's communicator is formed when its
// first message is posted, on a helper thread (the sender makes the id and publishes it in the
// store; both join a non-blocking communicator), so no post waits for the peer: messages posted
// meanwhile are held and enqueued in order once it is ready. A pair that fails (formation, a
// timeout, NCCL's error) is aborted, its messages fail, and the next message forms a new one.
// Messages between a pair match in the order they were posted (NCCL's rule; smddp's own plane
// matches by tag too, so tagged messages go there: the caller routes them).
// Invariant: a pair's messages are enqueued in post order, each after its start event.
#pragma once

#include <nccl.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/collective.h"
#include "planes/nccl/nccl_comm.h"
#include "planes/nccl/nccl_work.h"
#include "smddp/error.h"
#include "smddp/store.h"

namespace smddp::planes::nccl {

class NcclPairs {
 public:
  // Fails a pair's messages: (work, code, cause), each once.
  using Fail = std::function<void(NcclWork& work, ErrorCode code, const std::string& cause)>;
  NcclPairs(const NcclApi& api, device::Device& device, int ordinal, int rank,
            std::shared_ptr<Store> store, std::string prefix, StopReason stop, Fail fail);
  ~NcclPairs();  // aborts what is forming, joins the helpers, finalizes the rest
  NcclPairs(const NcclPairs&) = delete;
  NcclPairs& operator=(const NcclPairs&) = delete;

  // The stream of the pair this message travels on (made with the pair).
  device::Stream streamFor(CollectiveKind kind, int peer);
  // Enqueues the message of `work` (its start event recorded) or holds it until the pair is
  // ready; sets work->pair. A failure settles the work through Fail.
  void post(const std::shared_ptr<NcclWork>& work, const algo::CollectiveArgs& args, int peer);
  // A pair whose NCCL communicator reported an error: aborts it and fails its messages.
  void checkErrors();
  // A message that outlived its deadline: aborts its pair and fails the pair's messages.
  void expire(NcclWork& work, const std::string& cause);
  // Aborts every pair (the plane failed).
  void abortAll();

 private:
  struct Pair;
  Pair& pairFor(CollectiveKind kind, int peer);  // mutex_ held
  void form(Pair& pair, Clock::time_point deadline);  // the helper thread
  // Enqueues one message on a ready pair (pair.mutex held); false with *why when NCCL refused.
  bool enqueue(Pair& pair, const std::shared_ptr<NcclWork>& work,
               const algo::CollectiveArgs& args, std::string* why);

  const NcclApi& api_;
  device::Device& device_;
  const int ordinal_;
  const int rank_;
  std::shared_ptr<Store> store_;
  const std::string prefix_;
  const StopReason stop_;
  const Fail fail_;
  std::mutex mutex_;  // guards pairs_
  std::map<std::pair<int, int>, std::unique_ptr<Pair>> pairs_;  // (sender, receiver)
};

}  // namespace smddp::planes::nccl
