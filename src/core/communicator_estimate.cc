// SPDX-License-Identifier: Apache-2.0
// Time estimates of a communicator (communicator_impl.h, estimator.h): calls costed, not run.
#include "algorithms/arena/arena.h"
#include "algorithms/arena/segment.h"
#include "common/config.h"
#include "common/logging.h"
#include "core/communicator_impl.h"
#include "core/recycling_allocator.h"
#include "core/request_state.h"

namespace smddp::core {

Estimator& CommunicatorImpl::estimator() {
  std::lock_guard<std::mutex> lock(estimatorMutex_);
  if (!estimator_) {
    EstimatorSetup s;
    s.rank = rank_;
    s.size = size_;
    s.topology = topology_;
    s.overrides = settings_.overrides;
    s.ranksPerHost = ranksPerHost_;
    s.hostCpus = hostCpus_;
    const Config& config = Config::global();
    const algo::arena::Arena* arena = arena_ ? arena_.get() : hostArena_.get();
    s.slotBytes = arena != nullptr ? arena->segment().slotBytes()
                                   : static_cast<size_t>(config.arenaSlotBytes);
    s.segmentBytes = settings_.segmentBytes;
    s.paramsPath = config.costModel;
    s.onNccl = [this](const algo::CollectiveArgs& args) { return costsOnNccl(args); };
    estimator_ = std::make_unique<Estimator>(std::move(s));
    const model::Machine& m = estimator_->machine();
    SMDDP_INFO(rank_, "cost model: " << m.nodes << " host(s) x " << m.per_node
                                     << " rank(s), copies " << m.copy_rate / 1e9
                                     << " GB/s, reductions " << 1e-9 / m.gamma
                                     << " GB/s, arena synchronisation " << m.arena_alpha * 1e6
                                     << " us, " << m.cpu_share << " rank(s) per CPU"
                                     << (config.costModel.empty() ? ""
                                                                  : ", over " + config.costModel));
  }
  return *estimator_;
}

void CommunicatorImpl::beginEstimate() {
  Estimator& e = estimator();  // before the flag: a file that cannot be used leaves it off
  if (estimating_.exchange(true, std::memory_order_acq_rel)) {
    throw Error(
        ErrorCode::kInvalidArgument,
        errorHead(rank_) + ": beginEstimate: an estimate is already running on this communicator");
  }
  (void)e.take();
}

double CommunicatorImpl::endEstimate() {
  if (!estimating_.exchange(false, std::memory_order_acq_rel)) {
    throw Error(ErrorCode::kInvalidArgument,
                errorHead(rank_) + ": endEstimate: no estimate is running on this communicator");
  }
  return estimator().take();
}

double CommunicatorImpl::estimateCall(const algo::CollectiveArgs& args, std::string* algorithm) {
  return estimator().cost(args, algorithm);
}

Request CommunicatorImpl::estimated(const algo::CollectiveArgs& args) {
  estimator().add(args);
  return completedRequest(args.kind);
}

Request CommunicatorImpl::completedRequest(CollectiveKind kind) {
  auto state = std::allocate_shared<RequestState>(RecyclingAllocator<RequestState>());
  state->engine = engine_.get();
  state->desc.kind = kind;
  state->complete(nullptr);
  return Request(std::move(state));
}

}  // namespace smddp::core
