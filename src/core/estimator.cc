// SPDX-License-Identifier: Apache-2.0
#include "core/estimator.h"

#include "algorithms/arena/pool.h"
#include "model/costs.h"
#include "model/params.h"
#include "model/select.h"

namespace smddp::core {
namespace {

// The size the model counts (model/costs.h: nccl-tests'), from a call's arguments.
double modelBytes(const algo::CollectiveArgs& args, int size) {
  using K = CollectiveKind;
  switch (args.kind) {
    case K::kAllGather:
    case K::kReduceScatter:
    case K::kAllToAll:
    case K::kGather:
    case K::kScatter:
      return static_cast<double>(args.bytes()) * size;
    case K::kAllToAllV: {
      double sent = 0.0;
      for (int r = 0; r < size; ++r) sent += static_cast<double>(args.sendPieceBytes(r));
      return sent;
    }
    case K::kBarrier:
      return 0.0;
    default:
      return static_cast<double>(args.bytes());
  }
}

// Whether every buffer of the call lies in this process's shareable memory (pooled runs in place
// then; the peers' are assumed alike).
bool inPool(const algo::CollectiveArgs& args, int size) {
  const auto pool = algo::arena::Pool::process();
  const bool gathered = args.kind == CollectiveKind::kAllGather;
  const bool scattered = args.kind == CollectiveKind::kReduceScatter;
  const size_t in = gathered ? args.bytes() : args.bytes() * (scattered ? size : 1);
  const size_t out = scattered ? args.bytes() : args.bytes() * (gathered ? size : 1);
  if (!args.blocks.empty()) return false;
  return pool->locate(args.send, in).pid != 0 && pool->locate(args.recv, out).pid != 0;
}

}  // namespace

Estimator::Estimator(EstimatorSetup setup) : setup_(std::move(setup)) {
  model::Shape shape;
  shape.nodes = setup_.topology.hosts;
  shape.perNode = setup_.ranksPerHost;
  shape.hostCpus = setup_.hostCpus;
  shape.slotBytes = static_cast<double>(setup_.slotBytes);
  shape.segmentBytes = static_cast<double>(setup_.segmentBytes);
  machine_ = model::priors(shape, model::measureRates());
  if (!setup_.paramsPath.empty()) model::applyParamsFile(machine_, setup_.paramsPath);
}

double Estimator::cost(const algo::CollectiveArgs& args, std::string* algorithm) const {
  const int n = setup_.size;
  const double bytes = modelBytes(args, n);
  const model::Machine& m = machine_;
  double seconds = 0.0;
  std::string name = "local";
  const bool p2p = args.kind == CollectiveKind::kSend || args.kind == CollectiveKind::kRecv;
  if (args.memory == MemoryType::kCuda && setup_.onNccl && setup_.onNccl(args)) {
    if (algorithm != nullptr) *algorithm = "nccl";
    return model::ncclSeconds(m, args.kind, bytes);
  }
  if (p2p) {
    name = "message";
    seconds = model::seconds(m, args.kind, name, bytes);
  } else if (n == 1 || (args.count == 0 && args.kind != CollectiveKind::kBarrier &&
                        args.kind != CollectiveKind::kAllToAllV)) {
    seconds = m.call_alpha + (args.inPlace() ? 0.0 : bytes * m.copyBeta());  // runs locally
  } else {
    name = algo::selectAlgorithm(args.kind, args.bytes(), setup_.topology, setup_.overrides).name;
    if (name == "pooled" && !inPool(args, n)) {
      // Ordinary tensors: the arena form that would have run, after one synchronisation more.
      const bool split = args.kind == CollectiveKind::kAllReduce;
      const std::string fallback = split ? "arena_split" : "arena";
      seconds = m.arena_alpha + model::seconds(m, args.kind, fallback, bytes);
      name = "pooled (" + fallback + ")";
    } else {
      seconds = model::seconds(m, args.kind, name, bytes);
    }
  }
  if (args.memory == MemoryType::kCuda) seconds += 2.0 * bytes / kDeviceCopyRate;
  if (algorithm != nullptr) *algorithm = name;
  return seconds;
}

void Estimator::add(const algo::CollectiveArgs& args) {
  const double s = cost(args);
  std::lock_guard<std::mutex> lock(mutex_);
  total_ += s;
}

double Estimator::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  const double t = total_;
  total_ = 0.0;
  return t;
}

}  // namespace smddp::core
