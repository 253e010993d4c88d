// SPDX-License-Identifier: Apache-2.0
// The agreement and the reduction behind the in-place collectives on tensors in the ranks'
// shareable memory (pool.h; pooled.cc, and hier_split's host phases in
// hierarchical_all_reduce.cc). Every rank of an arena group publishes, in one slot use, where its
// buffers lie and reads its peers'; from these all take the same decision: in place when every
// buffer the form reads or writes in a peer is pool memory and every rank could map its peers'
// (a peer in another pid namespace cannot be opened), else the arena form.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/arena/pool.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/exec.h"

namespace smddp::algo::arena {

struct Refs {
  PoolRef send;
  PoolRef recv;
};

// The buffers of every rank of the group as this process sees them (its own as given).
struct Views {
  std::vector<const unsigned char*> in;
  std::vector<unsigned char*> out;
};

// One call's decision, the same on every rank of `exec` (an arena group): phase 1 in the
// constructor (where), phase 2 in agree() (whether every rank could map its peers' buffers).
class InPlace {
 public:
  InPlace(Exec& exec, const Refs& mine);
  const std::vector<Refs>& refs() const { return all_; }
  const Views& views() const { return views_; }

  // `candidate`: computed from refs() alone (so alike on every rank); `outs`: the form reads or
  // writes the peers' outputs. Releases the slot use; counts the call when in place.
  bool agree(bool candidate, const CollectiveArgs& args, bool outs);

  // Every rank of the group has got this far (a slot use of its own): after it, what each wrote
  // before may be read by the others.
  void allReached();
  // Every rank is done with every other's buffers before any returns.
  void finish() { allReached(); }

 private:
  Views viewsOf(const CollectiveArgs& args, bool outs);

  Exec& exec_;
  SlotStep step_;
  std::vector<Refs> all_;
  Views views_;
};

// Whether every rank's `ref` buffer is pool memory.
bool every(const std::vector<Refs>& all, PoolRef Refs::*ref);

// broadcast in place: every rank of `exec` copies rank `source`'s input into its output (the
// source too, out of place). Returns false, having moved nothing but the agreement, when the
// source's input is not shareable (then every rank returns false).
bool broadcastInPlace(Exec& exec, int source, const CollectiveArgs& args);

// Elements [at, at + count) (byte offset `off` of every input) reduced over the ranks in rank
// order, a piece at a time into a scratch that stays in cache (AVG divided by the group's size),
// each piece written to `out` (at the piece's offset from `out`), or to every output in `outs`
// at `off`.
void reduceInRankOrder(Exec& exec, const CollectiveArgs& args,
                       const std::vector<const unsigned char*>& in, size_t off, unsigned char* out,
                       size_t count, const std::vector<unsigned char*>* outs = nullptr);

}  // namespace smddp::algo::arena
