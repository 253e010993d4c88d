// SPDX-License-Identifier: Apache-2.0
// Calls scoped to the host or to the cross group (scoped.h).
#include "algorithms/scoped.h"

#include <array>
#include <string>

#include "algorithms/arena/collectives.h"
#include "algorithms/hierarchical.h"

namespace smddp::algo {
namespace {

void hostBarrier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  Exec local(exec, groups.local, groups.localSettings, 0);
  arena::barrier(local, args);
  local.waitAll();
}

void crossStep(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  Exec cross(exec, groups.cross, groups.crossSettings, 0);
  CollectiveArgs part = args;
  part.scope = Scope::kAll;
  hier::crossAlgorithm(args.kind, args.bytes(), cross.size()).run(cross, part);
  cross.waitAll();
}

constexpr size_t kKinds = static_cast<size_t>(CollectiveKind::kControl) + 1;

std::array<Algorithm, kKinds> crossAlgorithms() {
  std::array<Algorithm, kKinds> all{};
  for (size_t k = 0; k < kKinds; ++k) {
    all[k] = Algorithm{static_cast<CollectiveKind>(k),
                       "cross",
                       "the rank's counterparts on the other hosts only (a step of the device "
                       "path across hosts)",
                       crossStep,
                       {.hostArenas = true}};
  }
  return all;
}

}  // namespace

const Algorithm& scopedAlgorithm(CollectiveKind kind, Scope scope) {
  static const Algorithm host{CollectiveKind::kBarrier,
                              "host",
                              "the host's ranks meet in its arena (a step of the device path "
                              "across hosts)",
                              hostBarrier,
                              {.hostArenas = true}};
  static const std::array<Algorithm, kKinds> cross = crossAlgorithms();
  const auto k = static_cast<size_t>(kind);
  if (scope == Scope::kCross && k < kKinds && kind != CollectiveKind::kControl) return cross[k];
  if (scope == Scope::kHost && kind == CollectiveKind::kBarrier) return host;
  throw Error(ErrorCode::kInvalidArgument,
              std::string("smddp: no algorithm for ") + toString(kind) + " scoped to " +
                  (scope == Scope::kHost ? "the host" : scope == Scope::kCross ? "the cross group"
                                                                               : "every rank"));
}

}  // namespace smddp::algo
