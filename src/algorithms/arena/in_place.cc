// SPDX-License-Identifier: Apache-2.0
// The in-place agreement and reduction (in_place.h).
#include "algorithms/arena/in_place.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "common/logging.h"
#include "reduce/reducer.h"

namespace smddp::algo::arena {
namespace {

constexpr size_t kPieceBytes = 32 * 1024;  // an all_reduce's accumulator: stays in L1/L2

}  // namespace

InPlace::InPlace(Exec& exec, const Refs& mine) : exec_(exec), step_(exec) {
  step_.acquire();
  std::memcpy(step_.mine(), &mine, sizeof(Refs));
  step_.publish(1);
  step_.awaitAll(1);
  for (int r = 0; r < exec.size(); ++r) {
    Refs refs;
    std::memcpy(&refs, r == exec.rank() ? step_.mine() : step_.slotOf(r), sizeof(Refs));
    all_.push_back(refs);
  }
}

bool InPlace::agree(bool candidate, const CollectiveArgs& args, bool outs) {
  if (!candidate) {
    step_.release();
    return false;
  }
  uint32_t mapped = 1;
  try {
    views_ = viewsOf(args, outs);
  } catch (const Error& e) {
    mapped = 0;
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      SMDDP_WARN(exec_.rank(), "tensors in shareable memory go through the arena: " << e.what());
    }
  }
  std::memcpy(step_.mine() + sizeof(Refs), &mapped, sizeof(mapped));
  step_.publish(2);
  step_.awaitAll(2);
  bool all = true;
  for (int r = 0; r < exec_.size(); ++r) {
    uint32_t theirs = 0;
    std::memcpy(&theirs, (r == exec_.rank() ? step_.mine() : step_.slotOf(r)) + sizeof(Refs),
                sizeof(theirs));
    all = all && theirs == 1;
  }
  step_.release();
  if (all) context(exec_).pool->countInPlace();
  return all;
}

void InPlace::allReached() {
  SlotStep done(exec_);
  done.acquire();
  done.publish(1);
  done.awaitAll(1);
  done.release();
}

Views InPlace::viewsOf(const CollectiveArgs& args, bool outs) {
  Pool& pool = *context(exec_).pool;
  Views v;
  for (int r = 0; r < exec_.size(); ++r) {
    const Refs& refs = all_[static_cast<size_t>(r)];
    const bool me = r == exec_.rank();
    v.in.push_back(me ? static_cast<const unsigned char*>(args.send)
                      : refs.send.inPool() ? pool.map(refs.send) : nullptr);
    v.out.push_back(me ? static_cast<unsigned char*>(args.recv)
                       : outs && refs.recv.inPool() ? pool.map(refs.recv) : nullptr);
  }
  return v;
}

bool every(const std::vector<Refs>& all, PoolRef Refs::*ref) {
  for (const Refs& r : all) {
    if (!(r.*ref).inPool()) return false;
  }
  return true;
}

bool broadcastInPlace(Exec& exec, int source, const CollectiveArgs& args) {
  const size_t bytes = args.bytes();
  const bool isSource = exec.rank() == source;
  InPlace call(exec, {isSource ? context(exec).pool->locate(args.send, bytes) : PoolRef{}, {}});
  if (!call.agree(call.refs()[static_cast<size_t>(source)].send.inPool(), args, false)) {
    return false;
  }
  const unsigned char* from = call.views().in[static_cast<size_t>(source)];
  if (args.recv != from) std::memcpy(args.recv, from, bytes);
  call.finish();
  return true;
}

void reduceInRankOrder(Exec& exec, const CollectiveArgs& args,
                       const std::vector<const unsigned char*>& in, size_t off, unsigned char* out,
                       size_t count, const std::vector<unsigned char*>* outs) {
  const int n = exec.size();
  const size_t es = args.elementSize();
  const size_t piece = std::max<size_t>(1, kPieceBytes / es);
  auto* acc = static_cast<unsigned char*>(exec.scratch(piece * es));
  for (size_t done = 0; done < count; done += piece) {
    const size_t k = std::min(piece, count - done);
    const size_t at = off + done * es;
    reduce::reduce(args.dtype, args.op, acc, in[0] + at, in[1] + at, k);  // an arena group: n >= 2
    for (int q = 2; q < n; ++q) reduce::reduce(args.dtype, args.op, acc, acc, in[q] + at, k);
    if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, acc, k, n);
    if (outs == nullptr) {
      std::memcpy(out + done * es, acc, k * es);
    } else {
      for (unsigned char* o : *outs) std::memcpy(o + at, acc, k * es);
    }
  }
}

}  // namespace smddp::algo::arena
