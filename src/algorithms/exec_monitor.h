// SPDX-License-Identifier: Apache-2.0
// ExecMonitor: what the core learns about the other ranks out of band (the progress beacons in
// watch/progress_beacon.h) and tells a running collective. Exec asks it only when it idles (a cheap
// atomic flag) and when it times out, so the data path pays nothing while messages flow.
// Invariant: failed() turns true at most once and stays true; raise() then always throws.
#pragma once

#include <chrono>
#include <string>

#include "algorithms/collective.h"

namespace smddp::algo {

class ExecMonitor {
 public:
  virtual ~ExecMonitor() = default;
  // True once a failure was learnt from elsewhere: a peer failed or died, or called another
  // collective at this sequence number. Must be cheap (called on idle polls).
  virtual bool failed() const = 0;
  // Throws that failure as an Error naming this rank and `desc`.
  [[noreturn]] virtual void raise(const CollectiveDesc& desc) const = 0;
  // Words appended to a timeout message: which ranks have not entered `desc`, and the last
  // collective each completed. Bounded (short store reads); "" when nothing is known.
  virtual std::string laggards(const CollectiveDesc& desc) const = 0;
  // Gives a failure a peer announces (say, a mismatch it detected) up to `bound` to arrive, so the
  // peer's own error is reported rather than what it caused here. `peerGone`: the peer was found
  // gone, so whatever it announced is already written (a communicator flushes its announcement
  // before it closes its endpoint), and one whole round of reading begun after this call is
  // conclusive: the wait ends then. True when failed() is then true.
  virtual bool awaitVerdict(std::chrono::milliseconds bound, bool peerGone) const = 0;
};

}  // namespace smddp::algo
