// SPDX-License-Identifier: Apache-2.0
// Peers' pids are watched only within our pid namespace (peer_liveness.h). Three ranks on this
// host over tcp;ofi_rxm; rank 1 runs in a pid namespace of its own (unshare(CLONE_NEWPID), as a
// container would), where its pid is 1: here, pid 1 is this host's init, alive for good, so
// watching it would keep a dead rank 1 "alive" (and another pid could be reported dead while
// rank 1 lives). Rank 0 must watch rank 2 (same namespace) and not rank 1. Needs CAP_SYS_ADMIN
// for the namespace: skipped without it.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mp/fork_ranks.h"
#include "mp/transport_helpers.h"
#include "transport/peer_liveness.h"

namespace smddp::test {
namespace {

int pidRank(const std::string& dir, int rank) {
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, rank, 3, "tcp");
  std::string failure;
  const auto& peers = t->peers();
  if (rank == 1 && peers[1].pid != 1) failure = "rank 1 is not pid 1 of its own namespace";
  transport::PeerLiveness liveness(peers, rank);
  if (rank == 0 && liveness.watches(1)) {
    failure = "rank 1 (pid " + std::to_string(peers[1].pid) + " of another pid namespace) is " +
              "watched: here that pid is another process";
  }
  if (rank == 0 && !liveness.watches(2)) failure = "rank 2, of this pid namespace, is not watched";
  if (rank == 1 && (liveness.watches(0) || liveness.watches(2))) {
    failure = "a rank of the parent pid namespace is watched from a child namespace";
  }
  storeBarrier(*store, "end", 3);
  return report(rank, failure);
}

// Rank 1 in a new pid namespace: the namespace applies to the children of the caller of
// unshare, so a child of it runs the rank (as pid 1) and its exit status is passed on.
int inNewPidNamespace(const std::string& dir, int rank) {
  if (::unshare(CLONE_NEWPID) != 0) return report(rank, "unshare(CLONE_NEWPID) failed");
  const pid_t child = ::fork();
  if (child == 0) {
    int code = kChildThrew;
    try {
      code = pidRank(dir, rank);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d threw: %s\n", rank, e.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) return kChildThrew;
  return WIFEXITED(status) ? WEXITSTATUS(status) : kChildThrew;
}

// Whether this process may make a pid namespace (asked in a child: unshare changes its caller).
bool mayUnsharePid() {
  return forkRanks(1, kWaitLimit, [](int) { return ::unshare(CLONE_NEWPID) == 0 ? 0 : 1; }).empty();
}

TEST(TransportPidNamespace, OnlyPeersOfThisPidNamespaceAreWatched) {
  if (!mayUnsharePid()) GTEST_SKIP() << "unshare(CLONE_NEWPID) is not permitted here";
  const std::string dir = makeTempDir("smddp-tp");
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(forkRanks(3, kRankLimit,
                      [&](int r) { return r == 1 ? inNewPidNamespace(dir, r) : pidRank(dir, r); }),
            "");
  removeTree(dir);
}

}  // namespace
}  // namespace smddp::test
